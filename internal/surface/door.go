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
	"errors"
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

// errTooLarge is returned by a reply body read past MaxReplyBytes.
var errTooLarge = errors.New("reply body exceeds limit")

// errBudgetExhausted is returned by a reply body read when the reply budget
// shared with other calls has no room for the bytes just read.
var errBudgetExhausted = errors.New("reply budget exhausted")

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
	if resp.ContentLength > l.maxBytes {
		_ = resp.Body.Close()
		return errTooLarge
	}
	resp.Body = &limitedBody{body: resp.Body, remaining: l.maxBytes, budget: l.budget}
	return nil
}

// limitedBody fails with errTooLarge once more than the limit has been read,
// and with errBudgetExhausted when the budget has no room for what it read.
// Bytes count as they arrive, so an empty reply costs nothing. It is read
// and closed by one goroutine, the call's own.
type limitedBody struct {
	body      io.ReadCloser
	remaining int64
	budget    httpdriver.ReplyBudget
	// held is what this body has reserved from budget.
	held int64
	// closed stops a read after Close from reserving what nobody releases.
	closed bool
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	if b.remaining < 0 {
		return 0, errTooLarge
	}
	// Read one byte past the limit so a body of exactly the limit is not
	// mistaken for an oversized one.
	if int64(len(p)) > b.remaining+1 {
		p = p[:b.remaining+1]
	}
	n, err := b.body.Read(p)
	b.remaining -= int64(n)
	if b.remaining < 0 {
		return 0, errTooLarge
	}
	if !b.hold(int64(n)) {
		return 0, errBudgetExhausted
	}
	return n, err
}

func (b *limitedBody) hold(n int64) bool {
	if b.budget == nil || n == 0 {
		return true
	}
	if !b.budget.TryAcquire(n) {
		return false
	}
	b.held += n
	return true
}

// Close releases what the body reserved: its bytes are decoded or dropped
// by the time a caller closes it.
func (b *limitedBody) Close() error {
	if b.held > 0 {
		b.budget.Release(b.held)
	}
	b.held, b.closed = 0, true
	return b.body.Close()
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
