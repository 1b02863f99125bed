package openfgatest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ragcanary/ragcanary/internal/dev/pgtest"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
)

func TestStartServesStoresWithDefaults(t *testing.T) {
	s := Start(t, Options{})
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
		t.Errorf("URL %q: want the HTTP API on loopback", s.URL)
	}
	id := s.NewStore(t, "canary")
	status, body := s.mustDo(t, http.MethodGet, "/stores/"+id, nil)
	if status != http.StatusOK {
		t.Fatalf("GET /stores/%s: %d %s", id, status, body)
	}
	var store struct{ ID, Name string }
	if err := json.Unmarshal(body, &store); err != nil {
		t.Fatal(err)
	}
	if store.ID != id || store.Name != "canary" {
		t.Errorf("GET /stores/%s = %+v, want the store NewStore created", id, store)
	}
}

func TestMissingBinaryNamesTheMakeTarget(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	t.Setenv("RAGCANARY_OPENFGA", "")
	_, err := binary()
	if want := "make " + filepath.Join(root, "bin", "openfga"); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("binary() = %v, want an error naming %q", err, want)
	}
}

func TestRefusesRequestsWithoutTheKey(t *testing.T) {
	s := Start(t, Options{})
	for name, header := range map[string]string{
		"no token":    "",
		"wrong token": "Bearer " + testutil.RandomKey(t, "openfga-test-"),
	} {
		t.Run(name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, s.URL+"/stores", nil)
			if err != nil {
				t.Fatal(err)
			}
			if header != "" {
				req.Header.Set("Authorization", header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("GET /stores with %s: %d, want 401", name, resp.StatusCode)
			}
		})
	}
	if strings.Contains(s.Log(), s.Token) {
		t.Error("the server's log shows the preshared key")
	}
}

// The check query cache is observable from outside: a revoked tuple stays
// allowed until the cached answer's TTL runs out. Without the cache the
// revocation shows at once, so the stale answer proves the flag reached
// the server, and its end within CacheTTL (not OpenFGA's 10s default)
// proves the TTL did.
func TestCheckQueryCacheServesRevokedTupleUntilTTL(t *testing.T) {
	const ttl = 2 * time.Second
	t.Run("cache off", func(t *testing.T) {
		d := newDoc(t, Start(t, Options{}))
		d.grant(t)
		d.wantAllowed(t, true)
		d.revoke(t)
		d.wantAllowed(t, false)
	})
	t.Run("cache on", func(t *testing.T) {
		d := newDoc(t, Start(t, Options{CheckQueryCache: true, CacheTTL: ttl}))
		d.grant(t)
		cached := time.Now()
		d.wantAllowed(t, true)
		d.revoke(t)
		d.wantAllowed(t, true) // from the cache
		// Bounded well below OpenFGA's 10s default TTL.
		testutil.EventuallyTrue(t, ttl+4*time.Second-time.Since(cached), "cached answer expired", func() bool {
			return !d.allowed(t)
		})
	})
}

// OpenFGA on PostgreSQL reads through the secondary: a standby applying
// WAL late does not show a store just created on the primary, then does.
func TestRunsOnPostgresReadingFromSecondary(t *testing.T) {
	primary := pgtest.Start(t)
	standby := primary.Standby(t, 3*time.Second)
	s := Start(t, Options{DatastoreURI: primary.SuperDSN(), SecondaryURI: standby.SuperDSN()})
	id := s.NewStore(t, "on-postgres")
	if n := countStores(t, primary, id); n != 1 {
		t.Fatalf("%d rows for store %s on the primary, want 1", n, id)
	}
	if status, body := s.mustDo(t, http.MethodGet, "/stores/"+id, nil); status != http.StatusNotFound {
		t.Fatalf("GET /stores/%s before the standby applied it: %d %s, want 404 (read from the secondary)", id, status, body)
	}
	testutil.Eventually(t, 30*time.Second, "store readable through the standby", func() error {
		status, body := s.mustDo(t, http.MethodGet, "/stores/"+id, nil)
		if status != http.StatusOK {
			return fmt.Errorf("GET /stores/%s: %d %s", id, status, body)
		}
		return nil
	})
}

func countStores(t *testing.T, pg *pgtest.Server, id string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pg.SuperDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM store WHERE id = $1", id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// doc is one store with a model where user:anne may view doc:1 through a
// direct tuple.
type doc struct {
	s            *Server
	store, model string
}

const viewerModel = `{"schema_version": "1.1", "type_definitions": [
	{"type": "user"},
	{"type": "doc", "relations": {"viewer": {"this": {}}},
	 "metadata": {"relations": {"viewer": {"directly_related_user_types": [{"type": "user"}]}}}}]}`

const anneViewsDoc = `{"user": "user:anne", "relation": "viewer", "object": "doc:1"}`

func newDoc(t *testing.T, s *Server) *doc {
	t.Helper()
	d := &doc{s: s, store: s.NewStore(t, "docs")}
	var reply struct {
		ID string `json:"authorization_model_id"`
	}
	d.post(t, "/authorization-models", viewerModel, &reply)
	if reply.ID == "" {
		t.Fatal("no authorization_model_id")
	}
	d.model = reply.ID
	return d
}

func (d *doc) grant(t *testing.T) {
	t.Helper()
	d.post(t, "/write", fmt.Sprintf(`{"authorization_model_id": %q, "writes": {"tuple_keys": [%s]}}`, d.model, anneViewsDoc), nil)
}

func (d *doc) revoke(t *testing.T) {
	t.Helper()
	d.post(t, "/write", fmt.Sprintf(`{"authorization_model_id": %q, "deletes": {"tuple_keys": [%s]}}`, d.model, anneViewsDoc), nil)
}

func (d *doc) allowed(t *testing.T) bool {
	t.Helper()
	var reply struct {
		Allowed bool `json:"allowed"`
	}
	d.post(t, "/check", fmt.Sprintf(`{"authorization_model_id": %q, "tuple_key": %s}`, d.model, anneViewsDoc), &reply)
	return reply.Allowed
}

func (d *doc) wantAllowed(t *testing.T, want bool) {
	t.Helper()
	if got := d.allowed(t); got != want {
		t.Fatalf("check user:anne viewer doc:1 = %t, want %t", got, want)
	}
}

// post sends body to the store's path and decodes a 2xx reply into reply
// (when not nil).
func (d *doc) post(t *testing.T, path, body string, reply any) {
	t.Helper()
	status, got := d.s.mustDo(t, http.MethodPost, "/stores/"+d.store+path, []byte(body))
	if status/100 != 2 {
		t.Fatalf("POST %s: %d %s", path, status, got)
	}
	if reply != nil {
		if err := json.Unmarshal(got, reply); err != nil {
			t.Fatalf("POST %s: %v in %s", path, err, got)
		}
	}
}

func (s *Server) mustDo(t *testing.T, method, path string, body []byte) (int, []byte) {
	t.Helper()
	status, reply, err := s.do(method, path, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return status, reply
}
