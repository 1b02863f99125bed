package openfga

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"regexp"

	fga "github.com/openfga/go-sdk"

	"github.com/ragcanary/ragcanary/internal/driver"
	httpdriver "github.com/ragcanary/ragcanary/internal/driver/http"
)

// Reasons for failures that carry no OpenFGA error code.
const (
	reasonTimeout    = "timeout"
	reasonCanceled   = "canceled"
	reasonConnection = "connection failed"
	reasonTooLarge   = "response too large"
	reasonBudget     = "reply budget exhausted"
	reasonMalformed  = "malformed response"
	reasonRedirect   = "redirect refused (redirects are never followed)"
	reasonNotSent    = "request not sent"
	reasonInvalidID  = "ID is not a valid OpenFGA object ID"
)

// apiError is what every SDK error for a received reply offers: the reply
// body, from which only the error code is taken.
type apiError interface{ Body() []byte }

// classify maps an SDK failure to a driver error. The reason names only
// the HTTP status (in the error's own field) and OpenFGA's error code:
// the SDK's error text quotes the request and reply bodies, which hold
// the tuple, and a transport error's text holds the URL.
func classify(op string, resp *http.Response, err error) error {
	if err == nil {
		return nil
	}
	var ae apiError
	if resp != nil && errors.As(err, &ae) {
		return statusError(op, resp.StatusCode, errorCode(ae.Body()), err)
	}
	return transportError(op, err)
}

// statusError classifies a reply by status: 401/403 mean the credential was
// refused; 5xx, 408, 429, 409 (OpenFGA's aborted concurrent write) and 422
// (OpenFGA's throttling, "resource exhausted") mean the server is failing or
// busy and may recover; every other 4xx means the request itself is wrong.
// A 2xx here is a reply the SDK could not decode.
func statusError(op string, status int, code string, cause error) error {
	reason := func(fallback string) string {
		if code == "" {
			return fallback
		}
		return "openfga " + code
	}
	switch {
	case status >= 200 && status < 300:
		return driver.NewError(driver.Transient, op, status, reasonMalformed, cause)
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return driver.NewError(driver.Unauthorized, op, status, reason("credential refused"), cause)
	case status >= 500, status == http.StatusRequestTimeout, status == http.StatusTooManyRequests,
		status == http.StatusConflict, status == http.StatusUnprocessableEntity:
		return driver.NewError(driver.Transient, op, status, reason("server error"), cause)
	case status >= 400:
		return driver.NewError(driver.Permanent, op, status, reason("request rejected"), cause)
	case status >= 300:
		return driver.NewError(driver.Permanent, op, status, reasonRedirect, cause)
	default:
		return driver.NewError(driver.Transient, op, status, "unexpected status", cause)
	}
}

// transportError classifies a failure without a reply: the connection, the
// deadline, the reply size limit, or a request the SDK refused to build.
func transportError(op string, err error) error {
	var netErr net.Error
	var urlErr *url.Error
	switch {
	case errors.Is(err, httpdriver.ErrTooLarge):
		return driver.NewError(driver.Transient, op, 0, reasonTooLarge, err)
	case errors.Is(err, httpdriver.ErrBudgetExhausted):
		return driver.NewError(driver.Transient, op, 0, reasonBudget, err)
	case errors.Is(err, context.Canceled):
		return driver.NewError(driver.Transient, op, 0, reasonCanceled, err)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return driver.NewError(driver.Transient, op, 0, reasonTimeout, err)
	case errors.As(err, &urlErr):
		return driver.NewError(driver.Transient, op, 0, reasonConnection, err)
	default:
		return driver.NewError(driver.Permanent, op, 0, reasonNotSent, err)
	}
}

// errorCodeShape is what an OpenFGA error code looks like; anything else
// in the code field is dropped rather than echoed.
var errorCodeShape = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,63}$`)

// errorCode is the code field of an OpenFGA error reply, or "".
func errorCode(body []byte) string {
	var reply struct {
		Code string `json:"code"`
	}
	if json.Unmarshal(body, &reply) != nil || !errorCodeShape.MatchString(reply.Code) {
		return ""
	}
	return reply.Code
}

// hasCode reports whether err is an OpenFGA reply with status and code.
func hasCode(resp *http.Response, err error, status int, code fga.ErrorCode) bool {
	var ae apiError
	return err != nil && resp != nil && resp.StatusCode == status && errors.As(err, &ae) &&
		errorCode(ae.Body()) == string(code)
}
