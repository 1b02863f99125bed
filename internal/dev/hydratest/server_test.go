package hydratest

import (
	"context"
	"net/http"
	"testing"
	"time"

	"golang.org/x/oauth2/clientcredentials"
)

// TestJWTTokensOutliveTheirClientsGrant: a client-credentials token is a
// JWT whose sub is the client; once the client may no longer use the
// grant (its grant types patched away) the token endpoint refuses it at
// once, while the token already issued is still a valid JWT until its exp
// (Hydra does not call resource servers back). Patching the grant back
// restores the client.
func TestJWTTokensOutliveTheirClientsGrant(t *testing.T) {
	s := Start(t, 5*time.Second)
	c := s.CreateClient(t, "assistant-"+time.Now().Format("150405"))
	cfg := clientcredentials.Config{ClientID: c.ID, ClientSecret: c.Secret, TokenURL: s.TokenURL()}
	tok, err := cfg.Token(context.Background())
	if err != nil {
		t.Fatalf("client credentials: %v", err)
	}
	if status, _, err := call(http.MethodGet, s.JWKSURL(), nil); err != nil || status != http.StatusOK {
		t.Fatalf("key set: %d %v", status, err)
	}
	if life := time.Until(tok.Expiry); life <= 0 || life > 6*time.Second {
		t.Fatalf("token lives %s, want about 5s", life)
	}
	s.PatchClient(t, c.ID, map[string]any{"op": "replace", "path": "/grant_types", "value": []string{"authorization_code"}})
	if _, err := cfg.Token(context.Background()); err == nil {
		t.Fatal("a client without the client-credentials grant got a token")
	}
	s.PatchClient(t, c.ID, map[string]any{"op": "replace", "path": "/grant_types", "value": []string{"client_credentials"}})
	if _, err := cfg.Token(context.Background()); err != nil {
		t.Fatalf("the restored client: %v", err)
	}
}
