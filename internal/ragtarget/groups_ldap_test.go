package ragtarget_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/dev/ldaptest"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/targettest"
	"github.com/ragcanary/ragcanary/internal/directory"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// ldapGroups starts OpenLDAP with users user:alice and user:bob (their uid
// is the persona principal) and a groupOfNames eng holding user:alice, and
// returns the server and ragtarget's group source reading it.
func ldapGroups(t *testing.T) (*ldaptest.Server, ragtarget.GroupSource) {
	t.Helper()
	srv := ldaptest.Start(t)
	aliceDN := srv.AddUser(t, "user:alice", "alice-password")
	srv.AddUser(t, "user:bob", "bob-password")
	srv.AddGroup(t, "eng", ldaptest.GroupOfNames, aliceDN)
	dir, err := directory.New(directory.Config{URL: srv.URL(), BindDN: srv.BindDN(), BindPassword: srv.BindPassword(),
		GroupDN: "cn={group}," + srv.GroupsDN(), MemberAttribute: "member", UserDN: "uid={subject}," + srv.PeopleDN()})
	if err != nil {
		t.Fatalf("directory.New: %v", err)
	}
	t.Cleanup(func() { _ = dir.Close() })
	return srv, ragtarget.DirectoryGroups(dir)
}

// TestDirectoryGroupsFromOpenLDAP steps the group sync by hand: what the
// directory says reaches the filter at a sync and only then.
func TestDirectoryGroupsFromOpenLDAP(t *testing.T) {
	srv, groups := ldapGroups(t)
	e := start(t, ragtarget.Config{GroupsAtQueryTime: true, Groups: groups, GroupsSyncInterval: targettest.Manual})
	e.create("doc-1", "the zebrafinch canary phrase", "eng")
	e.create("doc-2", "the zebrafinch canary phrase", "user:bob")
	must(t, e.svc.SyncNow(ragtarget.SyncContent))
	if e.visible(alice, canaryQuery, "doc-1") {
		t.Fatal("alice sees the group's document before any group sync")
	}

	must(t, e.svc.SyncNow(ragtarget.SyncGroups))
	if !e.visible(alice, canaryQuery, "doc-1") {
		t.Fatal("alice, in eng in the directory, does not see eng's document after a group sync")
	}
	if e.visible(bob, canaryQuery, "doc-1") || !e.visible(bob, canaryQuery, "doc-2") {
		t.Fatal("bob sees eng's document, or lost his own grant")
	}
	if failed := e.lastGroupSync().Failed; len(failed) != 0 {
		t.Fatalf("sync failed for %v: user:bob, no group in the directory, must read as no group", failed)
	}

	srv.RemoveMember(t, "eng", srv.UserDN("user:alice"))
	if !e.visible(alice, canaryQuery, "doc-1") {
		t.Fatal("the directory's removal reached the filter without a group sync")
	}
	must(t, e.svc.SyncNow(ragtarget.SyncGroups))
	if e.visible(alice, canaryQuery, "doc-1") {
		t.Fatal("alice still sees eng's document after the group sync that read her removal")
	}
}

// probe is one search as alice and when it was in flight.
type probe struct {
	sent, received time.Time
	visible        bool
}

// TestDirectoryGroupSyncBoundsOpenLDAP runs the group sync on its real
// schedule and probes like a canary: the sync that applied the removal is
// the first after the directory change, and it lies between the last probe
// that saw the document and the first that did not.
func TestDirectoryGroupSyncBoundsOpenLDAP(t *testing.T) {
	srv, groups := ldapGroups(t)
	const every = 250 * time.Millisecond
	tg := targettest.Start(t, ragtarget.Config{Tokens: map[string]string{alice.Reveal(): "user:alice"},
		GroupsAtQueryTime: true, Groups: groups, GroupsSyncInterval: every})
	drv := tg.Driver(t, 2*time.Second)
	tg.Plant(t, driver.Document{ID: "doc-1", Title: "Doc doc-1", Body: "the zebrafinch canary phrase", Principals: []string{"eng"}})
	testutil.EventuallyTrue(t, waitTimeout, "alice sees eng's document after a group sync", func() bool {
		return search(t, drv).visible
	})

	changing := time.Now()
	srv.RemoveMember(t, "eng", srv.UserDN("user:alice"))
	changed := time.Now()
	var probes []probe
	testutil.EventuallyTrue(t, waitTimeout+4*every, "alice loses eng's document", func() bool {
		probes = append(probes, search(t, drv))
		return !probes[len(probes)-1].visible
	})

	syncs := tg.GroupSyncs()
	removal := firstSyncRemoving(t, syncs, ragtarget.Membership{Group: "eng", Member: "user:alice"})
	if !removal.Applied.After(changing) {
		t.Fatalf("removal applied at %v, before the directory change was sent at %v", removal.Applied, changing)
	}
	if next := firstSyncBeganAfter(syncs, changed); next != nil && removal.Began.After(next.Began) {
		t.Fatalf("removal applied by the sync begun %v, not the first begun after the change (%v)", removal.Began, next.Began)
	}
	checkProbesAround(t, probes, removal.Applied)
	t.Logf("directory change → removal applied: %v (sync every %v, this one read %d grantees in %v); %d probes; first unseen answered %v after it",
		removal.Applied.Sub(changed), every, removal.Groups, removal.Applied.Sub(removal.Began), len(probes), probes[len(probes)-1].received.Sub(removal.Applied))
}

func search(t *testing.T, drv driver.Searcher) probe {
	t.Helper()
	p := probe{sent: time.Now()}
	hits, err := drv.Search(context.Background(), alice, canaryQuery, 10)
	if err != nil {
		t.Fatalf("Search: %v", err)
	}
	p.received = time.Now()
	p.visible = slices.ContainsFunc(hits, func(h driver.Hit) bool { return h.DocumentID == "doc-1" })
	return p
}

func firstSyncBeganAfter(syncs []ragtarget.GroupSync, at time.Time) *ragtarget.GroupSync {
	for i := range syncs {
		if syncs[i].Began.After(at) {
			return &syncs[i]
		}
	}
	return nil
}

// checkProbesAround holds every probe against the instant the removal was
// applied: one that saw the document was sent before it, one that did not
// came back after it.
func checkProbesAround(t *testing.T, probes []probe, applied time.Time) {
	t.Helper()
	for _, p := range probes {
		if p.visible && !p.sent.Before(applied) {
			t.Errorf("a probe sent %v after the removal was applied still saw the document", p.sent.Sub(applied))
		}
		if !p.visible && p.received.Before(applied) {
			t.Errorf("a probe answered %v before the removal was applied no longer saw the document", applied.Sub(p.received))
		}
	}
}
