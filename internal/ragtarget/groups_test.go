package ragtarget_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/contract"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// fakeDirectory is an in-memory GroupSource: groups and their members, a
// failure to answer per group, and the names it was asked about.
type fakeDirectory struct {
	mu     sync.Mutex
	groups map[string][]string
	fail   map[string]error
	asked  map[string]int
}

func newFakeDirectory() *fakeDirectory {
	return &fakeDirectory{groups: map[string][]string{}, fail: map[string]error{}, asked: map[string]int{}}
}

func (f *fakeDirectory) Members(_ context.Context, group string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked[group]++
	if err := f.fail[group]; err != nil {
		return nil, err
	}
	members, ok := f.groups[group]
	if !ok {
		return nil, ragtarget.ErrNoSuchGroup
	}
	return slices.Clone(members), nil
}

func (f *fakeDirectory) set(group string, members ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.groups[group] = members
}

func (f *fakeDirectory) failWith(group string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[group] = err
}

func (f *fakeDirectory) timesAsked(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.asked[name]
}

// advanceWithGroups advances one second and also waits for the group sync
// ticks due by then.
func (e *env) advanceWithGroups() {
	e.t.Helper()
	e.advance()
	want := uint64(e.elapsed / e.cfg.GroupsSyncInterval)
	testutil.EventuallyTrue(e.t, waitTimeout, "group sync ticks processed", func() bool {
		return e.svc.SyncCount(ragtarget.SyncGroups) == want
	})
}

// lastGroupSync is the most recent directory sync.
func (e *env) lastGroupSync() ragtarget.GroupSync {
	e.t.Helper()
	syncs := e.svc.GroupSyncs()
	if len(syncs) == 0 {
		e.t.Fatal("no group sync recorded")
	}
	return syncs[len(syncs)-1]
}

func TestDirectoryGroupRemovalWaitsForGroupSync(t *testing.T) {
	for _, tc := range []struct {
		name string
		// queryTime resolves groups per query instead of at ACL sync.
		queryTime bool
		// aclSync is the ACL sync's interval; the group sync runs every 2s.
		aclSync time.Duration
		// grantSeen is the first second alice sees the group's document:
		// the group sync at 2s, plus the ACL sync when groups are flattened.
		grantSeen time.Duration
		// removalApplied is the first second alice no longer sees it,
		// the removal having been made in the directory at grantSeen.
		removalApplied time.Duration
	}{
		{name: "groups at query time", queryTime: true, aclSync: time.Hour, grantSeen: 2 * time.Second, removalApplied: 4 * time.Second},
		{name: "groups flattened at ACL sync", queryTime: false, aclSync: 3 * time.Second, grantSeen: 3 * time.Second, removalApplied: 6 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := newFakeDirectory()
			dir.set("eng", "user:alice")
			e := start(t, ragtarget.Config{ContentSyncInterval: time.Second, ACLSyncInterval: tc.aclSync,
				GroupsAtQueryTime: tc.queryTime, Groups: dir, GroupsSyncInterval: 2 * time.Second})
			e.create("doc-1", "the zebrafinch canary phrase", "eng")
			e.create("doc-2", "the zebrafinch canary phrase", "user:bob")

			e.awaitVisibility(tc.grantSeen, true)
			if e.visible(bob, canaryQuery, "doc-1") {
				t.Fatal("bob, in no group, sees the group's document")
			}
			if !e.visible(bob, canaryQuery, "doc-2") {
				t.Fatal("a grantee that is no group lost its own grant")
			}

			dir.set("eng")
			removedAt := e.elapsed
			origin := e.clk.Now().Add(-e.elapsed)
			e.awaitVisibility(tc.removalApplied, false)
			removal := firstSyncRemoving(t, e.svc.GroupSyncs(), ragtarget.Membership{Group: "eng", Member: "user:alice"})
			if at := removal.Applied.Sub(origin); at <= removedAt || at > removedAt+e.cfg.GroupsSyncInterval {
				t.Fatalf("removal applied at %v, want after the directory change at %v and within one group sync interval", at, removedAt)
			}
			if dir.timesAsked("user:bob") == 0 {
				t.Fatal("the sync never asked about the grantee user:bob")
			}
			if last := e.lastGroupSync(); len(last.Failed) != 0 || last.Groups != 2 {
				t.Fatalf("last sync asked %d grantees and failed %v, want 2 asked and none failed (user:bob is no group, not a failure)", last.Groups, last.Failed)
			}
		})
	}
}

// awaitVisibility advances until until, checking every second that alice's
// view of doc-1 is !want before until and want at until.
func (e *env) awaitVisibility(until time.Duration, want bool) {
	e.t.Helper()
	for e.elapsed < until {
		if got := e.visible(alice, canaryQuery, "doc-1"); got == want {
			e.t.Fatalf("at %v alice sees doc-1 = %v, before the sync due at %v", e.elapsed, got, until)
		}
		e.advanceWithGroups()
	}
	if got := e.visible(alice, canaryQuery, "doc-1"); got != want {
		e.t.Fatalf("at %v alice sees doc-1 = %v, want %v", e.elapsed, got, want)
	}
}

