package openfga_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/openfga"
)

// An httptest stand-in for OpenFGA's HTTP API, for what a real server will
// not do on demand: fail, throttle, hang, redirect, answer garbage.

const (
	fakeStore = "01J0000000000000000000000A"
	fakeModel = "01J0000000000000000000000B"
	// fakeToken is the bearer token; tests assert it never reaches an error.
	fakeToken = "tok-3f9a1c-never-in-errors"
)

type request struct {
	Method, Path, Auth string
	Body               map[string]any
}

type fake struct {
	*httptest.Server
	requests atomic.Int64
	mu       sync.Mutex
	seen     []request
}

// newFake serves handler; every request is counted and recorded first.
func newFake(t *testing.T, handler http.HandlerFunc) *fake {
	t.Helper()
	f := &fake{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.requests.Add(1)
		raw, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(raw))
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		f.mu.Lock()
		f.seen = append(f.seen, request{Method: r.Method, Path: r.URL.Path, Auth: r.Header.Get("Authorization"), Body: body})
		f.mu.Unlock()
		handler(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fake) requestsSeen() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.seen...)
}

// reply writes a JSON body with status.
func reply(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// dialFake dials f with the fake store and token; edit adjusts the config.
func dialFake(t *testing.T, f *fake, edit func(*openfga.Config)) *openfga.Client {
	t.Helper()
	cfg := openfga.Config{APIURL: f.URL, StoreID: fakeStore, Token: fakeToken, Timeout: 5 * time.Second}
	if edit != nil {
		edit(&cfg)
	}
	c, err := openfga.Dial(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
