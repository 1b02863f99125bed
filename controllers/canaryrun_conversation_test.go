package controllers

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/controllers/revocationcanary"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// conversationIDPattern is the contract's ID pattern, which status enforces.
var conversationIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@-]{0,199}$`)

// TestConversationRunExcludedWithinACLLag: ragtarget re-authorises every
// follow-up, so once the ACL sync applied the revocation (2s after the
// request, at a moment the test's target controls) follow-ups in the
// conversation started before it stop showing the canary. The measured
// interval contains the sync, as for search.
func TestConversationRunExcludedWithinACLLag(t *testing.T) {
	t.Parallel()
	tg := startCRTarget(t, ragtarget.Config{}, 2*time.Second, false)
	ns := crFixture(t, tg.URL)
	crRaiseRateLimit(t, ns, "target")
	run := crRun(t, ns, 20*time.Second, v1alpha1.SurfaceSearch, v1alpha1.SurfaceConversation)

	got := crWaitDone(t, run)
	if got.Status.Verdict != v1alpha1.VerdictSLOMet {
		t.Fatalf("verdict %s (%s), want SLOMet", got.Status.Verdict, got.Status.Message)
	}
	if !conversationIDPattern.MatchString(got.Status.ConversationID) {
		t.Fatalf("status.conversationID = %q, want the ID of the conversation started before the revocation", got.Status.ConversationID)
	}
	s, e := tg.appliedRevocation()
	if s.IsZero() {
		t.Fatal("the revocation was never applied by the test's ACL sync")
	}
	req, ack := got.Status.RevokeRequestedTime.Time, got.Status.RevokeAcknowledgedTime.Time
	m := crSurface(t, got, v1alpha1.SurfaceConversation)
	if !m.Excluded || m.Bounds == nil || m.Bounds.Lower == nil || m.Bounds.Upper == nil {
		t.Fatalf("conversation: not excluded with both bounds: %+v", m)
	}
	lower, upper := m.Bounds.Lower.Duration, m.Bounds.Upper.Duration
	t.Logf("conversation: applied [%s, %s] after request; measured lower %s (from ack %s) upper %s; probes %+v",
		s.Sub(req), e.Sub(req), lower, ack.Sub(req), upper, m.Probes)
	if ack.Add(lower).After(e) || req.Add(upper).Before(s) {
		t.Errorf("conversation: interval [%s, %s] does not contain the ACL sync at [%s, %s]", lower, upper, s.Sub(req), e.Sub(req))
	}
	// Follow-ups saw the canary before the sync: the conversation held it.
	if m.Probes.Positive == 0 || m.Probes.Errors != 0 {
		t.Errorf("conversation: probes %+v, want sightings before the sync and no errors", m.Probes)
	}
	if m.Exclusion == "" || m.Exclusion == "?" {
		t.Errorf("the conversation surface's exclusion text = %q, want an interval", m.Exclusion)
	}
	// The control persona asks in conversations of its own and got replies.
	assertControlAnswered(t, got, v1alpha1.SurfaceConversation)
	crAssertNoToken(t, got)
}

// TestConversationRunNotExcludedWhenFollowUpsReuseHistory: with the
// conversation-memory defect, follow-ups answer from what earlier turns
// cited. Search is excluded at the ACL sync; the conversation keeps serving
// the revoked canary until the timeout: NotExcluded, right-censored.
func TestConversationRunNotExcludedWhenFollowUpsReuseHistory(t *testing.T) {
	t.Parallel()
	const timeout = 4 * time.Second
	tg := startCRTarget(t, ragtarget.Config{ConversationReusesHistory: true}, 500*time.Millisecond, false)
	ns := crFixture(t, tg.URL)
	crRaiseRateLimit(t, ns, "target")
	run := crRun(t, ns, timeout, v1alpha1.SurfaceSearch, v1alpha1.SurfaceConversation)

	got := crWaitDone(t, run)
	if got.Status.Verdict != v1alpha1.VerdictNotExcluded {
		t.Fatalf("verdict %s (%s), want NotExcluded", got.Status.Verdict, got.Status.Message)
	}
	if s, _ := tg.appliedRevocation(); s.IsZero() {
		t.Fatal("the revocation was never applied: NotExcluded would prove nothing")
	}
	if search := crSurface(t, got, v1alpha1.SurfaceSearch); !search.Excluded {
		t.Errorf("search: not excluded although the index applied the revocation: %+v", search)
	}
	m := crSurface(t, got, v1alpha1.SurfaceConversation)
	if m.Excluded || m.Bounds == nil || m.Bounds.Lower == nil || m.Bounds.Upper != nil {
		t.Fatalf("conversation: %+v, want right-censored (a lower bound, no upper bound)", m)
	}
	if m.Bounds.Lower.Duration < timeout-time.Second || m.Probes.Positive < 3 || m.Probes.Errors != 0 {
		t.Errorf("conversation: lower bound %s, probes %+v; want sightings until about the %s timeout", m.Bounds.Lower.Duration, m.Probes, timeout)
	}
	if !strings.HasPrefix(m.Exclusion, ">") {
		t.Errorf("the conversation surface's exclusion text = %q, want a lower bound only", m.Exclusion)
	}
	crAssertNoToken(t, got)
}

// TestConversationRunOnTargetWithoutConversations: a target that does not
// report the conversation capability (a v1.0 server) cannot be probed on
// the Conversation surface; the run says so and touches nothing.
func TestConversationRunOnTargetWithoutConversations(t *testing.T) {
	t.Parallel()
	tg := startCRTargetWith(t, ragtarget.Config{}, crTargetOptions{
		capabilities: `{"contractVersion":"v1","revocationMethods":["RemoveGrant","RemoveFromGroup","DeleteDocument"],"answer":true}`,
	})
	ns := crFixture(t, tg.URL)
	run := crRun(t, ns, 10*time.Second, v1alpha1.SurfaceSearch, v1alpha1.SurfaceConversation)

	got := crWaitDone(t, run)
	if got.Status.Verdict != v1alpha1.VerdictSetupFailed || !strings.Contains(got.Status.Message, "cannot measure Conversation") {
		t.Fatalf("verdict %s (%s), want SetupFailed naming the missing conversation surface", got.Status.Verdict, got.Status.Message)
	}
	if got.Status.ConversationID != "" || got.Status.RevokeRequestedTime != nil {
		t.Errorf("the run went on: conversationID %q, revokeRequested %v", got.Status.ConversationID, got.Status.RevokeRequestedTime)
	}
}

func assertControlAnswered(t *testing.T, run *v1alpha1.CanaryRun, s v1alpha1.Surface) {
	t.Helper()
	for _, c := range run.Status.ControlProbes {
		if c.Surface == s {
			if c.Answered == 0 || c.Errors != 0 {
				t.Errorf("control %s on %s: %+v, want valid replies only", c.Persona, s, c)
			}
			return
		}
	}
	t.Errorf("no control probe counts for %s", s)
}

// TestConversationRunRestartFollowsUpInTheSameConversation stops the
// operator after the revocation reached the index, under the
// conversation-memory defect. Only the conversation started before the
// revocation still shows the canary (a new one is authorised afresh), so
// the run can end NotExcluded only if the restarted operator follows up in
// the conversation whose ID was persisted before the revocation.
func TestConversationRunRestartFollowsUpInTheSameConversation(t *testing.T) {
	t.Parallel() // its own API server and operator
	cfg, c := startOwnAPIServer(t)
	tg := startCRTargetWith(t, ragtarget.Config{ConversationReusesHistory: true}, crTargetOptions{lag: 200 * time.Millisecond})
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "restart-conv-"}}
	crCreateIn(t, c, ns)
	crFixtureIn(t, c, ns.Name, tg.URL)
	run := crRunSpec(ns.Name, 6*time.Second, v1alpha1.SurfaceSearch, v1alpha1.SurfaceConversation)
	crCreateIn(t, c, run)

	first := startTestOperator(t, cfg, 250*time.Millisecond)
	var before *v1alpha1.CanaryRun
	testutil.Eventually(t, eventuallyTimeout, "search excluded after the revocation, the conversation still showing the canary", func() error {
		got := crGetIn(t, c, run)
		if got.Status.Phase != v1alpha1.PhaseAwaitingExclusion || len(got.Status.Surfaces) != 2 {
			return fmt.Errorf("phase %q (%s)", got.Status.Phase, got.Status.Message)
		}
		if !crSurface(t, got, v1alpha1.SurfaceSearch).Excluded {
			return fmt.Errorf("search not excluded yet")
		}
		before = got
		return nil
	})
	first.stop()
	if before.Status.ConversationID == "" || before.Status.RevokeRequestedTime == nil {
		t.Fatalf("conversationID %q persisted with revokeRequested %v", before.Status.ConversationID, before.Status.RevokeRequestedTime)
	}
	startTestOperator(t, cfg, 250*time.Millisecond)

	got := crWaitDoneIn(t, c, run)
	if got.Status.Verdict != v1alpha1.VerdictNotExcluded {
		t.Fatalf("verdict %s (%s), want NotExcluded: the restarted operator did not follow up in the same conversation", got.Status.Verdict, got.Status.Message)
	}
	if got.Status.ConversationID != before.Status.ConversationID {
		t.Errorf("conversationID changed across the restart: %q → %q", before.Status.ConversationID, got.Status.ConversationID)
	}
	if m := crSurface(t, got, v1alpha1.SurfaceConversation); m.Excluded || m.Probes.Errors != 0 || m.LastReply != "Present" {
		t.Errorf("conversation after the restart: %+v, want still present, no errors", m)
	}
}

// TestSummariseCarriesConversationText: the canary's lastRun shows the
// conversation interval next to search's, right-censored as ">…".
func TestSummariseCarriesConversationText(t *testing.T) {
	t.Parallel()
	run := &v1alpha1.CanaryRun{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Status: v1alpha1.CanaryRunStatus{
		Verdict: v1alpha1.VerdictNotExcluded,
		Surfaces: []v1alpha1.SurfaceMeasurement{
			{Surface: v1alpha1.SurfaceSearch, Bounds: objects.Bounds(time.Second, 2*time.Second)},
			{Surface: v1alpha1.SurfaceConversation, Bounds: objects.Bounds(30*time.Second, -1)},
		}}}
	s := revocationcanary.Summarise(run)
	search, conv := s.Surface(v1alpha1.SurfaceSearch), s.Surface(v1alpha1.SurfaceConversation)
	if search == nil || conv == nil || search.Exclusion != "1s–2s" || conv.Exclusion != ">30s" {
		t.Fatalf("summary surfaces %+v, want search 1s–2s and conversation >30s", s.Surfaces)
	}
	// The bounds too, so the plugin shows them once the run is deleted.
	if b := conv.Bounds; b == nil || b.Lower == nil || b.Lower.Duration != 30*time.Second || b.Upper != nil {
		t.Errorf("summary conversation bounds %+v, want lower 30s and no upper", b)
	}
	if s.Surface(v1alpha1.SurfaceAnswer) != nil || len(s.Surfaces) != 2 {
		t.Errorf("summary surfaces %+v: a surface the run did not probe has an entry", s.Surfaces)
	}
}
