package postgres

import (
	"context"
	"errors"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/safetext"
)

// classify turns a pgx failure into a *driver.Error whose text holds the
// operation, the kind and the SQLSTATE only. A pgx error's own text may name
// the host, the user, a value from the statement, or (for a connection
// string that did not parse) the connection string itself: it is kept as the
// cause for errors.As and never shown.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var de *driver.Error
	if errors.As(err, &de) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		code := safetext.SQLState(pgErr.Code)
		kind, reason := classifyCode(code)
		return driver.NewError(kind, op, 0, reason+" (SQLSTATE "+code+")", err)
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return driver.NewError(driver.Transient, op, 0, "timeout", err)
	case errors.Is(err, context.Canceled):
		return driver.NewError(driver.Transient, op, 0, "canceled", err)
	}
	var tooBig *pgproto3.ExceededMaxBodyLenErr
	if errors.As(err, &tooBig) {
		return driver.NewError(driver.Transient, op, 0, "server message too large", err)
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return driver.NewError(driver.Transient, op, 0, "connection failed", err)
	}
	var ne net.Error
	if errors.As(err, &ne) || pgconn.SafeToRetry(err) {
		return driver.NewError(driver.Transient, op, 0, "connection lost", err)
	}
	return driver.NewError(driver.Transient, op, 0, "query failed", err)
}

// classifyCode maps a SQLSTATE (validated by safetext.SQLState: a
// malformed one is a server error) to what the caller should conclude.
// https://www.postgresql.org/docs/current/errcodes-appendix.html
func classifyCode(code string) (driver.Kind, string) {
	switch {
	case strings.HasPrefix(code, "28"):
		return driver.Unauthorized, "credential refused"
	case code == "42501":
		// A role without the privilege the statement needs: a credential
		// problem the operator admin fixes with a GRANT, not an outage.
		return driver.Unauthorized, "insufficient privilege"
	case strings.HasPrefix(code, "42"):
		return driver.Permanent, "statement refused"
	case strings.HasPrefix(code, "23"):
		return driver.Permanent, "constraint violated"
	case strings.HasPrefix(code, "22"):
		return driver.Permanent, "invalid data"
	case code == "25006":
		// The writer DSN names a read-only server, e.g. a standby.
		return driver.Permanent, "server is read-only"
	case strings.HasPrefix(code, "08"), strings.HasPrefix(code, "57"), strings.HasPrefix(code, "53"),
		code == "40001", code == "40P01", code == "55P03":
		return driver.Transient, "server unavailable or busy"
	default:
		return driver.Transient, "server error"
	}
}
