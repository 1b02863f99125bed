package metrics

// verdicts are the values of the verdict label, pre-created at zero so the
// first increase of a counter is visible to rate() and increase().
var verdicts = []string{"SLOMet", "SLOBreached", "NotExcluded", "Inconclusive", "IsolationViolation", "SetupFailed"}

// surfaces are the values of the surface label.
var surfaces = []string{"Search", "Answer", "Conversation"}

// InitCanary creates a ready canary's counters at zero, the per-surface
// ones for the surfaces it probes (every surface when none are named): a
// surface never probed can never count, and on a fleet every pre-created
// series costs manager heap for each canary (make bench-canaries measures
// it). Its SLO and schedule period are not set here:
// ObjectCollector builds them from the canary and its Corpus at scrape time.
func InitCanary(r Run, probed ...string) {
	if len(probed) == 0 {
		probed = surfaces
	}
	IsolationViolationsTotal.With(r.isolationLabels()).Add(0)
	for _, v := range verdicts {
		l := r.labels()
		l[LabelVerdict] = v
		RunsTotal.With(l).Add(0)
	}
	for _, s := range probed {
		ReappearancesTotal.With(r.withSurface(s)).Add(0)
		// The censored-share alert must see a canary's first censored run.
		CensoredRunsTotal.With(r.withSurface(s)).Add(0)
	}
}
