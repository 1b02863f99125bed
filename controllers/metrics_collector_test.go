package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
)

// TestCanaryGaugesWithoutReconciledCompletion is the restart case. The
// canary's last run finished under an earlier operator process: its result
// is in status (written here as that operator wrote it) and this manager
// never saw a run complete. The next run is six hours away. The gauges the
// stale and SLO alerts join on must be served all the same, and go when
// the canary goes.
func TestCanaryGaugesWithoutReconciledCompletion(t *testing.T) {
	f := newCanaryFixture(t, allCanaryRefs, func(c *v1alpha1.RevocationCanary) {
		c.Spec.Schedule = v1alpha1.Schedule{Every: &metav1.Duration{Duration: 6 * time.Hour}}
	})
	f.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonScheduled)
	completed := time.Now().Add(-2 * time.Hour).Truncate(time.Second)
	canary := f.get()
	before := canary.DeepCopy()
	canary.Status.LastRun = &v1alpha1.RunSummary{
		Name: "grant-revocation-earlier", Verdict: v1alpha1.VerdictSLOBreached,
		CompletionTime: &metav1.Time{Time: completed},
		Surfaces:       []v1alpha1.SurfaceSummary{{Surface: v1alpha1.SurfaceSearch, Bounds: objects.Bounds(25*time.Second, 40*time.Second)}},
	}
	if err := k8sClient.Status().Patch(context.Background(), canary, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name    string
		surface string
		value   float64
	}{
		{"ragcanary_canary_stale_after_timestamp_seconds", "", float64(completed.Add(3 * 6 * time.Hour).Unix())},
		{"ragcanary_canary_surface_slo_seconds", "Search", 30},
		{"ragcanary_last_run_exclusion_upper_bound_seconds", "Search", 40},
	}
	testutil.Eventually(t, eventuallyTimeout, "gauges derived from the canary's status", func() error {
		if slo := canaryGauge(t, "ragcanary_corpus_surface_slo_seconds", f.ns, "", "Search"); slo == nil || *slo != 300 {
			return fmt.Errorf("corpus slo = %s, want 300", ptrText(slo))
		}
		for _, w := range want {
			got := canaryGauge(t, w.name, f.ns, f.canary.Name, w.surface)
			if got == nil || *got != w.value {
				return fmt.Errorf("%s = %s, want %v", w.name, ptrText(got), w.value)
			}
		}
		// An established upper bound is the surface's one bound series.
		if got := canaryGauge(t, "ragcanary_last_run_exclusion_lower_bound_seconds", f.ns, f.canary.Name, "Search"); got != nil {
			return fmt.Errorf("lower bound %v exported beside the upper bound", *got)
		}
		return nil
	})
	if err := k8sClient.Delete(context.Background(), f.canary); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, eventuallyTimeout, "series removed with the canary", func() error {
		if n := countSeries(t, f.ns, f.canary.Name); n != 0 {
			return fmt.Errorf("%d series of the deleted canary remain", n)
		}
		return nil
	})
}

// TestSuiteGaugesFromStatus: a suite's last verdict and completion time
// come from its status, also when this manager never ran the suite, and
// go when the suite goes.
func TestSuiteGaugesFromStatus(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	s := goldenSuite(ns)
	if err := k8sClient.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	completed := time.Now().Add(-time.Hour).Truncate(time.Second)
	before := s.DeepCopy()
	s.Status.LastRun = &v1alpha1.SuiteRunSummary{Name: s.Name + "-earlier", Passed: false, Disclosures: 1,
		CompletionTime: &metav1.Time{Time: completed}}
	if err := k8sClient.Status().Patch(context.Background(), s, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, eventuallyTimeout, "suite gauges derived from status", func() error {
		passed := suiteGauge(t, "ragcanary_suite_last_run_passed", ns, s.Name)
		last := suiteGauge(t, "ragcanary_suite_last_completed_run_timestamp_seconds", ns, s.Name)
		if passed == nil || *passed != 0 || last == nil || *last != float64(completed.Unix()) {
			return fmt.Errorf("last_run_passed=%v last_completed=%v, want 0 and %d", passed, last, completed.Unix())
		}
		return nil
	})
	if err := k8sClient.Delete(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, eventuallyTimeout, "suite series removed with the suite", func() error {
		if g := suiteGauge(t, "ragcanary_suite_last_run_passed", ns, s.Name); g != nil {
			return fmt.Errorf("suite_last_run_passed still %v", *g)
		}
		return nil
	})
}

// canaryGauge reads one gauge of a canary (on a surface, when set) from the
// manager's registry; nil when the series does not exist.
func canaryGauge(t *testing.T, name, ns, canary, surface string) *float64 {
	t.Helper()
	for _, m := range gatherSeries(t, name, ns) {
		if labelValue(m, "canary") == canary && labelValue(m, "surface") == surface {
			v := m.GetGauge().GetValue()
			return &v
		}
	}
	return nil
}

// suiteGauge reads one gauge of a suite; nil when the series does not exist.
func suiteGauge(t *testing.T, name, ns, suite string) *float64 {
	t.Helper()
	for _, m := range gatherSeries(t, name, ns) {
		if labelValue(m, "suite") == suite {
			v := m.GetGauge().GetValue()
			return &v
		}
	}
	return nil
}
