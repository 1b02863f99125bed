package controllers

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
	"github.com/ragcanary/ragcanary/internal/target"
)

// TestConversationRunOnChatOutlastsTheOldTurnCap: the Conversation
// surface on a chat surface, follow-ups every 100ms and an ACL lag of
// 2.5s, more follow-ups than issue 37's 16 turns before the revocation
// applies. The run concludes from what it observed: never NotExcluded
// with its lower bound at the timeout (what 16 refused turns gave), but an
// interval containing the sync, or Inconclusive saying only errors
// followed the last sighting. Once it ended, the run's conversations are
// freed.
func TestConversationRunOnChatOutlastsTheOldTurnCap(t *testing.T) {
	t.Parallel()
	const timeout = 5 * time.Second
	tg := startCRTarget(t, ragtarget.Config{}, 2500*time.Millisecond, false)
	ns := crFixture(t, tg.URL)
	crDeclareSurfaces(t, ns, tg)
	run := crRunSpec(ns, timeout, v1alpha1.SurfaceSearch, v1alpha1.SurfaceConversation)
	run.Spec.Probing.Interval = metav1.Duration{Duration: 100 * time.Millisecond}
	crCreate(t, run)

	got := crWaitDone(t, run)
	m := crSurface(t, got, v1alpha1.SurfaceConversation)
	t.Logf("verdict %s (%s); conversation %+v", got.Status.Verdict, got.Status.Message, m)
	if got.Status.Verdict == v1alpha1.VerdictNotExcluded {
		t.Fatalf("verdict NotExcluded (%s) with conversation bounds %+v: the revocation applied %s after the request",
			got.Status.Message, m.Bounds, 2500*time.Millisecond)
	}
	if got.Status.Verdict == v1alpha1.VerdictInconclusive {
		if !strings.Contains(got.Status.Message, "only probe errors") {
			t.Errorf("Inconclusive without saying why: %s", got.Status.Message)
		}
	} else {
		s, e := tg.appliedRevocation()
		req, ack := got.Status.RevokeRequestedTime.Time, got.Status.RevokeAcknowledgedTime.Time
		if !m.Excluded || m.Bounds == nil || m.Bounds.Lower == nil || m.Bounds.Upper == nil || s.IsZero() {
			t.Fatalf("conversation: %+v, want excluded with both bounds", m)
		}
		if ack.Add(m.Bounds.Lower.Duration).After(e) || req.Add(m.Bounds.Upper.Duration).Before(s) {
			t.Errorf("conversation: interval [%s, %s] does not contain the ACL sync at [%s, %s]",
				m.Bounds.Lower.Duration, m.Bounds.Upper.Duration, s.Sub(req), e.Sub(req))
		}
		if m.Probes.Errors != 0 || m.Probes.Positive < 16 {
			t.Errorf("conversation probes %+v, want more than 16 turns' sightings and no errors", m.Probes)
		}
	}
	if n := testHistory.TenantBytes(target.LimiterKey(ns, "target")); n != 0 {
		t.Errorf("the corpus still holds %d bytes of conversation history after its run ended", n)
	}
	crAssertNoToken(t, got)
}
