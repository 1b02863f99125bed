package controllers

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// crAssertBoundsContain checks that surface s of a finished run was
// excluded with both bounds, and that the interval contains the sync that
// applied the revocation at the target: the last positive probe started
// before that sync ended, and the first negative one ended after it
// started. It also checks the interval is tight, within about a probe
// round either side.
func crAssertBoundsContain(t *testing.T, run *v1alpha1.CanaryRun, s v1alpha1.Surface, tg *crTarget) {
	t.Helper()
	start, end := tg.appliedRevocation()
	if start.IsZero() {
		t.Fatal("the revocation was never applied by the test's sync")
	}
	m := crSurface(t, run, s)
	if !m.Excluded || m.Bounds == nil || m.Bounds.Lower == nil || m.Bounds.Upper == nil {
		t.Fatalf("%s: not excluded with both bounds: %+v", s, m)
	}
	req, ack := run.Status.RevokeRequestedTime.Time, run.Status.RevokeAcknowledgedTime.Time
	lastSeen, firstGone := ack.Add(m.Bounds.Lower.Duration), req.Add(m.Bounds.Upper.Duration)
	t.Logf("%s: applied [%s, %s] after request; measured [%s, %s]; probes %+v",
		s, start.Sub(req), end.Sub(req), lastSeen.Sub(req), firstGone.Sub(req), m.Probes)
	if lastSeen.After(end) {
		t.Errorf("%s: lower bound %s puts exclusion after the sync ended", s, m.Bounds.Lower.Duration)
	}
	if firstGone.Before(start) {
		t.Errorf("%s: upper bound %s puts exclusion before the sync started", s, m.Bounds.Upper.Duration)
	}
	if lastSeen.Before(start.Add(-time.Second)) || firstGone.After(end.Add(1500*time.Millisecond)) {
		t.Errorf("%s: interval is loose around the sync", s)
	}
	if m.Probes.Positive == 0 || m.Probes.Negative < 2 {
		t.Errorf("%s: probe counts %+v, want sightings after the revocation and confirmed negatives", s, m.Probes)
	}
}

// crAssertSLOMet checks a run finished with a measurement within its SLO.
func crAssertSLOMet(t *testing.T, run *v1alpha1.CanaryRun) {
	t.Helper()
	if run.Status.Phase != v1alpha1.PhaseSucceeded || run.Status.Verdict != v1alpha1.VerdictSLOMet {
		t.Fatalf("phase %s verdict %s (%s), want Succeeded SLOMet", run.Status.Phase, run.Status.Verdict, run.Status.Message)
	}
}

// TestCanaryRunRemoveFromGroup: the run shares the canary with a group,
// adds the persona to it while sharing and removes it at revocation; the
// ACL sync applying the removal falls inside the measured interval on both
// surfaces.
func TestCanaryRunRemoveFromGroup(t *testing.T) {
	t.Parallel()
	const group = "canary-readers"
	tg := startCRTarget(t, ragtarget.Config{}, time.Second, false)
	ns := crFixture(t, tg.URL)
	run := crRunSpec(ns, 20*time.Second, v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer)
	run.Spec.Revocation = v1alpha1.Revocation{Method: v1alpha1.RevokeRemoveFromGroup, Group: group}
	crCreate(t, run)

	got := crWaitDone(t, run)
	crAssertSLOMet(t, got)
	// Only the group holds the grant, so visibility itself proves the
	// membership; the log proves it was taken away by the revocation.
	log := tg.membershipLog()
	added, removed := "PUT "+group+"/alice@example.com", "DELETE "+group+"/alice@example.com"
	if len(log) < 2 || log[0] != added || log[1] != removed {
		t.Errorf("membership requests %q, want %q then %q", log, added, removed)
	}
	if slices.ContainsFunc(log, func(l string) bool { return strings.Contains(l, "mallory") }) {
		t.Errorf("the control persona's membership was changed: %q", log)
	}
	for _, s := range []v1alpha1.Surface{v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer} {
		crAssertBoundsContain(t, got, s, tg)
	}
	if !tg.deleted(got.Status.DocumentID) {
		t.Error("the canary document was not deleted during CleaningUp")
	}
	crAssertNoToken(t, got)
}

