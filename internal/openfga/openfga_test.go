package openfga_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/dev/openfgatest"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/openfga"
)

// Tests against a real OpenFGA (bin/openfga, in-memory datastore).

const timeout = 5 * time.Second

func dial(t *testing.T, srv *openfgatest.Server, edit func(*openfga.Config)) *openfga.Client {
	t.Helper()
	cfg := openfga.Config{APIURL: srv.URL, Token: srv.Token, Timeout: timeout}
	edit(&cfg)
	c, err := openfga.Dial(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func inStore(id string) func(*openfga.Config) {
	return func(c *openfga.Config) { c.StoreID = id }
}

// api calls OpenFGA's HTTP API directly, for what the package does not do
// (writing a user's own model, listing models).
func api(t *testing.T, srv *openfgatest.Server, method, path, body string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+srv.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	reply, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, reply)
	}
	return reply
}

// models lists the store's model IDs, newest first.
func models(t *testing.T, srv *openfgatest.Server, store string) []string {
	t.Helper()
	var reply struct {
		AuthorizationModels []struct{ ID string } `json:"authorization_models"`
	}
	if err := json.Unmarshal(api(t, srv, http.MethodGet, "/stores/"+store+"/authorization-models", ""), &reply); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range reply.AuthorizationModels {
		ids = append(ids, m.ID)
	}
	return ids
}

// writeModel writes a user's model (DSL-free JSON) and returns its ID.
func writeModel(t *testing.T, srv *openfgatest.Server, store, typeDefinitions string) string {
	t.Helper()
	var reply struct {
		ID string `json:"authorization_model_id"`
	}
	body := `{"schema_version":"1.1","type_definitions":[` + typeDefinitions + `]}`
	if err := json.Unmarshal(api(t, srv, http.MethodPost, "/stores/"+store+"/authorization-models", body), &reply); err != nil {
		t.Fatal(err)
	}
	return reply.ID
}

const (
	userDef  = `{"type":"user"}`
	groupDef = `{"type":"group","relations":{"member":{"this":{}}},"metadata":{"relations":{"member":{"directly_related_user_types":[{"type":"user"}]}}}}`
)

func documentDef(relation, refs string) string {
	return fmt.Sprintf(`{"type":"document","relations":{%[1]q:{"this":{}}},"metadata":{"relations":{%[1]q:{"directly_related_user_types":[%s]}}}}`, relation, refs)
}

func schemaProblem(t *testing.T, err error, want string) {
	t.Helper()
	var sp *openfga.SchemaProblem
	if !errors.As(err, &sp) || !strings.Contains(sp.Message, want) {
		t.Fatalf("got %v, want a schema problem naming %q", err, want)
	}
}

func TestResolveStoreByName(t *testing.T) {
	srv := openfgatest.Start(t, openfgatest.Options{})
	ctx := context.Background()
	one := srv.NewStore(t, "canary-one")
	srv.NewStore(t, "twin")
	srv.NewStore(t, "twin")
	srv.NewStore(t, "canary-one-more") // a longer name is another name

	c := dial(t, srv, func(c *openfga.Config) { c.StoreName = "canary-one" })
	if id, err := c.ResolveStore(ctx); err != nil || id != one {
		t.Fatalf("ResolveStore(canary-one) = %q, %v; want %s", id, err, one)
	}
	_, err := dial(t, srv, func(c *openfga.Config) { c.StoreName = "absent" }).ResolveStore(ctx)
	schemaProblem(t, err, `no OpenFGA store is named "absent"`)
	_, err = dial(t, srv, func(c *openfga.Config) { c.StoreName = "twin" }).ResolveStore(ctx)
	schemaProblem(t, err, `2 OpenFGA stores are named "twin"`)

	// A driver operation on an unresolvable store is a permanent failure
	// naming the problem.
	err = openfga.NewPermissions(dial(t, srv, func(c *openfga.Config) { c.StoreName = "twin" }), openfga.Mapping{}).Grant(ctx, "rc-1", "alice")
	if !driver.IsPermanent(err) || !strings.Contains(err.Error(), `named "twin"`) {
		t.Fatalf("Grant in an ambiguous store: %v, want a permanent error naming the problem", err)
	}
	// A store ID that OpenFGA does not have.
	schemaProblem(t, dial(t, srv, inStore("01J0000000000000000000000Z")).CheckModel(ctx), "OpenFGA has no store")
}

