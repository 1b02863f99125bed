package controllers

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/metrics"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
	"github.com/ragcanary/ragcanary/internal/schedule"
)

// TestCanaryIsolationViolationMetric: a target that ignores access lists
// shows a canary's token to the control persona. The run's verdict is
// IsolationViolation, it emits a Warning event, and
// ragcanary_isolation_violations_total{kind="canary"} of that canary rises
// above zero, by at least the sightings the run recorded.
func TestCanaryIsolationViolationMetric(t *testing.T) {
	tg := startCRTarget(t, ragtarget.Config{FilterMode: ragtarget.FilterNone}, 0, false)
	ns := crFixture(t, tg.URL)
	canary := runNowCanary(ns, "leaky", 2*time.Second)
	labels := []string{ns, metrics.KindCanary, canary.Name, "", "target"} // namespace, kind, canary, suite, corpus
	counter := func() float64 {
		return promtestutil.ToFloat64(metrics.IsolationViolationsTotal.WithLabelValues(labels...))
	}
	scheduleClock.SetTime(time.Now())
	crCreate(t, canary)
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), canary) })

	run := &v1alpha1.CanaryRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: schedule.RunNowName(canary.Name, "now")}}
	testutil.Eventually(t, eventuallyTimeout, "run created", func() error {
		return k8sClient.Get(context.Background(), client.ObjectKeyFromObject(run), run)
	})
	got := crWaitDone(t, run)
	if got.Status.Verdict != v1alpha1.VerdictIsolationViolation || got.Status.IsolationViolations == 0 {
		t.Fatalf("verdict %s violations %d (%s), want IsolationViolation", got.Status.Verdict, got.Status.IsolationViolations, got.Status.Message)
	}
	// Probing counts every sighting as it happens; status holds the count
	// persisted with the verdict, so the counter is at least that.
	if n := counter(); n < float64(got.Status.IsolationViolations) || n == 0 {
		t.Errorf("isolation_violations_total{kind=canary,canary=%s} = %v, want ≥ %d", canary.Name, n, got.Status.IsolationViolations)
	}
	testutil.Eventually(t, eventuallyTimeout, "IsolationViolation event on the run", func() error {
		var list eventsv1.EventList
		if err := k8sClient.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return err
		}
		if !slices.ContainsFunc(list.Items, func(e eventsv1.Event) bool {
			return e.Reason == string(v1alpha1.VerdictIsolationViolation) && e.Type == "Warning" && e.Regarding.Name == run.Name
		}) {
			return fmt.Errorf("no IsolationViolation warning about run %s among %d events", run.Name, len(list.Items))
		}
		return nil
	})
}
