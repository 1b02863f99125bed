package giteatest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// OAuth2AccessTokens turns Gitea's OAuth2 provider on, issuing access
// tokens that live d (whole seconds, at least one; Gitea's default is an
// hour). Gitea accepts them on its API as bearer tokens.
func OAuth2AccessTokens(d time.Duration) Option {
	return func(o *options) { o.accessTokenLife = d }
}

func (o options) oauth2Lifetime() int {
	if o.accessTokenLife <= 0 {
		return 0
	}
	return max(int(o.accessTokenLife/time.Second), 1)
}

// jwtSecret is the provider's HS256 signing key, in Gitea's base64 form.
func jwtSecret(t testing.TB) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// OAuth2App is an OAuth2 application registered by a user.
type OAuth2App struct {
	ID                     int64
	ClientID, ClientSecret string
	RedirectURI            string
}

// TokenURL is the provider's token endpoint.
func (s *Server) TokenURL() string { return s.URL + "/login/oauth/access_token" }

// CreateOAuth2App registers a confidential OAuth2 application owned by u.
// Its redirect URI is never served: the authorization code is read from
// the redirect itself.
func (s *Server) CreateOAuth2App(t testing.TB, u User, name string) OAuth2App {
	t.Helper()
	app := OAuth2App{RedirectURI: "http://127.0.0.1:1/callback"}
	var reply struct {
		ID           int64  `json:"id"`
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	status, body, err := s.send(http.MethodPost, "/user/applications/oauth2", map[string]any{
		"name": name, "redirect_uris": []string{app.RedirectURI}, "confidential_client": true,
	}, func(r *http.Request) { r.SetBasicAuth(u.Name, u.Password) })
	if err != nil || status != http.StatusCreated {
		t.Fatalf("creating OAuth2 application %s: %d %v %s", name, status, err, body)
	}
	decode(t, body, &reply)
	app.ID, app.ClientID, app.ClientSecret = reply.ID, reply.ClientID, reply.ClientSecret
	return app
}

// DeleteOAuth2App deletes u's application, and with it every grant and so
// every token issued through it.
func (s *Server) DeleteOAuth2App(t testing.TB, u User, app OAuth2App) {
	t.Helper()
	status, body, err := s.send(http.MethodDelete, fmt.Sprintf("/user/applications/oauth2/%d", app.ID), nil,
		func(r *http.Request) { r.SetBasicAuth(u.Name, u.Password) })
	if err != nil || status != http.StatusNoContent {
		t.Fatalf("deleting OAuth2 application %d: %d %v %s", app.ID, status, err, body)
	}
}

// AuthorizeOAuth2 signs u in on the web, grants app access on the consent
// page as a person would, and exchanges the code: the refresh token it
// returns is what a persona keeps.
func (s *Server) AuthorizeOAuth2(t testing.TB, u User, app OAuth2App) *oauth2.Token {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	web := &http.Client{Jar: jar, Timeout: 30 * time.Second,
		// The code comes back in the redirect to the (unserved) redirect URI.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	form := func(path string, v url.Values) *http.Response {
		resp, err := web.PostForm(s.URL+path, v)
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := form("/user/login", url.Values{"user_name": {u.Name}, "password": {u.Password}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("signing %s in: %d", u.Name, resp.StatusCode)
	}
	state := "ragcanary-test"
	authorize := s.URL + "/login/oauth/authorize?" + url.Values{"client_id": {app.ClientID}, "redirect_uri": {app.RedirectURI},
		"response_type": {"code"}, "state": {state}}.Encode()
	resp, err := web.Get(authorize)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("authorize page: %d", resp.StatusCode)
	}
	resp = form("/login/oauth/grant", url.Values{"client_id": {app.ClientID}, "state": {state}, "scope": {""},
		"nonce": {""}, "redirect_uri": {app.RedirectURI}, "granted": {"true"}})
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(loc.String(), app.RedirectURI) || loc.Query().Get("code") == "" {
		t.Fatalf("granting: %d, redirect %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	cfg := oauth2.Config{ClientID: app.ClientID, ClientSecret: app.ClientSecret, RedirectURL: app.RedirectURI,
		Endpoint: oauth2.Endpoint{TokenURL: s.TokenURL(), AuthStyle: oauth2.AuthStyleInHeader}}
	tok, err := cfg.Exchange(context.Background(), loc.Query().Get("code"))
	if err != nil {
		t.Fatalf("exchanging the code: %v", err)
	}
	if tok.RefreshToken == "" {
		t.Fatal("the code exchange returned no refresh token")
	}
	return tok
}

// BearerStatus is the status of GET path (under /api/v1) with tok as a
// bearer token.
func (s *Server) BearerStatus(path, tok string) (int, error) {
	status, _, err := s.send(http.MethodGet, path, nil, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) })
	return status, err
}

// RotateOAuth2Secret gives u's application a new client secret, as its
// owner does when the old one leaked, and returns app with it. Gitea keeps
// the application's grants.
func (s *Server) RotateOAuth2Secret(t testing.TB, u User, app OAuth2App) OAuth2App {
	t.Helper()
	var reply struct {
		ClientSecret string `json:"client_secret"`
	}
	status, body, err := s.send(http.MethodPatch, fmt.Sprintf("/user/applications/oauth2/%d", app.ID), map[string]any{
		"name": "rotated", "redirect_uris": []string{app.RedirectURI}, "confidential_client": true,
	}, func(r *http.Request) { r.SetBasicAuth(u.Name, u.Password) })
	if err != nil || status != http.StatusOK {
		t.Fatalf("rotating the secret of OAuth2 application %d: %d %v %s", app.ID, status, err, body)
	}
	decode(t, body, &reply)
	if reply.ClientSecret == "" || reply.ClientSecret == app.ClientSecret {
		t.Fatal("rotating the secret returned no new secret")
	}
	app.ClientSecret = reply.ClientSecret
	return app
}
