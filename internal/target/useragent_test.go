package target

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"

	"github.com/ragcanary/ragcanary/internal/driver"
)

// TestEveryRequestNamesTheReplica: every request a resolved corpus's
// driver sends, on the reader and the source side, carries the door's
// User-Agent naming the replica.
func TestEveryRequestNamesTheReplica(t *testing.T) {
	var mu sync.Mutex
	var agents []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		agents = append(agents, r.Header.Get("User-Agent"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"hits":[],"answer":"","citations":[]}`))
	}))
	defer srv.Close()

	door := &Door{Reader: secretsReader(t, sourceSecret(true)), Allow: AllowAny(), UserAgent: UserAgent("ragcanary-7f9c-x2")}
	c, err := door.Corpus(context.Background(), corpusFor(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Driver.Search(context.Background(), driver.Token("persona-secret-value"), "handle", 10); err != nil {
		t.Fatal(err)
	}
	_ = c.Driver.DeleteDocument(context.Background(), "rc-x")

	mu.Lock()
	defer mu.Unlock()
	if len(agents) < 2 {
		t.Fatalf("target saw %d requests, want the search and the delete", len(agents))
	}
	want := regexp.MustCompile(`^ragcanary/\S+ \(ragcanary-7f9c-x2\)$`)
	for i, a := range agents {
		if !want.MatchString(a) {
			t.Errorf("request %d: User-Agent %q, want ragcanary/<version> (ragcanary-7f9c-x2)", i, a)
		}
	}
}

// TestUserAgentLeavesTheRequestAlone: setting the header on a clone keeps
// the caller's request as it was (a RoundTripper's contract).
func TestUserAgentLeavesTheRequestAlone(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	c := withUserAgent(&http.Client{}, "ragcanary/devel (r)")
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if got := req.Header.Get("User-Agent"); got != "" {
		t.Errorf("the caller's request got User-Agent %q", got)
	}
}
