// Package surface probes an assistant through the API it already exposes,
// instead of through the driver contract: Search reads any JSON search API
// as a driver.Searcher, and Chat reads an OpenAI-compatible chat-completions
// API as a driver.Answerer and driver.Conversations.
//
// Both keep the door's discipline themselves, whatever client the caller
// hands them: they never follow a redirect, bound every reply's size (and,
// with a ReplyBudget, the bytes held at once) and time, and send the
// persona's credential only in its header to the configured URL.
package surface

import (
	"io"
	"net/http"
	"net/url"
	"time"

	httpdriver "github.com/ragcanary/ragcanary/internal/driver/http"
)

// Defaults applied when a Config field is zero.
const (
	DefaultTimeout       = 10 * time.Second
	DefaultMaxReplyBytes = 1 << 20
)

// The reply bounds are the HTTP driver's (httpdriver.BoundBody).
var (
	errTooLarge        = httpdriver.ErrTooLarge
	errBudgetExhausted = httpdriver.ErrBudgetExhausted
)

// withoutRedirects copies c so that it never follows a redirect, even when
// the caller's client would: following one would carry the persona's
// credential to a URL nobody allowed, and whatever answers there could read
// as an absence. A 3xx then arrives as a status, which is an error.
func withoutRedirects(c *http.Client) *http.Client {
	out := *c
	out.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &out
}

// validURL accepts an absolute http(s) URL with a host and nothing a
// credential or a second target could hide in. The allowlist decides which
// hosts are allowed; this only refuses shapes no surface URL should have.
// The URL is not echoed: a rejected one may carry userinfo.
func validURL(field, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, configError(field, "not a valid URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, configError(field, "must be an absolute http or https URL")
	case u.User != nil:
		return nil, configError(field, "must not embed credentials (user:password@)")
	case u.Opaque != "" || u.Host == "":
		return nil, configError(field, "must be an absolute URL with a host")
	case u.RawQuery != "" || u.ForceQuery:
		return nil, configError(field, "must not have a query (the door's allowlist refuses one)")
	case u.Fragment != "":
		return nil, configError(field, "must not have a fragment")
	}
	return u, nil
}

// limits bounds the reply of one call.
type limits struct {
	maxBytes int64
	budget   httpdriver.ReplyBudget
}

// wrap bounds resp's body; a declared length over the limit fails before
// anything is read.
func (l limits) wrap(resp *http.Response) error {
	return httpdriver.BoundBody(resp, l.maxBytes, l.budget)
}

// readAll reads a bounded body and closes it.
func readAll(body io.ReadCloser) ([]byte, error) {
	defer func() { _ = body.Close() }()
	return io.ReadAll(body)
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
