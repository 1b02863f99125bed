package controllers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/ldaptest"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/targettest"
	"github.com/ragcanary/ragcanary/internal/directory"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// ragtargetGroupsEvery is the reference target's directory group sync in
// this test (Onyx syncs groups every 5–30 minutes, Glean every 10).
const ragtargetGroupsEvery = 3 * time.Second

// TestRagtargetDirectoryGroupSync: ragtarget takes its groups from OpenLDAP
// every ragtargetGroupsEvery and resolves them at query time; the Corpus
// names the same directory as its group authority. A RemoveFromGroup
// canary removes alice from the group in the directory, and its bounds
// contain the first group sync that read the directory after the change.
func TestRagtargetDirectoryGroupSync(t *testing.T) {
	t.Parallel() // its own directory, target and namespace; its bounds are checked against the target's own sync record
	dir := ldaptest.Start(t)
	for _, subject := range []string{"alice@example.com", "mallory@example.com"} {
		dir.AddUser(t, subject, "unused")
	}
	dir.AddGroup(t, "engineering", ldaptest.GroupOfNames)
	groups, err := directory.New(directory.Config{URL: dir.URL(), BindDN: dir.BindDN(), BindPassword: dir.BindPassword(),
		GroupDN: "cn={group}," + dir.GroupsDN(), MemberAttribute: "member", UserDN: "uid={subject}," + dir.PeopleDN()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = groups.Close() })
	tg := targettest.Start(t, ragtarget.Config{
		SourceToken: testSourceToken, Tokens: fixtureTokens(),
		ContentSyncInterval: 200 * time.Millisecond, ACLSyncInterval: 200 * time.Millisecond,
		GroupsAtQueryTime: true, Groups: ragtarget.DirectoryGroups(groups), GroupsSyncInterval: ragtargetGroupsEvery,
	})
	ns := crFixture(t, tg.URL)
	createSecret(t, ns, "directory", "password", dir.BindPassword())
	patchCorpus(t, &v1alpha1.Corpus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fixtureCorpus}}, `{"spec":{"directory":{"type":"LDAP","ldap":{`+
		`"url":"`+dir.URL()+`","bindDN":"`+dir.BindDN()+`","bindPasswordSecretRef":{"name":"directory","key":"password"},`+
		`"groupDN":"cn={group},`+dir.GroupsDN()+`","userDN":"uid={subject},`+dir.PeopleDN()+`"}}}}`)
	run := objects.CanaryRun(ns, "run", onTarget, objects.Revoke(v1alpha1.RevokeRemoveFromGroup, "engineering"),
		objects.Timeouts(30*time.Second, 30*time.Second))
	crCreate(t, run)
	got := crWaitDone(t, run)
	if got.Status.Verdict != v1alpha1.VerdictSLOMet {
		t.Fatalf("verdict %s (%s), want SLOMet", got.Status.Verdict, got.Status.Message)
	}
	m := crSurface(t, got, v1alpha1.SurfaceSearch)
	if m.Bounds == nil || m.Bounds.Lower == nil || m.Bounds.Upper == nil {
		t.Fatalf("search bounds %+v, want both", m.Bounds)
	}
	ack := got.Status.RevokeAcknowledgedTime.Time
	// The first sync that began reading after the directory acknowledged
	// the removal is the one that applied it.
	var applied time.Time
	for _, s := range tg.GroupSyncs() {
		if s.Began.After(ack) {
			applied = s.Applied
			break
		}
	}
	if applied.IsZero() {
		t.Fatalf("no group sync began after the removal at %s: %+v", ack, tg.GroupSyncs())
	}
	lower, upper := ack.Add(m.Bounds.Lower.Duration), got.Status.RevokeRequestedTime.Add(m.Bounds.Upper.Duration)
	t.Logf("group sync applied the removal %s after it; measured [%s, %s]; visible after %s",
		applied.Sub(ack), m.Bounds.Lower.Duration, m.Bounds.Upper.Duration, got.Status.TimeToVisibility.Duration)
	if lower.After(applied) || upper.Before(applied) {
		t.Errorf("measured [%s, %s] does not contain the sync that applied the removal, %s after it",
			m.Bounds.Lower.Duration, m.Bounds.Upper.Duration, applied.Sub(ack))
	}
	if members, err := groups.Members(t.Context(), "engineering"); err != nil || len(members) != 0 {
		t.Errorf("the directory group after cleanup: %v (err %v), want no members", members, err)
	}
}
