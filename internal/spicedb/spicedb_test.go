package spicedb_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "github.com/authzed/authzed-go/proto/authzed/api/v1"

	"github.com/ragcanary/ragcanary/internal/dev/spicedbtest"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/spicedb"
)

const timeout = 5 * time.Second

func TestPermissionsAgainstRealSpiceDB(t *testing.T) {
	srv := spicedbtest.Start(t, spicedbtest.Options{Quantization: 100 * time.Millisecond})
	client, err := spicedb.Dial(srv.Endpoint, srv.Key, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m := spicedb.DefaultMapping
	if err := spicedb.EnsureSchema(ctx, client, m, timeout); err != nil {
		t.Fatalf("writing the reference schema: %v", err)
	}
	if err := spicedb.CheckSchema(ctx, client, m, timeout); err != nil {
		t.Fatalf("the reference schema fails its own check: %v", err)
	}
	perms := spicedb.NewPermissions(client, m, timeout)
	authz := spicedb.NewAuthorizer(client, m, spicedb.FullyConsistent, timeout)
	readable := func(principal string) map[string]struct{} {
		t.Helper()
		ids, err := authz.Readable(ctx, principal)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	has := func(principal, doc string) bool { _, ok := readable(principal)[doc]; return ok }

	// A direct grant, then its revocation; revoking twice is no error.
	if err := perms.Grant(ctx, "rc-1", "alice"); err != nil {
		t.Fatal(err)
	}
	if !has("alice", "rc-1") || has("bob", "rc-1") {
		t.Fatal("direct grant: want alice and not bob")
	}
	for range 2 {
		if err := perms.Revoke(ctx, "rc-1", "alice"); err != nil {
			t.Fatal(err)
		}
	}
	if has("alice", "rc-1") {
		t.Fatal("alice still reads rc-1 after the revocation (fully consistent)")
	}

	// Through a group: membership plus a group grant; removing the member ends it.
	if err := perms.AddMember(ctx, "engineering", "bob"); err != nil {
		t.Fatal(err)
	}
	if err := perms.GrantGroup(ctx, "rc-2", "engineering"); err != nil {
		t.Fatal(err)
	}
	if !has("bob", "rc-2") || has("alice", "rc-2") {
		t.Fatal("group grant: want bob (member) and not alice")
	}
	if err := perms.RemoveMember(ctx, "engineering", "bob"); err != nil {
		t.Fatal(err)
	}
	if has("bob", "rc-2") {
		t.Fatal("bob still reads rc-2 after leaving the group")
	}
	if err := perms.RevokeGroup(ctx, "rc-2", "engineering"); err != nil {
		t.Fatal(err)
	}

	// IDs SpiceDB cannot hold are refused, not rewritten.
	if err := perms.Grant(ctx, "rc-3", "alice@example.com"); !driver.IsPermanent(err) {
		t.Fatalf("grant to an invalid object ID: %v, want a permanent error", err)
	}
}

func TestCheckSchemaNamesWhatIsMissing(t *testing.T) {
	srv := spicedbtest.Start(t, spicedbtest.Options{})
	client, err := spicedb.Dial(srv.Endpoint, srv.Key, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var sp *spicedb.SchemaProblem
	if err := spicedb.CheckSchema(ctx, client, spicedb.DefaultMapping, timeout); !errors.As(err, &sp) {
		t.Fatalf("empty SpiceDB: %v, want a schema problem", err)
	}
	// A schema whose document relation takes no group members.
	if _, err := client.WriteSchema(ctx, &v1.WriteSchemaRequest{Schema: `definition user {}

definition group {
	relation member: user
}

definition document {
	relation reader: user
}`}); err != nil {
		t.Fatal(err)
	}
	err = spicedb.CheckSchema(ctx, client, spicedb.DefaultMapping, timeout)
	if !errors.As(err, &sp) || !strings.Contains(sp.Message, `"viewer"`) {
		t.Fatalf("got %v, want a problem naming relation viewer", err)
	}
	m := spicedb.DefaultMapping
	m.GrantRelation = "reader"
	err = spicedb.CheckSchema(ctx, client, m, timeout)
	if !errors.As(err, &sp) || !strings.Contains(sp.Message, "group#member") {
		t.Fatalf("got %v, want a problem naming the missing group#member subject type", err)
	}
	// EnsureSchema never overwrites a user's schema.
	if err := spicedb.EnsureSchema(ctx, client, spicedb.DefaultMapping, timeout); !errors.As(err, &sp) {
		t.Fatalf("EnsureSchema over an existing schema: %v, want the problem reported", err)
	}
}

func TestWrongKeyIsUnauthorized(t *testing.T) {
	srv := spicedbtest.Start(t, spicedbtest.Options{})
	client, err := spicedb.Dial(srv.Endpoint, "not-the-key", true, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = spicedb.NewPermissions(client, spicedb.DefaultMapping, timeout).Grant(context.Background(), "rc-1", "alice")
	if !driver.IsUnauthorized(err) {
		t.Fatalf("got %v, want unauthorized", err)
	}
	if strings.Contains(err.Error(), "not-the-key") || strings.Contains(err.Error(), srv.Key) {
		t.Fatalf("error reveals a key: %v", err)
	}
}
