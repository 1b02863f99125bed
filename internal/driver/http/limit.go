package httpdriver

import (
	"errors"
	"io"
	"net/http"
)

// ErrTooLarge is returned by a response body read past the configured limit.
var ErrTooLarge = errors.New("response body exceeds limit")

// ErrBudgetExhausted is returned by a response body read when the reply
// budget it shares with other calls has no room for the bytes just read.
var ErrBudgetExhausted = errors.New("reply budget exhausted")

// The package's own names for them.
var (
	errTooLarge        = ErrTooLarge
	errBudgetExhausted = ErrBudgetExhausted
)

// ReplyBudget bounds the reply bytes held at once by every call drawing on
// it, so that many slow replies of one target cannot each hold the full
// response limit at the same time. It is safe for concurrent use.
type ReplyBudget interface {
	// TryAcquire reserves n bytes if they fit and reports whether they
	// did; it never waits.
	TryAcquire(n int64) bool
	// Release returns n bytes reserved earlier.
	Release(n int64)
}

// limitedDoer wraps every response body so that reading more than limit bytes
// fails instead of buffering an unbounded reply from a misbehaving target,
// and so that the bytes read count against budget until the body is closed.
type limitedDoer struct {
	doer   *http.Client
	limit  int64
	budget ReplyBudget
}

func (l *limitedDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := l.doer.Do(req)
	if err != nil {
		return nil, err
	}
	if err := BoundBody(resp, l.limit, l.budget); err != nil {
		return nil, err
	}
	return resp, nil
}

// BoundBody makes resp's body fail with ErrTooLarge past limit bytes and
// with ErrBudgetExhausted when budget (nil: none) has no room for what it
// read; a declared length over the limit fails before anything is read.
// Every client of a target's replies bounds them through it.
func BoundBody(resp *http.Response, limit int64, budget ReplyBudget) error {
	if resp.ContentLength > limit {
		_ = resp.Body.Close()
		return ErrTooLarge
	}
	resp.Body = &limitedBody{body: resp.Body, remaining: limit, budget: budget}
	return nil
}

// limitedBody fails with errTooLarge once more than the limit has been read,
// and with errBudgetExhausted when the budget has no room for what it read.
// Bytes are counted as they arrive, so an empty reply costs nothing. It is
// read and closed by one goroutine, the call's own.
type limitedBody struct {
	body      io.ReadCloser
	remaining int64
	budget    ReplyBudget
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
	// Read one byte beyond the limit so an exactly-full body is not mistaken
	// for an oversized one.
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

// hold reserves n bytes just read from the budget, if there is one.
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