func firstSyncRemoving(t *testing.T, syncs []ragtarget.GroupSync, m ragtarget.Membership) ragtarget.GroupSync {
	t.Helper()
	for _, s := range syncs {
		if slices.Contains(s.Removed, m) {
			return s
		}
	}
	t.Fatalf("no group sync recorded removing %+v", m)
	return ragtarget.GroupSync{}
}

func TestDirectoryGroupFailedSyncKeepsMembership(t *testing.T) {
	dir := newFakeDirectory()
	dir.set("eng", "user:alice")
	e := start(t, ragtarget.Config{GroupsAtQueryTime: true, Groups: dir, GroupsSyncInterval: time.Hour})
	e.create("doc-1", "the zebrafinch canary phrase", "eng")
	must(t, e.svc.SyncNow(ragtarget.SyncContent))
	must(t, e.svc.SyncNow(ragtarget.SyncGroups))
	if !e.visible(alice, canaryQuery, "doc-1") {
		t.Fatal("member does not see the group's document after a sync")
	}

	dir.set("eng")
	dir.failWith("eng", errors.New("connection reset"))
	err := e.svc.SyncNow(ragtarget.SyncGroups)
	if err == nil || !strings.Contains(err.Error(), `"eng"`) {
		t.Fatalf("failed sync error = %v, want one naming the group", err)
	}
	if got := e.lastGroupSync().Failed; !slices.Equal(got, []string{"eng"}) {
		t.Fatalf("failed groups = %v, want [eng]", got)
	}
	if !e.visible(alice, canaryQuery, "doc-1") {
		t.Fatal("a failed read was taken as a group without members")
	}

	dir.failWith("eng", nil)
	must(t, e.svc.SyncNow(ragtarget.SyncGroups))
	if e.visible(alice, canaryQuery, "doc-1") {
		t.Fatal("the removal read by the next good sync was not applied")
	}
}

func TestDirectoryGroupSyncInvalidatesCachedAnswers(t *testing.T) {
	dir := newFakeDirectory()
	dir.set("eng", "user:alice")
	e := start(t, ragtarget.Config{GroupsAtQueryTime: true, Groups: dir, GroupsSyncInterval: time.Hour, AnswerCacheTTL: time.Hour})
	e.create("doc-1", "the zebrafinch nests near the river", "eng")
	must(t, e.svc.SyncNow(ragtarget.SyncContent))
	must(t, e.svc.SyncNow(ragtarget.SyncGroups))
	const question = "where does the zebrafinch nest"
	if a := e.answer(alice, question); len(a.Citations) == 0 {
		t.Fatalf("member's answer cites nothing: %+v", a)
	}
	dir.set("eng")
	must(t, e.svc.SyncNow(ragtarget.SyncGroups))
	if a := e.answer(alice, question); len(a.Citations) != 0 {
		t.Fatalf("answer cached before the removal still served after the group sync: %+v", a)
	}
}

func TestDirectoryGroupsRefuseContractMemberships(t *testing.T) {
	e := start(t, ragtarget.Config{Groups: newFakeDirectory()})
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"AddMember":    func() error { return e.drv.AddMember(ctx, "eng", "user:alice") },
		"RemoveMember": func() error { return e.drv.RemoveMember(ctx, "eng", "user:alice") },
	} {
		if err := call(); !driver.IsPermanent(err) {
			t.Errorf("%s = %v, want a permanent refusal (the request can never succeed here)", name, err)
		}
	}
	problem := e.rawMembershipCall(http.MethodPut)
	if problem.Code != "groups_from_directory" || !strings.Contains(problem.Message, "directory") {
		t.Fatalf("refusal = %+v, want code groups_from_directory saying groups come from the directory", problem)
	}
}

// rawMembershipCall adds user:alice to eng over plain HTTP and returns the
// 400 problem body, which the driver never reads.
func (e *env) rawMembershipCall(method string) contract.Problem {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+"/v1/groups/eng/members/user:alice", nil)
	must(e.t, err)
	req.Header.Set("Authorization", "Bearer "+sourceToken)
	resp, err := http.DefaultClient.Do(req)
	must(e.t, err)
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusBadRequest {
		e.t.Fatalf("status %d, want 400", resp.StatusCode)
	}
	var p contract.Problem
	must(e.t, json.NewDecoder(resp.Body).Decode(&p))
	return p
}

func TestDirectoryGroupsConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  ragtarget.Config
		// wantErr is a fragment of the refusal; empty when the config is valid.
		wantErr string
	}{
		{name: "source with default interval", cfg: ragtarget.Config{Groups: newFakeDirectory()}},
		{name: "interval without source", cfg: ragtarget.Config{GroupsSyncInterval: time.Minute}, wantErr: "needs a group source"},
		{name: "negative interval", cfg: ragtarget.Config{Groups: newFakeDirectory(), GroupsSyncInterval: -time.Second}, wantErr: "must not be negative"},
		{name: "with a query-time engine", cfg: ragtarget.Config{Groups: newFakeDirectory(), Authz: &ragtarget.SpiceDBAuthz{Endpoint: "127.0.0.1:1", Key: "k"}}, wantErr: "query-time engine"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.SourceToken = sourceToken
			svc, err := ragtarget.New(tc.cfg)
			if err == nil {
				_ = svc.Close()
			}
			if got := errText(err); (tc.wantErr == "") != (got == "") || !strings.Contains(got, tc.wantErr) {
				t.Fatalf("New: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
