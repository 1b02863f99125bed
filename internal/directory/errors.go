package directory

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/go-ldap/ldap/v3"
)

// Kind classifies a directory failure by what the caller should conclude.
type Kind int

const (
	// Transient means the directory could not be reached, was busy or did
	// not answer in time. Retrying may help.
	Transient Kind = iota + 1
	// Permanent means the directory refused the request itself (a bad DN,
	// a constraint, a referral, a reply over the bounds). Retrying the same
	// call will not help.
	Permanent
	// NotFound means the group or the subject's entry does not exist.
	NotFound
	// Unauthorized means the bind credential was refused or lacks the
	// access the operation needs.
	Unauthorized
)

// String returns the kind's name.
func (k Kind) String() string {
	switch k {
	case Transient:
		return "transient"
	case Permanent:
		return "permanent"
	case NotFound:
		return "not found"
	case Unauthorized:
		return "unauthorized"
	default:
		return "unknown"
	}
}

// Error is a classified directory failure. Its text holds the operation,
// the kind, the LDAP result code and a reason chosen here, never text the
// server sent: once the bind is sent the server knows the password and
// could echo it in a diagnostic message, a referral or a matched DN.
type Error struct {
	Kind Kind
	// Op is the operation, e.g. "bind" or "add member".
	Op string
	// Code is the LDAP result code when the server sent one, else 0.
	Code uint16
	// Reason is a short description such as "timeout" or "referral refused".
	Reason string
	// Err is the cause, kept for errors.Is/As only (a context, network or
	// dial-policy error): never an error carrying the server's text.
	Err error
}

// Error returns the sanitized description.
func (e *Error) Error() string {
	msg := "ldap " + e.Op + ": " + e.Kind.String()
	if e.Code != 0 {
		msg += fmt.Sprintf(" (result %d %s)", e.Code, ldap.LDAPResultCodeMap[e.Code])
	}
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// Unwrap exposes the cause to errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Err }

func newError(kind Kind, op string, code uint16, reason string, cause error) *Error {
	return &Error{Kind: kind, Op: op, Code: code, Reason: reason, Err: cause}
}

// KindOf returns the kind of the first *Error in err's chain.
func KindOf(err error) (Kind, bool) {
	var de *Error
	if errors.As(err, &de) {
		return de.Kind, true
	}
	return 0, false
}

// IsTransient reports whether retrying may help: the connection failed,
// timed out, or the server was busy or unavailable.
func IsTransient(err error) bool { return isKind(err, Transient) }

// IsNotFound reports whether the group or the subject's entry is missing.
func IsNotFound(err error) bool { return isKind(err, NotFound) }

// IsUnauthorized reports whether the credential was refused or lacks access.
func IsUnauthorized(err error) bool { return isKind(err, Unauthorized) }

// IsPermanent reports whether retrying the same call cannot help: every
// classified failure that is not transient (not found and unauthorized
// included).
func IsPermanent(err error) bool {
	k, ok := KindOf(err)
	return ok && k != Transient
}

func isKind(err error, k Kind) bool {
	got, ok := KindOf(err)
	return ok && got == k
}

// Reasons for failures that carry no LDAP result code, or whose code alone
// says too little.
const (
	reasonTimeout     = "timeout"
	reasonCanceled    = "canceled"
	reasonConnection  = "connection failed"
	reasonMalformed   = "malformed reply"
	reasonReferral    = "referral refused (referrals are never followed)"
	reasonTooMany     = "more entries than the search allows"
	reasonClosed      = "directory closed"
	reasonAmbiguous   = "subject matches more than one entry"
	reasonNoSubject   = "subject not found"
	reasonNoGroup     = "group not found"
	reasonRanged      = "group members returned in ranges, which this client does not read"
	reasonTooManyVals = "group has more member values than allowed"
)

// resultKinds maps LDAP result codes to kinds; codes not listed are
// Permanent. Busy, unavailable and the server's own limits may clear.
var resultKinds = map[uint16]Kind{
	ldap.LDAPResultTimeLimitExceeded:           Transient,
	ldap.LDAPResultAdminLimitExceeded:          Transient,
	ldap.LDAPResultBusy:                        Transient,
	ldap.LDAPResultUnavailable:                 Transient,
	ldap.LDAPResultLoopDetect:                  Transient,
	ldap.LDAPResultServerDown:                  Transient,
	ldap.LDAPResultTimeout:                     Transient,
	ldap.LDAPResultConnectError:                Transient,
	ldap.ErrorNetwork:                          Transient,
	ldap.LDAPResultNoSuchObject:                NotFound,
	ldap.LDAPResultInvalidCredentials:          Unauthorized,
	ldap.LDAPResultInappropriateAuthentication: Unauthorized,
	ldap.LDAPResultInsufficientAccessRights:    Unauthorized,
	ldap.LDAPResultStrongAuthRequired:          Unauthorized,
	ldap.LDAPResultConfidentialityRequired:     Unauthorized,
}

// failure explains why an operation on an open connection failed, in this
// order: the reply guard tripped, the deadline passed or the caller
// canceled, the server answered with a result code, the connection broke.
func failure(ctx context.Context, op string, guard *guardConn, err error) *Error {
	var de *Error
	if errors.As(err, &de) {
		if de.Op == "" {
			de.Op = op
		}
		return de
	}
	if gerr := guard.tripped(); gerr != nil {
		return newError(Permanent, op, 0, gerr.Error(), nil)
	}
	if cerr := ctx.Err(); cerr != nil {
		return contextError(op, cerr)
	}
	if expired(ctx) {
		// go-ldap's request timer and the connection's deadline fire at
		// the context's deadline, sometimes before the context notices.
		return contextError(op, context.DeadlineExceeded)
	}
	if errors.Is(err, ldap.ErrSizeLimitExceeded) {
		return newError(Permanent, op, 0, reasonTooMany, nil)
	}
	var le *ldap.Error
	if !errors.As(err, &le) {
		// go-ldap's own decoding errors are plain errors.
		return newError(Transient, op, 0, reasonMalformed, nil)
	}
	return resultError(op, le)
}

// resultError classifies an error go-ldap built, from its code alone.
func resultError(op string, le *ldap.Error) *Error {
	switch {
	case le.ResultCode == ldap.ErrorNetwork:
		return newError(Transient, op, 0, reasonConnection, netCause(le))
	case le.ResultCode == ldap.LDAPResultReferral:
		return newError(Permanent, op, le.ResultCode, reasonReferral, nil)
	case le.ResultCode == ldap.LDAPResultSizeLimitExceeded:
		return newError(Permanent, op, le.ResultCode, reasonTooMany, nil)
	case le.ResultCode >= ldap.ErrorNetwork:
		// Client-side codes (unexpected message, filter compile): the reply
		// or our request did not make sense.
		return newError(Transient, op, 0, reasonMalformed, nil)
	}
	kind, ok := resultKinds[le.ResultCode]
	if !ok {
		kind = Permanent
	}
	return newError(kind, op, le.ResultCode, "", nil)
}

// netCause keeps a network error's identity (for errors.Is on timeouts)
// but never go-ldap's wrapper, whose text may hold what the server sent.
func netCause(err error) error {
	var ne net.Error
	if errors.As(err, &ne) {
		return ne
	}
	return nil
}

func expired(ctx context.Context) bool {
	deadline, ok := ctx.Deadline()
	return ok && !time.Now().Before(deadline)
}

func contextError(op string, cerr error) *Error {
	if errors.Is(cerr, context.Canceled) {
		return newError(Transient, op, 0, reasonCanceled, cerr)
	}
	return newError(Transient, op, 0, reasonTimeout, cerr)
}
