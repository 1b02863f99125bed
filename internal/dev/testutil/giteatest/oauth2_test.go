package giteatest

import (
	"context"
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
	testutil.EventuallyEvery(t, 2*life+10*time.Second, 100*time.Millisecond, "the access token expires", func() error {
		if status, err := s.bearerStatus(tok.AccessToken); err != nil || status != http.StatusUnauthorized {
			return fmt.Errorf("status %d, err %v", status, err)
		}
		return nil
	})
	// The token's exp is in whole seconds, truncated: it may end up to a
	// second before expires_in says, which a client's refresh margin must
	// cover.
	lived := time.Since(issued)
	if lived < life-time.Second {
		t.Fatalf("refused after %s, more than a second before its %s lifetime", lived, life)
	}
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
