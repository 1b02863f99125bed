package credential

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

const (
	clientID     = "persona-client"
	clientSecret = "s3cret-client-value"
)

// tokenServer is an OAuth2 token endpoint over real HTTP that issues
// numbered tokens with a lifetime and records each grant it was asked for.
type tokenServer struct {
	*httptest.Server
	lifetime time.Duration
	rotate   bool // hand out a new refresh token with each access token

	mu       sync.Mutex
	issued   int
	requests []url
	refuse   bool
	live     map[string]bool // refresh tokens still valid
}

// url is what one token request asked for.
type url struct{ grant, refresh string }

func startTokenServer(t *testing.T, lifetime time.Duration) *tokenServer {
	t.Helper()
	ts := &tokenServer{lifetime: lifetime, live: map[string]bool{"refresh-0": true}}
	ts.Server = httptest.NewServer(http.HandlerFunc(ts.serve))
	t.Cleanup(ts.Close)
	return ts
}

func (ts *tokenServer) serve(w http.ResponseWriter, r *http.Request) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	id, secret, ok := r.BasicAuth()
	if err := r.ParseForm(); err != nil || !ok || id != clientID || secret != clientSecret || ts.refuse {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":"invalid_client","error_description":"client %s with secret %s is unknown"}`, id, secret)
		return
	}
	req := url{grant: r.PostForm.Get("grant_type"), refresh: r.PostForm.Get("refresh_token")}
	ts.requests = append(ts.requests, req)
	reply := map[string]any{"token_type": "Bearer", "expires_in": int(ts.lifetime / time.Second)}
	if req.grant == "refresh_token" {
		if !ts.live[req.refresh] {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid_grant"}`)
			return
		}
		if ts.rotate {
			delete(ts.live, req.refresh)
			next := fmt.Sprintf("refresh-%d", ts.issued+1)
			ts.live[next] = true
			reply["refresh_token"] = next
		}
	}
	ts.issued++
	reply["access_token"] = fmt.Sprintf("access-%d", ts.issued)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(reply)
}

func (ts *tokenServer) seen() []url {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]url(nil), ts.requests...)
}