// TestCanaryRunDeleteDocument: the revocation deletes the canary document;
// exclusion follows the content sync that drops it from the index, and the
// document stays gone.
func TestCanaryRunDeleteDocument(t *testing.T) {
	t.Parallel()
	tg := startCRTargetWith(t, ragtarget.Config{}, crTargetOptions{lag: time.Second, revokeSync: ragtarget.SyncContent})
	ns := crFixture(t, tg.URL)
	run := crRunSpec(ns, 20*time.Second, v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer)
	run.Spec.Revocation = v1alpha1.Revocation{Method: v1alpha1.RevokeDeleteDocument}
	crCreate(t, run)

	got := crWaitDone(t, run)
	crAssertSLOMet(t, got)
	for _, s := range []v1alpha1.Surface{v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer} {
		crAssertBoundsContain(t, got, s, tg)
	}
	doc := got.Status.DocumentID
	if !tg.deleted(doc) {
		t.Fatal("the canary document was never deleted")
	}
	// Gone afterwards: another content sync does not bring it back.
	if err := tg.SyncNow(ragtarget.SyncContent); err != nil {
		t.Fatal(err)
	}
	hits, err := tg.Driver(t, 2*time.Second).Search(context.Background(), driver.Token(testAliceToken), crToken(t, got), 10)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(hits, func(h driver.Hit) bool { return h.DocumentID == doc }) {
		t.Error("the deleted canary document is still retrievable")
	}
	crAssertNoToken(t, got)
}

// TestCanaryRunUnsupportedByTarget: a canary asking for something the
// target's capabilities do not list ends SetupFailed before anything is
// written to the target, with a message naming what is unsupported.
func TestCanaryRunUnsupportedByTarget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// capabilities is the target's reply.
		capabilities string
		// method and surfaces the canary asks for.
		method   v1alpha1.RevocationMethod
		surfaces []v1alpha1.Surface
		// wantInMessage must appear in the run's message.
		wantInMessage []string
	}{
		{
			name:          "answer surface on a search-only target",
			capabilities:  `{"contractVersion":"v1","answer":false,"revocationMethods":["RemoveGrant","RemoveFromGroup","DeleteDocument"]}`,
			method:        v1alpha1.RevokeRemoveGrant,
			surfaces:      []v1alpha1.Surface{v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer},
			wantInMessage: []string{"cannot measure Answer (needs an answer endpoint or spec.surfaces.chat)", "it can measure Search"},
		},
		{
			name:          "revocation method not listed",
			capabilities:  `{"contractVersion":"v1","answer":true,"revocationMethods":["RemoveGrant"]}`,
			method:        v1alpha1.RevokeDeleteDocument,
			surfaces:      []v1alpha1.Surface{v1alpha1.SurfaceSearch},
			wantInMessage: []string{"revocation method DeleteDocument", "supports RemoveGrant"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tg := startCRTargetWith(t, ragtarget.Config{}, crTargetOptions{capabilities: tc.capabilities})
			ns := crFixture(t, tg.URL)
			run := crRunSpec(ns, 5*time.Second, tc.surfaces...)
			run.Spec.Revocation = v1alpha1.Revocation{Method: tc.method}
			crCreate(t, run)

			got := crWaitDone(t, run)
			if got.Status.Phase != v1alpha1.PhaseFailed || got.Status.Verdict != v1alpha1.VerdictSetupFailed {
				t.Fatalf("phase %s verdict %s (%s), want Failed SetupFailed", got.Status.Phase, got.Status.Verdict, got.Status.Message)
			}
			for _, want := range tc.wantInMessage {
				if !strings.Contains(got.Status.Message, want) {
					t.Errorf("message %q does not name %q", got.Status.Message, want)
				}
			}
			if got.Status.DocumentID != "" || got.Status.TokenSecretName != "" || got.Status.ShareRequestedTime != nil {
				t.Errorf("the run went past setup: canaryrun.DocumentID %q tokenSecret %q", got.Status.DocumentID, got.Status.TokenSecretName)
			}
		})
	}
}
