package controllers

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2/clientcredentials"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/hydratest"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/targettest"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// hydraTokenLife is how long Hydra's access tokens live here: the operator
// replaces one when half its life is gone, so the token it holds when the
// client is revoked has 3 to 6 seconds left.
const hydraTokenLife = 6 * time.Second

// issued is one token endpoint reply the observer saw: when, and the
// access token's exp (zero for a refusal).
type issued struct {
	at, exp time.Time
}

// tokenObserver stands between the operator and Hydra's token endpoint
// and notes every reply: an observer independent of the run, which knows
// when each token it handed out expires.
type tokenObserver struct {
	mu      sync.Mutex
	replies []issued
}

func (o *tokenObserver) proxy(t *testing.T, tokenURL string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		req, err := http.NewRequestWithContext(r.Context(), r.Method, tokenURL, bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		reply, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		o.note(reply, resp.StatusCode)
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(reply)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// note records a reply: a token's exp read from its JWT payload.
func (o *tokenObserver) note(reply []byte, status int) {
	rec := issued{at: time.Now()}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if status == http.StatusOK && json.Unmarshal(reply, &tok) == nil {
		if parts := strings.Split(tok.AccessToken, "."); len(parts) == 3 {
			var claims struct {
				Exp int64 `json:"exp"`
			}
			if payload, err := base64.RawURLEncoding.DecodeString(parts[1]); err == nil && json.Unmarshal(payload, &claims) == nil {
				rec.exp = time.Unix(claims.Exp, 0)
			}
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.replies = append(o.replies, rec)
}

// lastIssuedBefore is the exp of the last token handed out before at, and
// whether a refusal came after at.
func (o *tokenObserver) lastIssuedBefore(at time.Time) (exp time.Time, refusedAfter bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range o.replies {
		switch {
		case r.at.Before(at) && !r.exp.IsZero():
			exp = r.exp
		case r.at.After(at) && r.exp.IsZero():
			refusedAfter = true
		}
	}
	return exp, refusedAfter
}

// TestRevokedClientTokenStopsAtItsExpiry: a persona is an OAuth2 client of
// Ory Hydra (client credentials, JWT access tokens living
// hydraTokenLife); ragtarget accepts those tokens by Hydra's keys, as a
// resource server that validates them locally does. A RevokeCredential
// canary revokes the client at Hydra's admin API (its grant types patched
// away): the token endpoint refuses the persona from then on, yet the
// token it already holds keeps reading the canary until its exp. The
// measured bounds contain that exp, which an observer on the token
// endpoint read from the token itself; cleanup restores the client.
func TestRevokedClientTokenStopsAtItsExpiry(t *testing.T) {
	t.Parallel() // its own Hydra, target and namespace; bounds are checked against the observer
	hydra := hydratest.Start(t, hydraTokenLife)
	client := hydra.CreateClient(t, "assistant")
	var observer tokenObserver
	tokenProxy := observer.proxy(t, hydra.TokenURL())
	tg := targettest.Start(t, ragtarget.Config{
		SourceToken: testSourceToken, Tokens: fixtureTokens(),
		ContentSyncInterval: 200 * time.Millisecond, ACLSyncInterval: 200 * time.Millisecond,
		JWT: &ragtarget.JWTConfig{JWKSURL: hydra.JWKSURL(), Issuer: hydra.Issuer},
	})
	ns := crFixture(t, tg.URL)
	secret := objects.CredentialSecret(ns, "assistant-oauth2", "")
	secret.Data = map[string][]byte{v1alpha1.OAuth2ClientIDKey: []byte(client.ID), v1alpha1.OAuth2ClientSecretKey: []byte(client.Secret)}
	crCreate(t, secret)
	grants := func(types ...string) string {
		b, _ := json.Marshal([]map[string]any{{"op": "replace", "path": "/grant_types", "value": types}})
		return string(b)
	}
	assistant := &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "assistant"}, Spec: v1alpha1.PersonaSpec{
		Subject: client.ID,
		OAuth2: &v1alpha1.PersonaOAuth2{Grant: v1alpha1.OAuth2ClientCredentials, TokenURL: tokenProxy.URL + "/oauth2/token",
			SecretRef: v1alpha1.LocalObjectReference{Name: "assistant-oauth2"}, Audiences: []string{tg.URL},
			Revocation: &v1alpha1.CredentialRevocation{URL: hydra.Admin + hydratest.ClientPath(client.ID),
				Revoke:  v1alpha1.CredentialRequest{Method: http.MethodPatch, Body: grants("authorization_code")},
				Restore: v1alpha1.CredentialRequest{Method: http.MethodPatch, Body: grants("client_credentials")}}},
	}}
	crCreate(t, assistant)
	waitPersonaReady(t, assistant, metav1.ConditionTrue, v1alpha1.ReasonTokenIssued)

	run := objects.CanaryRun(ns, "run", onTarget, objects.SharedWith("assistant"), objects.Revoke(v1alpha1.RevokeCredential, ""),
		objects.Every(300*time.Millisecond, 2), objects.Timeouts(20*time.Second, 30*time.Second))
	crCreate(t, run)
	got := crWaitDone(t, run)
	if got.Status.Verdict != v1alpha1.VerdictSLOMet {
		t.Fatalf("verdict %s (%s), want SLOMet", got.Status.Verdict, got.Status.Message)
	}
	m := crSurface(t, got, v1alpha1.SurfaceSearch)
	if m.Bounds == nil || m.Bounds.Lower == nil || m.Bounds.Upper == nil {
		t.Fatalf("search bounds %+v, want both", m.Bounds)
	}
	requested, ack := got.Status.RevokeRequestedTime.Time, got.Status.RevokeAcknowledgedTime.Time
	exp, refused := observer.lastIssuedBefore(requested)
	if exp.IsZero() {
		t.Fatal("the observer saw no token issued before the revocation")
	}
	if !refused {
		t.Error("the token endpoint refused no token request after the revocation: the operator never asked, or the revocation did nothing")
	}
	lower, upper := ack.Add(m.Bounds.Lower.Duration), requested.Add(m.Bounds.Upper.Duration)
	t.Logf("token held at revocation expired %s after it; measured [%s, %s]; probes %+v",
		exp.Sub(ack).Round(time.Millisecond), m.Bounds.Lower.Duration, m.Bounds.Upper.Duration, m.Probes)
	// The token ends at its exp; the operator stops sending it when its own
	// reckoning of the lifetime (from when it asked, in whole seconds) runs
	// out, which may be up to a second earlier.
	if lower.After(exp) || upper.Before(exp.Add(-time.Second)) {
		t.Errorf("measured [%s, %s] does not contain the held token's expiry, %s after the revocation",
			m.Bounds.Lower.Duration, m.Bounds.Upper.Duration, exp.Sub(ack))
	}
	// Not at once: the revoked client's token kept reading.
	if m.Bounds.Lower.Duration < time.Second {
		t.Errorf("lower bound %s: the token stopped reading at once, not at its expiry", m.Bounds.Lower.Duration)
	}
	assertControlAnswered(t, got, v1alpha1.SurfaceSearch)
	// Cleanup restored the client: it gets tokens again.
	cc := clientcredentials.Config{ClientID: client.ID, ClientSecret: client.Secret, TokenURL: hydra.TokenURL()}
	if _, err := cc.Token(t.Context()); err != nil {
		t.Errorf("the client after cleanup: %v, want restored", err)
	}
}