func noRedirects() *http.Client {
	return &http.Client{Timeout: 5 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func newSource(t *testing.T, cfg OAuth2Config) *OAuth2 {
	t.Helper()
	if cfg.ClientID == "" {
		cfg.ClientID, cfg.ClientSecret = clientID, clientSecret
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = noRedirects()
	}
	o, err := NewOAuth2(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func tokenOf(t *testing.T, o *OAuth2) string {
	t.Helper()
	tok, err := o.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tok.Reveal()
}

// A token is reused while more than the margin is left of its life and
// replaced once less is: a probe never carries one about to expire.
func TestClientCredentialsTokenIsReplacedBeforeItExpires(t *testing.T) {
	ts := startTokenServer(t, 60*time.Second)
	clk := clocktesting.NewFakePassiveClock(time.Unix(1_800_000_000, 0))
	o := newSource(t, OAuth2Config{Grant: ClientCredentials, TokenURL: ts.URL, RefreshBefore: 10 * time.Second, Clock: clk})

	first := tokenOf(t, o)
	clk.SetTime(clk.Now().Add(49 * time.Second))
	if got := tokenOf(t, o); got != first {
		t.Fatalf("with 11s left the token changed: %s → %s", first, got)
	}
	clk.SetTime(clk.Now().Add(1 * time.Second))
	if got := tokenOf(t, o); got == first {
		t.Fatalf("with 10s left (the margin) the token %s was kept", got)
	}
	if got := ts.seen(); len(got) != 2 || got[0].grant != "client_credentials" {
		t.Fatalf("token requests %+v, want two client_credentials grants", got)
	}
}

// The margin never exceeds half a token's life, so a server issuing
// short-lived tokens is not asked for a new one on every probe.
func TestShortLivedTokensKeepHalfTheirLife(t *testing.T) {
	ts := startTokenServer(t, 4*time.Second)
	clk := clocktesting.NewFakePassiveClock(time.Unix(1_800_000_000, 0))
	o := newSource(t, OAuth2Config{Grant: ClientCredentials, TokenURL: ts.URL, RefreshBefore: time.Minute, Clock: clk})
	first := tokenOf(t, o)
	clk.SetTime(clk.Now().Add(1900 * time.Millisecond))
	if got := tokenOf(t, o); got != first {
		t.Fatalf("a 4s token was replaced after 1.9s")
	}
	clk.SetTime(clk.Now().Add(100 * time.Millisecond))
	if got := tokenOf(t, o); got == first {
		t.Fatalf("a 4s token was kept past half its life")
	}
}

// A server that rotates refresh tokens invalidates each one it exchanges:
// the next exchange must use the one it handed out.
func TestRotatedRefreshTokenIsTheOneUsedNext(t *testing.T) {
	ts := startTokenServer(t, 10*time.Second)
	ts.rotate = true
	clk := clocktesting.NewFakePassiveClock(time.Unix(1_800_000_000, 0))
	o := newSource(t, OAuth2Config{Grant: RefreshToken, RefreshToken: "refresh-0", TokenURL: ts.URL, RefreshBefore: time.Second, Clock: clk})
	for i := 0; i < 3; i++ {
		tokenOf(t, o)
		clk.SetTime(clk.Now().Add(10 * time.Second))
	}
	got := ts.seen()
	want := []url{{"refresh_token", "refresh-0"}, {"refresh_token", "refresh-1"}, {"refresh_token", "refresh-2"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("exchanges %+v, want %+v", got, want)
	}
}

// A refresh that fails while the token is still valid keeps the token; once
// it has expired, the failure is the probe's error, never an absence.
func TestFailedRefreshKeepsAValidTokenThenFails(t *testing.T) {
	ts := startTokenServer(t, 10*time.Second)
	clk := clocktesting.NewFakePassiveClock(time.Unix(1_800_000_000, 0))
	o := newSource(t, OAuth2Config{Grant: ClientCredentials, TokenURL: ts.URL, RefreshBefore: 4 * time.Second, Clock: clk})
	first := tokenOf(t, o)
	ts.mu.Lock()
	ts.refuse = true
	ts.mu.Unlock()
	clk.SetTime(clk.Now().Add(7 * time.Second))
	if got := tokenOf(t, o); got != first {
		t.Fatalf("after a failed early refresh got %s, want the still-valid %s", got, first)
	}
	clk.SetTime(clk.Now().Add(3 * time.Second))
	_, err := o.Token(context.Background())
	var e *Error
	if !errors.As(err, &e) || e.Kind != Refused || e.Code != "invalid_client" || e.Status != http.StatusUnauthorized {
		t.Fatalf("after expiry: %v, want Refused (HTTP 401, invalid_client)", err)
	}
}

// An endpoint that writes the secret it was sent into its error reply
// never gets it into the error, which reaches conditions and events.
func TestRefusalNeverQuotesTheReply(t *testing.T) {
	ts := startTokenServer(t, 10*time.Second)
	o := newSource(t, OAuth2Config{Grant: ClientCredentials, TokenURL: ts.URL, ClientSecret: "wrong-" + clientSecret, ClientID: clientID})
	_, err := o.Token(context.Background())
	if err == nil {
		t.Fatal("a wrong secret gave a token")
	}
	if strings.Contains(err.Error(), clientSecret) || strings.Contains(err.Error(), "is unknown") {
		t.Fatalf("error %q quotes the reply", err)
	}
}

// A token endpoint that redirects is refused without following: the client
// secret would travel to the redirect's host.
func TestRedirectingEndpointIsNotFollowed(t *testing.T) {
	elsewhere := startTokenServer(t, 10*time.Second)
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirect.Close)
	o := newSource(t, OAuth2Config{Grant: ClientCredentials, TokenURL: redirect.URL})
	_, err := o.Token(context.Background())
	var e *Error
	if !errors.As(err, &e) || e.Status != http.StatusTemporaryRedirect {
		t.Fatalf("redirecting endpoint: %v, want an error naming HTTP 307", err)
	}
	if n := len(elsewhere.seen()); n != 0 {
		t.Fatalf("the redirect's host received %d token requests", n)
	}
}

// An endless reply is read to a bound and is no token.
func TestEndlessReplyIsMalformed(t *testing.T) {
	endless := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"access_token":"`)
		chunk := []byte(strings.Repeat("a", 64<<10))
		for i := 0; i < 1024; i++ { // 64 MiB unless the client stops reading
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(endless.Close)
	o := newSource(t, OAuth2Config{Grant: ClientCredentials, TokenURL: endless.URL})
	_, err := o.Token(context.Background())
	var e *Error
	if !errors.As(err, &e) || e.Kind != Malformed {
		t.Fatalf("endless reply: %v, want Malformed", err)
	}
}

func TestNewOAuth2RefusesIncompleteSettings(t *testing.T) {
	for name, cfg := range map[string]OAuth2Config{
		"no token URL":     {Grant: ClientCredentials, ClientID: "c", HTTPClient: noRedirects()},
		"no client":        {Grant: ClientCredentials, TokenURL: "http://127.0.0.1:1/token", HTTPClient: noRedirects()},
		"no refresh token": {Grant: RefreshToken, ClientID: "c", TokenURL: "http://127.0.0.1:1/token", HTTPClient: noRedirects()},
		"unknown grant":    {Grant: "Password", ClientID: "c", TokenURL: "http://127.0.0.1:1/token", HTTPClient: noRedirects()},
		"no HTTP client":   {Grant: ClientCredentials, ClientID: "c", TokenURL: "http://127.0.0.1:1/token"},
	} {
		if _, err := NewOAuth2(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A token endpoint that never answers is given up on within the source's
// timeout: a tenant's endpoint must not hold the caller (a Persona
// reconcile, a probe round) for ever.
func TestSilentEndpointTimesOut(t *testing.T) {
	release := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); silent.Close() })
	o := newSource(t, OAuth2Config{Grant: ClientCredentials, TokenURL: silent.URL, Timeout: 200 * time.Millisecond,
		HTTPClient: &http.Client{}}) // no client timeout: the source's own bound is what is tested
	done := make(chan error, 1)
	go func() {
		_, err := o.Token(context.Background())
		done <- err
	}()
	bound := time.NewTimer(10 * time.Second)
	defer bound.Stop()
	select {
	case err := <-done:
		var e *Error
		if !errors.As(err, &e) || e.Kind != Unavailable {
			t.Fatalf("silent endpoint: %v, want Unavailable", err)
		}
	case <-bound.C:
		t.Fatal("the token request to a silent endpoint did not return within 10s")
	}
}
