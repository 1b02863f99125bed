package target

import (
	"errors"
	"fmt"
	"time"

	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/safetext"
)

// Intent says what the caller of the door should do about a failure. It
// replaces the per-package problem types (Secret problems, refused
// configuration, suite target errors, run waits): every part of ragcanary
// maps an Intent to a condition and a requeue in one place.
type Intent int

const (
	// Transient: the API server or the target failed in a way that may pass.
	// Retry with backoff; nothing was learned about the spec or the target.
	Transient Intent = iota
	// Stalled: the user must fix something (a missing or unlabelled Secret, a
	// URL outside the allowlist, an unsupported driver). Report it as a
	// condition with Reason and wait for a change; retrying cannot help.
	Stalled
	// Waiting: a referenced object does not exist yet (objects are applied in
	// any order). Report it and look again after a while.
	Waiting
)

// String names the intent for logs.
func (i Intent) String() string {
	switch i {
	case Stalled:
		return "stalled"
	case Waiting:
		return "waiting"
	default:
		return "transient"
	}
}

// MaxMessage bounds a problem's message in runes, well inside a
// condition's 32 KiB.
const MaxMessage = 1024

// Problem is the door's one error type. Message is safe for conditions,
// events and logs: it names objects, keys, labels and URL hosts, never a
// credential or a reply body. Parts of it can still come from a target or
// a tenant's spec (a name, a host, a driver's classified reason), so every
// constructor and accessor here passes it through safetext.Clean: no
// control or bidi character and at most MaxMessage runes reach a reader.
type Problem struct {
	Intent Intent
	// Reason is a CamelCase condition reason.
	Reason string
	// Message tells a person what happened and what to fix.
	Message string
	// Err is the cause, for errors.Is/As; its text is never shown.
	Err error
	// RequeueAfter is, for a Waiting problem that knows it, when to look
	// again (a standby replaying what the operator just wrote); 0 leaves it
	// to the caller's policy.
	RequeueAfter time.Duration
}

func (p *Problem) Error() string { return cleanMessage(p.Message) }

func cleanMessage(s string) string { return safetext.Clean(s, MaxMessage) }

// cleaned returns p, or a copy whose Message is cleaned when a literal
// built outside these constructors carried unsafe text.
func (p *Problem) cleaned() *Problem {
	if m := cleanMessage(p.Message); m != p.Message {
		out := *p
		out.Message = m
		return &out
	}
	return p
}

// Unwrap exposes the cause.
func (p *Problem) Unwrap() error { return p.Err }

// Stall is a problem the user must fix.
func Stall(reason, format string, args ...any) *Problem {
	return &Problem{Intent: Stalled, Reason: reason, Message: cleanMessage(fmt.Sprintf(format, args...))}
}

// Wait is a reference that does not exist yet.
func Wait(reason, format string, args ...any) *Problem {
	return &Problem{Intent: Waiting, Reason: reason, Message: cleanMessage(fmt.Sprintf(format, args...))}
}

// AsProblem returns the *Problem in err's chain. Any other error is
// Transient; a classified driver error keeps its sanitized text, anything
// else gets a generic message so unsanitized text never reaches a condition.
func AsProblem(err error) *Problem {
	if err == nil {
		return nil
	}
	var p *Problem
	if errors.As(err, &p) {
		return p.cleaned()
	}
	var de *driver.Error
	if errors.As(err, &de) {
		return &Problem{Intent: Transient, Reason: "TargetError", Message: cleanMessage(de.Error()), Err: err}
	}
	// Not a target call: an API server error, which names objects only.
	return &Problem{Intent: Transient, Reason: "Transient", Message: cleanMessage(err.Error()), Err: err}
}

// Named prefixes the message with the object a problem is about, keeping
// its intent and reason.
func Named(kind, name string, err error) error {
	p := AsProblem(err)
	if p == nil {
		return nil
	}
	out := *p
	out.Message = cleanMessage(fmt.Sprintf("%s %q: %s", kind, name, p.Message))
	out.Err = err
	return &out
}

// IsUserProblem reports whether err asks the user to act (Stalled or Waiting).
func IsUserProblem(err error) (*Problem, bool) {
	var p *Problem
	if errors.As(err, &p) && p.Intent != Transient {
		return p.cleaned(), true
	}
	return nil, false
}
