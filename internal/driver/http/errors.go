package httpdriver

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"

	"github.com/ragcanary/ragcanary/internal/driver"
)

// Reasons are constant strings: the only free text a driver error carries.
const (
	reasonTimeout       = "timeout"
	reasonCanceled      = "canceled"
	reasonConnection    = "connection failed"
	reasonServer        = "server error"
	reasonRateLimited   = "rate limited"
	reasonRefused       = "credential refused"
	reasonRejected      = "request rejected"
	reasonNotFound      = "not found"
	reasonMalformed     = "malformed response"
	reasonTooLarge      = "response too large"
	reasonBudget        = "reply budget exhausted"
	reasonUnexpected    = "unexpected status"
	reasonBodyReadFail  = "reading response failed"
	reasonRedirect      = "redirect refused (redirects are never followed)"
	reasonUnknownStatus = "answer declared a status or reason outside the contract"
)

// checkResponse classifies a transport error or a non-2xx status. On any
// error it closes the body without reading it: response bodies never reach
// error text, so there is nothing to gain from them.
func checkResponse(op string, resp *http.Response, err error) error {
	if err != nil {
		return transportError(op, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	_ = resp.Body.Close()
	return statusError(op, resp.StatusCode)
}

// statusError is StatusError.
func statusError(op string, status int) error { return StatusError(op, status) }

// StatusError maps an HTTP status to an error kind: 401/403 mean the
// credential was refused; 5xx, 408 and 429 mean the target is failing or busy
// and may recover; every other 4xx means the request itself is wrong; a 3xx
// is a target that wants us elsewhere, which is never an answer. Every client
// of a target (the contract driver, the surfaces) classifies statuses here.
func StatusError(op string, status int) error {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return driver.NewError(driver.Unauthorized, op, status, reasonRefused, nil)
	case status >= 500:
		return driver.NewError(driver.Transient, op, status, reasonServer, nil)
	case status == http.StatusRequestTimeout:
		return driver.NewError(driver.Transient, op, status, reasonTimeout, nil)
	case status == http.StatusTooManyRequests:
		return driver.NewError(driver.Transient, op, status, reasonRateLimited, nil)
	case status == http.StatusNotFound:
		return driver.NewError(driver.Permanent, op, status, reasonNotFound, nil)
	case status >= 400:
		return driver.NewError(driver.Permanent, op, status, reasonRejected, nil)
	case status >= 300:
		// The client never follows redirects (see withoutRedirects): a 3xx
		// is a target that wants us elsewhere, which is never an answer.
		return driver.NewError(driver.Permanent, op, status, reasonRedirect, nil)
	default:
		return driver.NewError(driver.Transient, op, status, reasonUnexpected, nil)
	}
}

// transportError classifies a failure before a status was received. The
// cause is kept for errors.Is but never printed: url.Error text holds the URL.
func transportError(op string, err error) error {
	var netErr net.Error
	switch {
	case errors.Is(err, errTooLarge):
		return driver.NewError(driver.Transient, op, 0, reasonTooLarge, err)
	case errors.Is(err, context.Canceled):
		return driver.NewError(driver.Transient, op, 0, reasonCanceled, err)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return driver.NewError(driver.Transient, op, 0, reasonTimeout, err)
	default:
		return driver.NewError(driver.Transient, op, 0, reasonConnection, err)
	}
}

// malformed classifies a 2xx reply that could not be understood. A body cut
// short by the size limit, the reply budget or the deadline is reported as
// such, not as bad JSON.
func malformed(op string, status int, cause error) error {
	var netErr net.Error
	switch {
	case errors.Is(cause, errTooLarge):
		return driver.NewError(driver.Transient, op, status, reasonTooLarge, cause)
	case errors.Is(cause, errBudgetExhausted):
		return driver.NewError(driver.Transient, op, status, reasonBudget, cause)
	case errors.Is(cause, context.DeadlineExceeded), errors.As(cause, &netErr) && netErr.Timeout():
		return driver.NewError(driver.Transient, op, status, reasonTimeout, cause)
	default:
		return driver.NewError(driver.Transient, op, status, reasonMalformed, cause)
	}
}

// drain reads and closes a bodiless success reply so the connection can be
// reused; an oversized or interrupted body is still a failure.
func drain(op string, resp *http.Response) error {
	defer func() { _ = resp.Body.Close() }()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		switch {
		case errors.Is(err, errTooLarge):
			return driver.NewError(driver.Transient, op, resp.StatusCode, reasonTooLarge, err)
		case errors.Is(err, errBudgetExhausted):
			return driver.NewError(driver.Transient, op, resp.StatusCode, reasonBudget, err)
		}
		return driver.NewError(driver.Transient, op, resp.StatusCode, reasonBodyReadFail, err)
	}
	return nil
}
