// Package hydratest starts a real Ory Hydra (bin/hydra, built from Go
// modules by `make bin/hydra`) for tests: an OAuth2 server issuing JWT
// access tokens, on its own PostgreSQL, both listeners on loopback,
// anonymous usage reports off, stopped when the test ends.
package hydratest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/dev/pgtest"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
)

// Server is a running Hydra.
type Server struct {
	// Issuer is the public URL (http://127.0.0.1:PORT): the iss of its
	// tokens, with the token endpoint and the key set below it.
	Issuer string
	// Admin is the administrative API's URL (clients, keys); it has no
	// authentication of its own, as in Hydra's own deployments behind a
	// network boundary.
	Admin string
}

// TokenURL is the token endpoint.
func (s *Server) TokenURL() string { return s.Issuer + "/oauth2/token" }

// JWKSURL is where the signing keys of its JWT access tokens are published.
func (s *Server) JWKSURL() string { return s.Issuer + "/.well-known/jwks.json" }

// Start runs Hydra until t ends, its access tokens living tokenLife (whole
// seconds). It fails t, naming the make target, when the binary is
// missing.
func Start(t testing.TB, tokenLife time.Duration) *Server {
	t.Helper()
	bin, err := testutil.RepoBinary("hydra")
	if err != nil {
		t.Fatalf("%v: run 'make bin/hydra' (or make test) to build Hydra from Go modules", err)
	}
	pg := pgtest.Start(t)
	public, admin := testutil.FreePort(t), testutil.FreePort(t)
	s := &Server{Issuer: "http://127.0.0.1:" + public, Admin: "http://127.0.0.1:" + admin}
	dir := t.TempDir()
	config := filepath.Join(dir, "hydra.yaml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`dsn: %s
serve:
  public: {host: 127.0.0.1, port: %s}
  admin: {host: 127.0.0.1, port: %s}
urls:
  self: {issuer: %s}
strategies:
  access_token: jwt
ttl:
  access_token: %ds
secrets:
  system: [%s]
log:
  level: warn
`, pg.SuperDSN(), public, admin, s.Issuer, max(int(tokenLife/time.Second), 1), testutil.RandomKey(t, "hydra-system-secret-"))), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := runBounded(bin, "migrate", "sql", "up", "--config", config, "--read-from-env", "--yes"); err != nil {
		t.Fatalf("migrating hydra's database: %v\n%s", err, out)
	}
	proc := testutil.StartProcess(t, "hydra", exec.Command(bin, "serve", "all", "--dev", "--sqa-opt-out", "--config", config))
	testutil.Eventually(t, 60*time.Second, "hydra serving", func() error {
		if err := proc.Exited(); err != nil {
			return err
		}
		for _, u := range []string{s.Admin + "/health/ready", s.Issuer + "/health/ready"} {
			if status, _, err := call(http.MethodGet, u, nil); err != nil || status != http.StatusOK {
				return fmt.Errorf("%s: %d %v", u, status, err)
			}
		}
		return nil
	})
	return s
}

// runBounded runs bin to its end, within a minute, and returns its output.
func runBounded(bin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	return string(out), err
}

// Client is a registered OAuth2 client.
type Client struct {
	ID, Secret string
}

// CreateClient registers a confidential client that may use the
// client-credentials grant, its secret sent in the token request's body
// or basic auth; its access tokens are JWTs whose sub is its ID.
func (s *Server) CreateClient(t testing.TB, id string) Client {
	t.Helper()
	c := Client{ID: id, Secret: testutil.RandomKey(t, "hydra-client-")}
	status, body, err := call(http.MethodPost, s.Admin+"/admin/clients", map[string]any{
		"client_id": c.ID, "client_secret": c.Secret, "grant_types": []string{"client_credentials"},
		"token_endpoint_auth_method": "client_secret_basic", "access_token_strategy": "jwt",
	})
	if err != nil || status != http.StatusCreated {
		t.Fatalf("creating client %s: %d %v %s", id, status, err, body)
	}
	return c
}

// ClientPath is the admin API path of client id, for a revocation's
// declared requests.
func ClientPath(id string) string { return "/admin/clients/" + id }

// call sends one JSON request and reads at most 1 MiB of the reply.
func call(method, url string, body any) (int, string, error) {
	var payload io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, "", err
		}
		payload = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, payload)
	if err != nil {
		return 0, "", err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, strings.TrimSpace(string(b)), err
}

// PatchClient applies a JSON Patch (RFC 6902) to client id, as a
// revocation that keeps the client (and can be undone) does.
func (s *Server) PatchClient(t testing.TB, id string, ops ...map[string]any) {
	t.Helper()
	status, body, err := call(http.MethodPatch, s.Admin+ClientPath(id), ops)
	if err != nil || status != http.StatusOK {
		t.Fatalf("patching client %s: %d %v %s", id, status, err, body)
	}
}
