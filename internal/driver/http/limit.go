package httpdriver

import (
	"errors"
	"io"
	"net/http"
)

// errTooLarge is returned by a response body read past the configured limit.
var errTooLarge = errors.New("response body exceeds limit")

// limitedDoer wraps every response body so that reading more than limit bytes
// fails instead of buffering an unbounded reply from a misbehaving target.
type limitedDoer struct {
	doer  *http.Client
	limit int64
}

func (l *limitedDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := l.doer.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > l.limit {
		_ = resp.Body.Close()
		return nil, errTooLarge
	}
	resp.Body = &limitedBody{body: resp.Body, remaining: l.limit}
	return resp, nil
}

// limitedBody fails with errTooLarge once more than the limit has been read.
type limitedBody struct {
	body      io.ReadCloser
	remaining int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
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
	return n, err
}

func (b *limitedBody) Close() error { return b.body.Close() }