func TestCheckModelAndEnsureModel(t *testing.T) {
	srv := openfgatest.Start(t, openfgatest.Options{})
	ctx := context.Background()

	// An empty store: no model is a problem until EnsureModel writes one.
	empty := srv.NewStore(t, "empty")
	c := dial(t, srv, inStore(empty))
	schemaProblem(t, c.CheckModel(ctx), "no authorization model")
	if err := c.EnsureModel(ctx); err != nil {
		t.Fatalf("EnsureModel into an empty store: %v", err)
	}
	written := models(t, srv, empty)
	if len(written) != 1 {
		t.Fatalf("%d models after EnsureModel, want 1", len(written))
	}
	if err := c.CheckModel(ctx); err != nil {
		t.Fatalf("the reference model fails its own check: %v", err)
	}
	if err := c.EnsureModel(ctx); err != nil || !slices.Equal(models(t, srv, empty), written) {
		t.Fatalf("EnsureModel again: %v, models %v; want the one model left alone", err, models(t, srv, empty))
	}
	// The reference model pinned by ID passes; an ID the store lacks does not.
	if err := dial(t, srv, func(cfg *openfga.Config) { cfg.StoreID, cfg.AuthorizationModelID = empty, written[0] }).CheckModel(ctx); err != nil {
		t.Fatalf("pinned reference model: %v", err)
	}
	schemaProblem(t, dial(t, srv, func(cfg *openfga.Config) { cfg.StoreID, cfg.AuthorizationModelID = empty, "01J0000000000000000000000Y" }).CheckModel(ctx),
		"no authorization model 01J0000000000000000000000Y")

	// Users' models that lack what the mapping names; EnsureModel leaves
	// each alone and reports the same problem.
	for _, tc := range []struct {
		name, types, want string
		mapping           openfga.Mapping
	}{
		{"no group type", userDef + "," + documentDef("viewer", `{"type":"user"}`), `the model has no type "group"`, openfga.Mapping{}},
		{"no grant relation", userDef + "," + groupDef + "," + documentDef("reader", `{"type":"user"},{"type":"group","relation":"member"}`), `type "document" has no relation "viewer"`, openfga.Mapping{}},
		{"grant without group members", userDef + "," + groupDef + "," + documentDef("viewer", `{"type":"user"}`), "relation document#viewer does not allow subjects of type group#member", openfga.Mapping{}},
		{"renamed and checked under its own mapping", userDef + "," + groupDef + "," + documentDef("reader", `{"type":"user"},{"type":"group","relation":"member"}`), "", openfga.Mapping{GrantRelation: "reader"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := srv.NewStore(t, strings.ReplaceAll(tc.name, "#", "-"))
			id := writeModel(t, srv, store, tc.types)
			c := dial(t, srv, func(cfg *openfga.Config) { cfg.StoreID, cfg.Mapping = store, tc.mapping })
			for name, err := range map[string]error{"CheckModel": c.CheckModel(ctx), "EnsureModel": c.EnsureModel(ctx)} {
				if tc.want == "" && err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if tc.want != "" {
					schemaProblem(t, err, tc.want)
				}
			}
			if got := models(t, srv, store); !slices.Equal(got, []string{id}) {
				t.Fatalf("models %v after EnsureModel, want the user's %s alone", got, id)
			}
		})
	}
}

