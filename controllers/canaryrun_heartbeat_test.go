package controllers

import (
	"fmt"
	"testing"
	"time"

	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/metrics"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// TestCanaryRunHeartbeatWritesOnChangeNotOnAClock runs an operator whose
// heartbeat never comes due during the test, so every status write it makes
// while probing is one persistNow asked for. While the revoked token stays
// visible, probe rounds write nothing; the first negative is persisted at
// once, with the last sighting before it, which is the exact lower bound.
func TestCanaryRunHeartbeatWritesOnChangeNotOnAClock(t *testing.T) {
	t.Parallel() // its own API server and operator
	const (
		interval = 200 * time.Millisecond // crRunSpec's probe interval
		// slack absorbs scheduling on a loaded machine.
		slack = time.Second
	)
	cfg, c := startOwnAPIServer(t)
	tg := startCRTargetWith(t, ragtarget.Config{}, crTargetOptions{hold: true})
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "heartbeat-"}}
	crCreateIn(t, c, nsObj)
	ns := nsObj.Name
	crFixtureIn(t, c, ns, tg.URL)
	run := crRunSpec(ns, 2*time.Minute, v1alpha1.SurfaceSearch)
	// Not confirmed for 20 s (100 × 200ms): the streak stays open, so the test
	// can look at status between the first negative and the verdict.
	run.Spec.Probing.Confirmations = 100
	crCreateIn(t, c, run)
	op := startTestOperator(t, cfg, time.Hour)
	key := types.NamespacedName{Namespace: ns, Name: run.Name}

	var first *v1alpha1.CanaryRun
	testutil.Eventually(t, eventuallyTimeout, "the first sighting after the revocation persisted", func() error {
		first = crGetIn(t, c, run)
		if first.Status.Phase != v1alpha1.PhaseAwaitingExclusion || len(first.Status.Surfaces) == 0 ||
			first.Status.Surfaces[0].LastPositiveStart == nil {
			return fmt.Errorf("phase %q, surfaces %+v", first.Status.Phase, first.Status.Surfaces)
		}
		return nil
	})
	rounds := func() int64 {
		st, ok := op.probes.State(key)
		if !ok {
			return 0
		}
		return st.Snapshot().Rounds
	}
	// Live exposure is the probe loop's, not status's: it must advance
	// while status is not written.
	exposure := func() float64 {
		return promtestutil.ToFloat64(metrics.LiveExposure.WithLabelValues(ns, "", "target", string(v1alpha1.SurfaceSearch)))
	}
	seenRounds, seenExposure := rounds(), exposure()
	testutil.Eventually(t, eventuallyTimeout, "five more probe rounds", func() error {
		if n := rounds(); n < seenRounds+5 {
			return fmt.Errorf("%d rounds, want %d", n, seenRounds+5)
		}
		return nil
	})
	if got := crGetIn(t, c, run); got.ResourceVersion != first.ResourceVersion {
		t.Errorf("status was written while nothing that cannot be re-observed changed: %+v", got.Status.Surfaces)
	}
	if got := exposure(); got <= seenExposure {
		t.Errorf("live exposure %vs after five more rounds, want more than %vs: it must not wait for a status write", got, seenExposure)
	}

	tg.release()
	var after *v1alpha1.CanaryRun
	testutil.Eventually(t, eventuallyTimeout, "the first negative persisted", func() error {
		after = crGetIn(t, c, run)
		if m := after.Status.Surfaces[0]; m.LastReply != "Absent" || m.FirstNegativeEnd == nil {
			return fmt.Errorf("lastReply %q, firstNegativeEnd %v", m.LastReply, m.FirstNegativeEnd)
		}
		return nil
	})
	op.stop()
	s, e := tg.appliedRevocation()
	m := after.Status.Surfaces[0]
	lastSeen := m.LastPositiveStart.Time
	t.Logf("last persisted sighting %s before the sync started; first negative ended %s after it ended",
		s.Sub(lastSeen), m.FirstNegativeEnd.Sub(e))
	if lastSeen.After(e) || s.Sub(lastSeen) > interval+slack {
		t.Errorf("persisted last sighting %s, want within a probe round before the sync at [%s, %s]", lastSeen, s, e)
	}
	if !lastSeen.After(first.Status.Surfaces[0].LastPositiveStart.Time) {
		t.Errorf("the last sighting was not refreshed with the first negative: still %s", lastSeen)
	}
	if m.FirstNegativeEnd.Time.Before(s) {
		t.Errorf("first negative ended %s, before the revocation reached the index at %s", m.FirstNegativeEnd.Time, s)
	}
	if after.Status.Phase != v1alpha1.PhaseAwaitingExclusion || m.Excluded {
		t.Errorf("phase %s, excluded %v: the streak should still be open", after.Status.Phase, m.Excluded)
	}
}
