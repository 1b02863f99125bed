package giteatest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/ragcanary/ragcanary/internal/dev/testutil"
)

// bearerStatus is the status of GET /user with tok as a bearer token.
func (s *Server) bearerStatus(tok string) (int, error) { return s.BearerStatus("/user", tok) }

// TestOAuth2TokensExpireRefreshAndDieWithTheirApp: a user grants an
// application access on the consent page; the access token the code buys
// works on the API until its lifetime ends, the refresh token buys a new
// one, and deleting the application ends that one at once (Gitea checks
// the grant on every request), not at its expiry.
func TestOAuth2TokensExpireRefreshAndDieWithTheirApp(t *testing.T) {
	const life = 3 * time.Second
	s := Start(t, OAuth2AccessTokens(life))
	u := s.CreateUser(t, "olive")
	app := s.CreateOAuth2App(t, u, "assistant")
	issued := time.Now()
	tok := s.AuthorizeOAuth2(t, u, app)
	if status, err := s.bearerStatus(tok.AccessToken); err != nil || status != http.StatusOK {
		t.Fatalf("a fresh access token: %d %v", status, err)
	}
	lived := s.waitRefused(t, tok.AccessToken, issued, life)
	t.Logf("the access token issued for %s was refused %s after it was asked for", life, lived.Round(time.Millisecond))
	cfg := oauth2.Config{ClientID: app.ClientID, ClientSecret: app.ClientSecret,
		Endpoint: oauth2.Endpoint{TokenURL: s.TokenURL(), AuthStyle: oauth2.AuthStyleInHeader}}
	fresh, err := cfg.TokenSource(context.Background(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil {
		t.Fatalf("refreshing: %v", err)
	}
	if status, err := s.bearerStatus(fresh.AccessToken); err != nil || status != http.StatusOK {
		t.Fatalf("a refreshed access token: %d %v", status, err)
	}
	s.DeleteOAuth2App(t, u, app)
	if status, err := s.bearerStatus(fresh.AccessToken); err != nil || status != http.StatusUnauthorized {
		t.Fatalf("an unexpired token after its application was deleted: %d %v, want 401 at once", status, err)
	}
}

// waitRefused waits until Gitea refuses tok (401), issued at issued to
// live life, and returns how long it lived. The token's exp is in whole
// seconds, truncated: it may end up to a second before expires_in says,
// which a client's refresh margin must cover; earlier fails t.
func (s *Server) waitRefused(t *testing.T, tok string, issued time.Time, life time.Duration) time.Duration {
	t.Helper()
	testutil.EventuallyEvery(t, 2*life+10*time.Second, 100*time.Millisecond, "the access token expires", func() error {
		if status, err := s.bearerStatus(tok); err != nil || status != http.StatusUnauthorized {
			return fmt.Errorf("status %d, err %v", status, err)
		}
		return nil
	})
	lived := time.Since(issued)
	if lived < life-time.Second {
		t.Fatalf("refused %s after it was issued, more than a second before its %s lifetime", lived, life)
	}
	return lived
}

// refresh asks for a new token with app's client secret and the refresh
// token; a refusal is an *oauth2.RetrieveError.
func (s *Server) refresh(app OAuth2App, refreshToken string) (*oauth2.Token, error) {
	cfg := oauth2.Config{ClientID: app.ClientID, ClientSecret: app.ClientSecret,
		Endpoint: oauth2.Endpoint{TokenURL: s.TokenURL(), AuthStyle: oauth2.AuthStyleInHeader}}
	return cfg.TokenSource(context.Background(), &oauth2.Token{RefreshToken: refreshToken}).Token()
}

// refusedAs fails t unless err is the token endpoint's refusal with code.
func refusedAs(t *testing.T, err error, code string) {
	t.Helper()
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode != code {
		t.Fatalf("refresh: %v, want the token endpoint's %q", err, code)
	}
}

// TestRevokingAClientOrAnAccountAtGitea: what two revocations short of
// deleting the application do to tokens already issued, seen on Gitea's
// API (v1.26.0):
//   - rotating the client's secret (the owner's answer to a leaked
//     secret) refuses a refresh with the old secret at once
//     (invalid_client), but the access token already issued keeps working
//     until its expiry: the grant it names still exists. A revoked
//     client's token stops working at its expiry.
//   - prohibiting the account's sign-in refuses its token on the API at
//     once (403), but the refresh grant still issues new tokens to it
//     (the token endpoint checks the client and the grant, not the
//     account): an application that accepts Gitea's tokens without asking
//     Gitea's API about the account would keep serving it.
func TestRevokingAClientOrAnAccountAtGitea(t *testing.T) {
	const life = 3 * time.Second
	s := Start(t, OAuth2AccessTokens(life))

	u := s.CreateUser(t, "rotated")
	app := s.CreateOAuth2App(t, u, "assistant")
	issued := time.Now()
	tok := s.AuthorizeOAuth2(t, u, app)
	rotated := s.RotateOAuth2Secret(t, u, app)
	revokedAfter := time.Since(issued)
	if status, err := s.bearerStatus(tok.AccessToken); err != nil || status != http.StatusOK {
		t.Fatalf("the access token after its client's secret was rotated: %d %v, want 200 until it expires", status, err)
	}
	_, err := s.refresh(app, tok.RefreshToken)
	refusedAs(t, err, "invalid_client")
	lived := s.waitRefused(t, tok.AccessToken, issued, life)
	t.Logf("secret rotated %s after the token was issued; the token worked until %s after", revokedAfter.Round(time.Millisecond), lived.Round(time.Millisecond))
	// The grant outlived the rotation: the new secret refreshes it.
	if fresh, err := s.refresh(rotated, tok.RefreshToken); err != nil {
		t.Fatalf("refreshing with the new secret: %v", err)
	} else if status, err := s.bearerStatus(fresh.AccessToken); err != nil || status != http.StatusOK {
		t.Fatalf("a token refreshed with the new secret: %d %v", status, err)
	}

	v := s.CreateUser(t, "disabled")
	app2 := s.CreateOAuth2App(t, v, "assistant")
	tok2 := s.AuthorizeOAuth2(t, v, app2)
	s.ProhibitLogin(t, v, true)
	if status, err := s.bearerStatus(tok2.AccessToken); err != nil || status != http.StatusForbidden {
		t.Fatalf("an unexpired token of an account whose sign-in is prohibited: %d %v, want 403 at once", status, err)
	}
	fresh, err := s.refresh(app2, tok2.RefreshToken)
	if err != nil {
		t.Fatalf("Gitea refused to refresh a prohibited account's grant (%v): this test's account of Gitea is out of date", err)
	}
	if status, err := s.bearerStatus(fresh.AccessToken); err != nil || status != http.StatusForbidden {
		t.Fatalf("a token refreshed for a prohibited account: %d %v, want 403", status, err)
	}
	s.ProhibitLogin(t, v, false)
	if status, err := s.bearerStatus(fresh.AccessToken); err != nil || status != http.StatusOK {
		t.Fatalf("the same token once sign-in is allowed again: %d %v, want 200", status, err)
	}
}
