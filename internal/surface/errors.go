package surface

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/ragcanary/ragcanary/internal/driver"
	httpdriver "github.com/ragcanary/ragcanary/internal/driver/http"
	"github.com/ragcanary/ragcanary/internal/safetext"
)

// Reasons are constant strings, or a constant with a configured field's
// name (a JSON pointer, cleaned): never text from the reply, which a target
// controls and may fill with anything, the credential it was sent included.
const (
	reasonTimeout      = "timeout"
	reasonCanceled     = "canceled"
	reasonConnection   = "connection failed"
	reasonMalformed    = "malformed reply"
	reasonTooLarge     = "reply too large"
	reasonBudget       = "reply budget exhausted"
	reasonStreamError  = "the stream carried an error event"
	reasonUnfinished   = "the stream ended before a finish reason (cut short)"
	reasonNoChoices    = "the reply has no choices"
	reasonBadCitation  = "a citation is empty, too long or not printable"
	reasonBadID        = "empty, too long or not printable"
	reasonCredential   = "the persona credential is not a valid header value"
	reasonLeak         = "the persona credential would appear outside its header (in the URL, query or body); refused"
	reasonConvNotFound = "conversation not found (unknown, evicted, or another persona's)"
	reasonConvBusy     = "another turn of this conversation is in flight"
	reasonConvFull     = "conversation turn limit reached"
)

// maxLabel bounds a configured name quoted in a reason.
const maxLabel = 200

// configError is a refused configuration, naming the field.
func configError(field, msg string) error {
	return fmt.Errorf("surface: %s: %s", field, msg)
}

// statusErr carries a non-2xx status from the door to the operation that
// names it; the body is never read.
type statusErr struct{ code int }

func (e statusErr) Error() string { return "status " + strconv.Itoa(e.code) }

// statusError classifies a status as the contract driver does.
func statusError(op string, status int) error { return httpdriver.StatusError(op, status) }

// classify turns any failure of a call into a classified driver error. The
// cause is kept for errors.Is only: its text may hold the URL or the reply.
func classify(op string, err error) error {
	var (
		de     *driver.Error
		se     statusErr
		urlErr *url.Error
		netErr net.Error
	)
	switch {
	case errors.As(err, &de):
		return de
	case errors.As(err, &se):
		return statusError(op, se.code)
	case errors.Is(err, errTooLarge):
		return driver.NewError(driver.Transient, op, 0, reasonTooLarge, err)
	case errors.Is(err, errBudgetExhausted):
		return driver.NewError(driver.Transient, op, 0, reasonBudget, err)
	case errors.Is(err, context.Canceled):
		return driver.NewError(driver.Transient, op, 0, reasonCanceled, err)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return driver.NewError(driver.Transient, op, 0, reasonTimeout, err)
	case errors.As(err, &urlErr), errors.As(err, &netErr):
		return driver.NewError(driver.Transient, op, 0, reasonConnection, err)
	default:
		return driver.NewError(driver.Transient, op, 0, reasonMalformed, err)
	}
}

// malformed is a 2xx reply that could not be understood: transient, like
// the contract driver's, because it says nothing about what the persona
// can see, and never an empty result.
func malformed(op string, status int, detail string) error {
	reason := reasonMalformed
	if detail != "" {
		reason += ": " + detail
	}
	return driver.NewError(driver.Transient, op, status, reason, nil)
}

// label quotes a configured name (a pointer) for a reason, cleaned: it came
// from a spec, and a reason ends up in conditions and terminals.
func label(s string) string {
	if s == "" {
		return `""`
	}
	return safetext.Clean(s, maxLabel)
}

// redact removes the credential from a classified error's reason. Reasons
// never hold reply text, so this is a second lock: a configured pointer that
// someone filled with the token still does not carry it into a condition.
func redact(err error, persona driver.Token) error {
	var de *driver.Error
	if err == nil || persona == "" || !errors.As(err, &de) {
		return err
	}
	de.Reason = strings.ReplaceAll(de.Reason, persona.Reveal(), persona.String())
	return err
}

// minLeakCheck is the shortest credential searched for outside its header:
// a shorter one would match ordinary query text by chance and refuse probes
// for nothing.
const minLeakCheck = 8

// leaks reports whether the credential appears in any of parts. No
// configured field can refer to the credential, so this catches only a
// token also written into the config by hand, or a probe query that
// carries it.
func leaks(persona driver.Token, parts ...string) bool {
	tok := persona.Reveal()
	if len(tok) < minLeakCheck {
		return false
	}
	for _, p := range parts {
		if strings.Contains(p, tok) {
			return true
		}
	}
	return false
}
