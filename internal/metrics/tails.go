package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Honest tails. Every finished surface measurement lands in exactly one
// histogram, so no run drops out of the record:
//   - ExclusionUpperBound: a confirmed exclusion's upper bound (every
//     surface; time_to_exclusion_seconds and cache_invalidation_seconds
//     also carry the search and answer surfaces under their own names);
//   - ContentFreshness: a content-freshness run's upper bound of the time
//     until the surface served only the new content;
//   - CensoredLowerBound: a surface that ended without an upper bound (still
//     visible at the timeout, errors left it open, new content never seen),
//     observed at its lower bound, 0 when none was established.
//
// CensoredRunsTotal counts the last kind, per canary; the histograms are
// per corpus. A quantile of an upper-bound
// histogram describes only the runs that ended; the censored share,
// censored / (censored + ended), says how much of the tail it leaves out.
var (
	ExclusionUpperBound = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "canary_exclusion_upper_bound_seconds",
		Help:    "Upper bound of time from revocation to confirmed exclusion, per corpus and surface, of runs that confirmed it.",
		Buckets: LatencyBuckets,
	}, corpusSurfaceLabels)
	ContentFreshness = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "content_freshness_seconds",
		Help:    "Upper bound of time from a content update (UpdateContent) until the surface served only the new content: new content visible and old content gone; per corpus and surface.",
		Buckets: LatencyBuckets,
	}, corpusSurfaceLabels)
	CensoredLowerBound = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "canary_censored_lower_bound_seconds",
		Help:    "Lower bound of surface measurements that ended without an upper bound (censored at the timeout), per corpus and surface: the tail the upper-bound histograms leave out.",
		Buckets: LatencyBuckets,
	}, corpusSurfaceLabels)
	CensoredRunsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "canary_censored_runs_total",
		Help: "Finished runs whose surface ended without an upper bound: still visible at the timeout, left open by probe errors, or new content never seen. A canary's series appears with its first censored run.",
	}, surfaceLabels)
)

func init() {
	tails := []interface {
		prometheus.Collector
		DeletePartialMatch(prometheus.Labels) int
	}{ExclusionUpperBound, ContentFreshness, CensoredLowerBound, CensoredRunsTotal}
	for _, c := range tails {
		crmetrics.Registry.MustRegister(c)
	}
	all = append(all, tails...)
}

// recordTail files one finished surface in its histogram. The canary's
// censored counter is created by its first censored run (the alert and the
// share panel guard for a series that appears at 1).
func recordTail(r Run, s SurfaceResult) {
	l := r.corpusSurface(s.Surface)
	switch {
	case s.Upper == nil:
		lower := 0.0
		if s.Lower != nil {
			lower = s.Lower.Seconds()
		}
		CensoredRunsTotal.With(r.withSurface(s.Surface)).Inc()
		CensoredLowerBound.With(l).Observe(lower)
	case s.Content:
		ContentFreshness.With(l).Observe(s.Upper.Seconds())
	default:
		ExclusionUpperBound.With(l).Observe(s.Upper.Seconds())
	}
}
