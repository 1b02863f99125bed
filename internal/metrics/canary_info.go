package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Per-canary configuration exported as gauges, so alert rules compare
// measurements against each canary's own SLO and schedule instead of one
// threshold for the fleet.
var (
	CanaryExclusionSLO = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "canary_exclusion_slo_seconds",
		Help: "Exclusion SLO the canary's runs are judged by (search surface).",
	}, runLabels)
	CanarySchedulePeriod = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "canary_schedule_period_seconds",
		Help: "Time between the canary's scheduled runs; absent while the canary is suspended or not ready.",
	}, runLabels)
)

// verdicts are the values of the verdict label, pre-created at zero so the
// first increase of a counter is visible to rate() and increase().
var verdicts = []string{"SLOMet", "SLOBreached", "NotExcluded", "Inconclusive", "IsolationViolation", "SetupFailed"}

// surfaces are the values of the surface label.
var surfaces = []string{"Search", "Answer"}

// SetCanaryInfo publishes a ready canary's SLO and schedule period and
// creates its counters at zero. A zero period (suspended) removes the period
// series so the stale alert does not fire for a canary that was paused on purpose.
func SetCanaryInfo(r Run, slo, period time.Duration) {
	CanaryExclusionSLO.With(r.labels()).Set(slo.Seconds())
	if period > 0 {
		CanarySchedulePeriod.With(r.labels()).Set(period.Seconds())
	} else {
		CanarySchedulePeriod.Delete(r.labels())
	}
	IsolationViolationsTotal.With(r.isolationLabels()).Add(0)
	for _, v := range verdicts {
		l := r.labels()
		l[LabelVerdict] = v
		RunsTotal.With(l).Add(0)
	}
	for _, s := range surfaces {
		ReappearancesTotal.With(r.withSurface(s)).Add(0)
	}
}