func TestPermissionsAgainstRealOpenFGA(t *testing.T) {
	srv := openfgatest.Start(t, openfgatest.Options{})
	ctx := context.Background()
	c := dial(t, srv, inStore(srv.NewStore(t, "permissions")))
	if err := c.EnsureModel(ctx); err != nil {
		t.Fatal(err)
	}
	perms := openfga.NewPermissions(c, openfga.Mapping{})
	authz := openfga.NewAuthorizer(c, openfga.Mapping{}, openfga.HigherConsistency)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	readable := func(principal string) []string {
		t.Helper()
		ids, err := authz.Readable(ctx, principal)
		must(err)
		return sortedKeys(ids)
	}
	allowed := func(principal string, docs ...string) []string {
		t.Helper()
		ids, err := authz.Allowed(ctx, principal, docs)
		must(err)
		return sortedKeys(ids)
	}

	// A direct grant, granted twice, then revoked twice.
	for range 2 {
		must(perms.Grant(ctx, "rc-1", "alice"))
	}
	if got := readable("alice"); !slices.Equal(got, []string{"rc-1"}) {
		t.Fatalf("alice reads %v, want [rc-1]", got)
	}
	if got := readable("bob"); len(got) != 0 {
		t.Fatalf("bob reads %v, want nothing", got)
	}
	for range 2 {
		must(perms.Revoke(ctx, "rc-1", "alice"))
	}
	if got := readable("alice"); len(got) != 0 {
		t.Fatalf("alice reads %v after the revocation, want nothing", got)
	}

	// Through a group: a group grant and a membership; leaving ends it.
	must(perms.GrantGroup(ctx, "rc-2", "engineering"))
	must(perms.GrantGroup(ctx, "rc-2", "engineering"))
	must(perms.AddMember(ctx, "engineering", "bob"))
	must(perms.AddMember(ctx, "engineering", "bob"))
	if got := readable("bob"); !slices.Equal(got, []string{"rc-2"}) {
		t.Fatalf("bob reads %v through his group, want [rc-2]", got)
	}
	for range 2 {
		must(perms.RemoveMember(ctx, "engineering", "bob"))
	}
	if got := readable("bob"); len(got) != 0 {
		t.Fatalf("bob reads %v after leaving the group, want nothing", got)
	}

	// Allowed is exactly the permitted subset of the candidates.
	must(perms.Grant(ctx, "rc-3", "alice"))
	must(perms.AddMember(ctx, "engineering", "alice"))
	must(perms.Grant(ctx, "rc-4", "bob"))
	if got := allowed("alice", "rc-1", "rc-2", "rc-3", "rc-4", "rc-missing", "rc-3"); !slices.Equal(got, []string{"rc-2", "rc-3"}) {
		t.Fatalf("Allowed(alice) = %v, want [rc-2 rc-3]", got)
	}
	must(perms.RevokeGroup(ctx, "rc-2", "engineering"))
	must(perms.RevokeGroup(ctx, "rc-2", "engineering"))
	if got := allowed("alice", "rc-2", "rc-3"); !slices.Equal(got, []string{"rc-3"}) {
		t.Fatalf("Allowed(alice) after the group's revocation = %v, want [rc-3]", got)
	}

	// Refusals that are not "already done" stay errors.
	err := openfga.NewPermissions(c, openfga.Mapping{GrantRelation: "editor"}).Grant(ctx, "rc-5", "alice")
	if !driver.IsPermanent(err) || !strings.Contains(err.Error(), "openfga ") {
		t.Fatalf("grant on a relation the model lacks: %v, want a permanent error with OpenFGA's code", err)
	}
	if strings.Contains(err.Error(), "rc-5") || strings.Contains(err.Error(), "alice") {
		t.Fatalf("the error quotes the tuple: %v", err)
	}
	if err := perms.Grant(ctx, "rc-6", "alice@example.com"); err != nil {
		t.Fatalf("an e-mail address is a valid OpenFGA ID: %v", err)
	}
	if err := perms.Grant(ctx, "rc 7", "alice"); !driver.IsPermanent(err) {
		t.Fatalf("grant of an ID with a space: %v, want a permanent error", err)
	}
}

func TestWrongTokenIsUnauthorized(t *testing.T) {
	srv := openfgatest.Start(t, openfgatest.Options{})
	ctx := context.Background()
	store := srv.NewStore(t, "guarded")
	const wrong = "not-the-preshared-key-5c1e"
	c := dial(t, srv, func(cfg *openfga.Config) { cfg.StoreID, cfg.Token = store, wrong })
	byName := dial(t, srv, func(cfg *openfga.Config) { cfg.StoreName, cfg.Token = "guarded", wrong })
	_, readErr := openfga.NewAuthorizer(c, openfga.Mapping{}, openfga.HigherConsistency).Readable(ctx, "alice")
	_, resolveErr := byName.ResolveStore(ctx)
	for name, err := range map[string]error{
		"Grant":        openfga.NewPermissions(c, openfga.Mapping{}).Grant(ctx, "rc-1", "alice"),
		"Readable":     readErr,
		"ResolveStore": resolveErr,
		"CheckModel":   c.CheckModel(ctx),
	} {
		if !driver.IsUnauthorized(err) {
			t.Errorf("%s: got %v, want unauthorized", name, err)
			continue
		}
		for _, secret := range []string{wrong, srv.Token, srv.URL} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%s: the error reveals %q: %v", name, secret, err)
			}
		}
	}
}

func sortedKeys(m map[string]struct{}) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
