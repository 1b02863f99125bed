package ragtarget_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

const canaryQuery = "zebrafinch"

func TestGrantVisibleAfterACLSyncAndRevokeWithinInterval(t *testing.T) {
	e := start(t, ragtarget.Config{ContentSyncInterval: time.Second, ACLSyncInterval: 3 * time.Second})
	ctx := context.Background()
	e.create("doc-1", "the zebrafinch canary phrase")
	e.advance() // t=1s: content sync indexes the document, nobody may read it
	if e.visible(alice, canaryQuery, "doc-1") {
		t.Fatal("visible before any grant")
	}

	must(t, e.drv.Grant(ctx, "doc-1", "user:alice"))
	e.advance() // t=2s: content sync does not carry ACL changes
	if e.visible(alice, canaryQuery, "doc-1") {
		t.Fatal("grant visible before the ACL sync")
	}
	e.advance() // t=3s: first ACL sync
	if !e.visible(alice, canaryQuery, "doc-1") {
		t.Fatal("grant not visible after the ACL sync")
	}
	if e.visible(bob, canaryQuery, "doc-1") {
		t.Fatal("isolation: bob sees alice's document")
	}

	must(t, e.drv.Revoke(ctx, "doc-1", "user:alice"))
	revokedAt := e.elapsed
	for e.elapsed < revokedAt+2*time.Second {
		e.advance() // t=4s, 5s: no ACL tick yet
		if !e.visible(alice, canaryQuery, "doc-1") {
			t.Fatalf("absent at %v, before the first ACL sync after the revoke", e.elapsed)
		}
	}
	e.advance() // t=6s: ACL sync
	if e.visible(alice, canaryQuery, "doc-1") {
		t.Fatal("still visible after the ACL sync following the revoke")
	}
	if lag := e.elapsed - revokedAt; lag > e.cfg.ACLSyncInterval {
		t.Fatalf("exclusion took %v, longer than the ACL interval %v", lag, e.cfg.ACLSyncInterval)
	}
}

func TestGrantAtCreationVisibleAfterContentSync(t *testing.T) {
	e := start(t, ragtarget.Config{ContentSyncInterval: time.Second, ACLSyncInterval: 10 * time.Second})
	e.create("doc-1", "the zebrafinch canary phrase", "user:alice")
	if e.visible(alice, canaryQuery, "doc-1") {
		t.Fatal("visible before the content sync")
	}
	e.advance()
	if !e.visible(alice, canaryQuery, "doc-1") {
		t.Fatal("not visible after the content sync")
	}
}

func TestDeleteDocumentLeavesAtContentSync(t *testing.T) {
	e := start(t, ragtarget.Config{ContentSyncInterval: 2 * time.Second, ACLSyncInterval: 10 * time.Second})
	e.create("doc-1", "the zebrafinch canary phrase", "user:alice")
	e.advanceTo(2 * time.Second)
	must(t, e.drv.DeleteDocument(context.Background(), "doc-1"))
	e.advance()
	if !e.visible(alice, canaryQuery, "doc-1") {
		t.Fatal("deletion applied before the content sync")
	}
	e.advance()
	if e.visible(alice, canaryQuery, "doc-1") {
		t.Fatal("deleted document still visible after the content sync")
	}
}

func TestRemoveFromGroup(t *testing.T) {
	for _, tc := range []struct {
		name string
		// queryTime resolves groups per query instead of at ACL sync.
		queryTime bool
		// visibleUntilSync is whether removal waits for the ACL sync.
		visibleUntilSync bool
	}{
		{name: "groups expanded at sync", queryTime: false, visibleUntilSync: true},
		{name: "groups at query time", queryTime: true, visibleUntilSync: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := start(t, ragtarget.Config{ContentSyncInterval: time.Second, ACLSyncInterval: 2 * time.Second, GroupsAtQueryTime: tc.queryTime})
			must(t, e.drv.AddMember(ctx, "group:eng", "user:alice"))
			e.create("doc-1", "the zebrafinch canary phrase", "group:eng")
			e.advanceTo(2 * time.Second)
			if !e.visible(alice, canaryQuery, "doc-1") {
				t.Fatal("group member cannot see a document shared with the group")
			}
			if e.visible(bob, canaryQuery, "doc-1") {
				t.Fatal("non-member sees the group's document")
			}
			must(t, e.drv.RemoveMember(ctx, "group:eng", "user:alice"))
			if got := e.visible(alice, canaryQuery, "doc-1"); got != tc.visibleUntilSync {
				t.Fatalf("right after removal visible=%v, want %v", got, tc.visibleUntilSync)
			}
			e.advanceTo(4 * time.Second)
			if e.visible(alice, canaryQuery, "doc-1") {
				t.Fatal("removed member still sees the document after the ACL sync")
			}
		})
	}
}

func TestIdempotentSourceCalls(t *testing.T) {
	e := start(t, ragtarget.Config{})
	ctx := context.Background()
	e.create("doc-1", "body", "user:alice")
	e.create("doc-1", "body", "user:alice")
	must(t, e.drv.Grant(ctx, "doc-1", "user:bob"))
	must(t, e.drv.Grant(ctx, "doc-1", "user:bob"))
	must(t, e.drv.Revoke(ctx, "doc-1", "user:carol"))
	must(t, e.drv.AddMember(ctx, "group:eng", "user:bob"))
	must(t, e.drv.AddMember(ctx, "group:eng", "user:bob"))
	must(t, e.drv.RemoveMember(ctx, "group:none", "user:bob"))
	must(t, e.drv.DeleteDocument(ctx, "doc-1"))
	must(t, e.drv.DeleteDocument(ctx, "doc-1"))
	if err := e.drv.Revoke(ctx, "doc-1", "user:bob"); err != nil {
		t.Fatalf("revoke on a deleted document: %v", err)
	}
}

func TestAnswerCitesChunks(t *testing.T) {
	e := start(t, ragtarget.Config{AnswerCacheTTL: time.Minute})
	e.create("doc-1", "the zebrafinch nests near the river", "user:alice")
	e.advance()
	a, err := e.drv.Answer(context.Background(), alice, "where does the zebrafinch nest")
	must(t, err)
	if !strings.Contains(a.Text, "zebrafinch nests near the river") || len(a.Citations) != 1 || a.Citations[0] != "doc-1#0" {
		t.Fatalf("answer = %+v, want the passage quoted and cited as doc-1#0", a)
	}
}
