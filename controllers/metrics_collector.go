package controllers

import (
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/metrics"
)

// newObjectCollector builds the collector of the gauges derived from
// objects. It reads the manager's cache, on the schedule clock, with the
// same SLO and run-ownership rules the reconcilers use, so a scraped value
// never disagrees with a verdict.
func newObjectCollector(mgr ctrl.Manager, opts Options) *metrics.ObjectCollector {
	return metrics.NewObjectCollector(mgr.GetCache(), opts.ScheduleClock, metrics.Rules{
		SearchSLO: canarySearchSLO,
		CanaryOf:  func(run *v1alpha1.CanaryRun) string { return metricsRun(run).Canary },
		// The SLO the canary's runs are judged by on each surface.
		SurfaceSLO: canarySurfaceSLO,
	})
}

// canarySurfaceSLO is the SLO the canary's runs are judged by on surface:
// the content-freshness SLO for an UpdateContent canary, else the
// surface's exclusion SLO (runSLO, for a run created now).
func canarySurfaceSLO(canary *v1alpha1.RevocationCanary, corpus *v1alpha1.Corpus, s v1alpha1.Surface) time.Duration {
	run := &v1alpha1.CanaryRun{Spec: v1alpha1.CanaryRunSpec{CanarySpec: canary.Spec.CanarySpec}}
	return runSLO(run, corpus)(s)
}

// canarySearchSLO is the search-surface SLO the canary's runs are judged
// by: a run copies the canary's spec, so it is the SLO of a run created now.
func canarySearchSLO(canary *v1alpha1.RevocationCanary, corpus *v1alpha1.Corpus) time.Duration {
	run := &v1alpha1.CanaryRun{Spec: v1alpha1.CanaryRunSpec{CanarySpec: canary.Spec.CanarySpec}}
	return exclusionSLO(run, corpus, v1alpha1.SurfaceSearch)
}
