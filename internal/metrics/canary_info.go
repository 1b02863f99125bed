package metrics

// surfaces are the values of the surface label.
var surfaces = []string{"Search", "Answer", "Conversation"}

// InitCanary creates, at zero, the per-corpus reappearance counters of the
// surfaces a ready canary probes (every surface when none are named), so
// the first reappearance on its corpus is an increase. Nothing per canary
// is created here: a canary's counters (runs by verdict, censored runs,
// isolation violations) appear with their first event, and its SLO and
// schedule period are built by ObjectCollector at scrape time. Pre-creating
// a canary's counters at zero was ten series per canary that mostly never
// count (BenchmarkScrape10000Canaries).
func InitCanary(r Run, probed ...string) {
	if len(probed) == 0 {
		probed = surfaces
	}
	for _, s := range probed {
		ReappearancesTotal.With(r.corpusSurface(s)).Add(0)
	}
}
