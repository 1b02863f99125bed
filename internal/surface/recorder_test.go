package surface

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/ragcanary/ragcanary/internal/driver"
)

// persona is long and plain, so it reads the same raw, URL-encoded and
// JSON-escaped, and a search for it cannot miss an encoded copy.
const persona driver.Token = "persona-secret-7f3a9c41"

// recorded is everything one request carried.
type recorded struct {
	method string
	// uri is the request target as sent: path and raw query.
	uri    string
	header http.Header
	body   []byte
}

// recorder is a test server that keeps every request before handing it to
// its handler (which sees the body again).
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

func newRecorder(t *testing.T, handler http.HandlerFunc) *recorder {
	t.Helper()
	rec := &recorder{}
	rec.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, recorded{method: r.Method, uri: r.RequestURI, header: r.Header.Clone(), body: body})
		rec.mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		handler(w, r)
	}))
	t.Cleanup(rec.Close)
	return rec
}

func (r *recorder) requests() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.reqs...)
}

func (r *recorder) count() int { return len(r.requests()) }

// assertCredentialOnlyIn checks every recorded request carried the persona
// token exactly once, as header: want, and nowhere else: not in the URL
// (raw or decoded), not in the body, not in any other header.
func assertCredentialOnlyIn(t *testing.T, rec *recorder, header, want string) {
	t.Helper()
	reqs := rec.requests()
	if len(reqs) == 0 {
		t.Fatal("the server recorded no request: nothing was checked")
	}
	tok := persona.Reveal()
	for i, r := range reqs {
		if got := r.header.Values(header); len(got) != 1 || got[0] != want {
			t.Errorf("request %d: header %s = %q, want exactly [%q]", i, header, got, want)
		}
		decoded, _ := url.QueryUnescape(r.uri)
		if strings.Contains(r.uri, tok) || strings.Contains(decoded, tok) {
			t.Errorf("request %d: the token is in the URL %q", i, r.uri)
		}
		if strings.Contains(string(r.body), tok) {
			t.Errorf("request %d: the token is in the body", i)
		}
		for name, values := range r.header {
			if http.CanonicalHeaderKey(name) == http.CanonicalHeaderKey(header) {
				continue
			}
			for _, v := range values {
				if strings.Contains(v, tok) {
					t.Errorf("request %d: the token is in header %s", i, name)
				}
			}
		}
	}
}

// writeJSON replies with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// echoToken is a hostile reply: the credential it was sent, in every place
// a careless client might copy into an error.
func echoToken(status int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok := r.Header.Get("Authorization") + r.Header.Get("Api-Key")
		w.Header().Set("X-Echo", tok)
		writeJSON(w, status, map[string]any{"error": map[string]any{"message": tok, "code": tok, "type": tok}, "hits": tok})
	}
}

// kindOf returns err's driver error kind, failing the test when it has none.
func kindOf(t *testing.T, err error) driver.Kind {
	t.Helper()
	var de *driver.Error
	if !errors.As(err, &de) {
		t.Fatalf("err = %v (%T), want a classified driver error", err, err)
	}
	return de.Kind
}

// redirectTo replies with a redirect to target, and a body that would read
// as an answer to anyone who decoded it.
func redirectTo(target string, status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", target)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// followingClient is a client that follows redirects, as http.Client does
// by default: the surface clients must refuse them themselves.
func followingClient() *http.Client { return &http.Client{} }
