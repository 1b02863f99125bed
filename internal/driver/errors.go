package driver

import (
	"errors"
	"fmt"
)

// Kind classifies a driver failure by what the caller should conclude from it.
type Kind int

const (
	// Transient means the target failed or could not be reached (5xx, timeout,
	// connection error, unparseable reply). Retrying may help, and the call says
	// nothing about what the persona can see.
	Transient Kind = iota + 1
	// Permanent means the target rejected the request itself (bad input, missing
	// document, unsupported operation). Retrying the same call will not help.
	Permanent
	// Unauthorized means the credential was refused: a persona denied access, or
	// a source credential that is wrong. It is an answer about auth, not an outage.
	Unauthorized
)

// String returns the kind's name.
func (k Kind) String() string {
	switch k {
	case Transient:
		return "transient"
	case Permanent:
		return "permanent"
	case Unauthorized:
		return "unauthorized"
	default:
		return "unknown"
	}
}

// Error is a classified driver failure. Its text holds only the operation,
// kind, status code and a fixed reason chosen by the driver: never credentials
// and never response bodies, so it is safe for conditions, events and logs.
type Error struct {
	Kind Kind
	// Op is the driver operation, e.g. "Search" or "CreateDocument".
	Op string
	// StatusCode is the protocol status when there was one, else 0.
	StatusCode int
	// Reason is a short constant description such as "timeout" or "malformed response".
	Reason string
	// Err is the underlying cause, kept for errors.Is/As only; it is not part of
	// Error() because its text may be unsanitized.
	Err error
}

// Error returns the sanitized description.
func (e *Error) Error() string {
	msg := fmt.Sprintf("driver %s: %s", e.Op, e.Kind)
	if e.StatusCode != 0 {
		msg += fmt.Sprintf(" (status %d)", e.StatusCode)
	}
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// Unwrap exposes the cause to errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Err }

// NewError builds a classified error. cause may be nil.
func NewError(kind Kind, op string, statusCode int, reason string, cause error) *Error {
	return &Error{Kind: kind, Op: op, StatusCode: statusCode, Reason: reason, Err: cause}
}

// KindOf returns the kind of the first *Error in err's chain, or 0 and false
// when err is not a classified driver error.
func KindOf(err error) (Kind, bool) {
	var de *Error
	if errors.As(err, &de) {
		return de.Kind, true
	}
	return 0, false
}

// IsTransient reports whether err is a classified transient failure.
func IsTransient(err error) bool { return isKind(err, Transient) }

// IsPermanent reports whether err is a classified permanent failure.
func IsPermanent(err error) bool { return isKind(err, Permanent) }

// IsUnauthorized reports whether err is a refused credential.
func IsUnauthorized(err error) bool { return isKind(err, Unauthorized) }

func isKind(err error, k Kind) bool {
	got, ok := KindOf(err)
	return ok && got == k
}
