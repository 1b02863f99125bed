package rest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
)

const clientSecret = "client-secret-0123456789"

// tokenServer issues access-token-<n> valid for expiresIn seconds, or
// fails (with the secret and a token in its reply) when fail is set.
func tokenServer(t *testing.T, expiresIn int, fail *atomic.Bool) (*httptest.Server, *atomic.Int32) {
	var issued atomic.Int32
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if !ok || id != "ragcanary" || secret != clientSecret || r.FormValue("grant_type") != "client_credentials" || r.FormValue("scope") != "repo read" {
			http.Error(w, `{"error": "invalid_client"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if fail != nil && fail.Load() {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"error": "server_error", "echo": "` + clientSecret + ` access-token-1"}`))
			return
		}
		n := issued.Add(1)
		_, _ = w.Write([]byte(`{"access_token": "access-token-` + strconv.Itoa(int(n)) + `", "token_type": "bearer", "expires_in": ` + strconv.Itoa(expiresIn) + `}`))
	}))
	t.Cleanup(s.Close)
	return s, &issued
}

// TestOAuth2ClientCredentials: the token is fetched once and reused,
// fetched again once it expires (the injected clock), sent only as a
// bearer token, and never appears in an error, even when the token
// endpoint echoes it.
func TestOAuth2ClientCredentials(t *testing.T) {
	var fail atomic.Bool
	ts, issued := tokenServer(t, 60, &fail)
	tg := newTarget(t, nil)
	spec := minimal()
	spec.URL = tg.URL + "/api"
	clk := clocktesting.NewFakePassiveClock(time.Now())
	d, err := New(Config{Spec: spec, BaseURL: spec.URL, HTTPClient: tg.Client(), Clock: clk, Auth: &Auth{
		Type: v1alpha1.RESTAuthOAuth2ClientCredentials, Secret: []byte(clientSecret), TokenURL: ts.URL + "/token",
		ClientID: "ragcanary", Scopes: []string{"repo", "read"}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 3 {
		if err := d.DeleteDocument(ctx, "c"); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if n := issued.Load(); n != 1 {
		t.Fatalf("token fetched %d times for 3 calls, want 1", n)
	}
	clk.SetTime(clk.Now().Add(55 * time.Second)) // within expiryDelta of expiry
	if err := d.DeleteDocument(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if n := issued.Load(); n != 2 {
		t.Fatalf("token fetched %d times after expiry, want 2", n)
	}
	got := tg.requests()
	if a := got[0].Header.Get("Authorization"); a != "Bearer access-token-1" {
		t.Errorf("first Authorization = %q", a)
	}
	if a := got[3].Header.Get("Authorization"); a != "Bearer access-token-2" {
		t.Errorf("after expiry Authorization = %q", a)
	}
	for _, g := range got {
		if strings.Contains(g.Path+g.Query+g.Body, "access-token") {
			t.Errorf("the token appears outside its header: %+v", g)
		}
	}
	fail.Store(true)
	clk.SetTime(clk.Now().Add(time.Hour))
	err = d.DeleteDocument(ctx, "c")
	if err == nil || strings.Contains(err.Error(), clientSecret) || strings.Contains(err.Error(), "access-token") {
		t.Fatalf("failed token request = %v, want an error without the secret or a token", err)
	}
	if !driver.IsTransient(err) || !strings.Contains(err.Error(), "status 500") {
		t.Errorf("failed token request = %v, want transient naming status 500", err)
	}
}

// TestOAuth2RefusedCredentials is Unauthorized, without the secret.
func TestOAuth2RefusedCredentials(t *testing.T) {
	ts, _ := tokenServer(t, 60, nil)
	tg := newTarget(t, nil)
	spec := minimal()
	spec.URL = tg.URL
	d, err := New(Config{Spec: spec, BaseURL: spec.URL, HTTPClient: tg.Client(), Auth: &Auth{
		Type: v1alpha1.RESTAuthOAuth2ClientCredentials, Secret: []byte("wrong-secret-value"), TokenURL: ts.URL, ClientID: "ragcanary", Scopes: []string{"repo", "read"}}})
	if err != nil {
		t.Fatal(err)
	}
	err = d.DeleteDocument(context.Background(), "c")
	if !driver.IsUnauthorized(err) || strings.Contains(err.Error(), "wrong-secret-value") {
		t.Fatalf("err = %v, want unauthorized without the secret", err)
	}
	if n := len(tg.requests()); n != 0 {
		t.Errorf("the target got %d requests without a token", n)
	}
}

// TestStaticCredentialsGoOnlyInTheirHeader: Bearer (with a scheme),
// Basic and Header send the credential in their header; a template
// rendering it anywhere else (path, query, body, another header) is
// refused before anything is sent.
func TestStaticCredentialsGoOnlyInTheirHeader(t *testing.T) {
	const secret = "s3cr3t-token-value"
	for _, tc := range []struct {
		auth         Auth
		header, want string
	}{
		{Auth{Type: v1alpha1.RESTAuthBearer, Scheme: "token", Secret: []byte(secret)}, "Authorization", "token " + secret},
		{Auth{Type: v1alpha1.RESTAuthBasic, Username: "ops", Secret: []byte(secret)}, "Authorization", "Basic b3BzOnMzY3IzdC10b2tlbi12YWx1ZQ=="},
		{Auth{Type: v1alpha1.RESTAuthHeader, Header: "X-API-Key", Secret: []byte(secret)}, "X-Api-Key", secret},
	} {
		tg := newTarget(t, nil)
		d := build(t, tg, "/api", minimal(), &tc.auth)
		if err := d.DeleteDocument(context.Background(), "c"); err != nil {
			t.Fatal(err)
		}
		if got := tg.requests()[0].Header.Get(tc.header); got != tc.want {
			t.Errorf("%s: %s = %q, want %q", tc.auth.Type, tc.header, got, tc.want)
		}
		for field, r := range map[string]v1alpha1.RESTRequest{
			"path":   {Method: "DELETE", Path: "/docs/{{.Values.k}}"},
			"query":  {Method: "DELETE", Path: "/docs", Query: map[string]v1alpha1.RESTValue{"k": "{{.Values.k}}"}},
			"body":   {Method: "DELETE", Path: "/docs", Body: `{"k": {{json .Values.k}}}`},
			"header": {Method: "DELETE", Path: "/docs", Headers: map[string]v1alpha1.RESTValue{"X-Other": "{{.Values.k}}"}},
		} {
			spec := minimal()
			spec.Values = map[string]v1alpha1.RESTValue{"k": "x" + secret}
			spec.Operations.DeleteDocument = []v1alpha1.RESTRequest{r}
			tg := newTarget(t, nil)
			d := build(t, tg, "/api", spec, &tc.auth)
			err := d.DeleteDocument(context.Background(), "c")
			if err == nil || !strings.Contains(err.Error(), "outside its header") || strings.Contains(err.Error(), secret) || driver.IsPermanent(err) {
				t.Errorf("%s in %s: err = %v, want a refusal without the secret", tc.auth.Type, field, err)
			}
			if n := len(tg.requests()); n != 0 {
				t.Errorf("%s in %s: the target got %d requests", tc.auth.Type, field, n)
			}
		}
	}
}
