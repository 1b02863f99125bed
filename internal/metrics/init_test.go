package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestInitCanaryCreatesOnlyProbedSurfaces: a ready canary creates at zero
// its corpus's reappearance counters for the surfaces it probes and for no
// other, and nothing labelled with the canary: its counters appear with
// their first event.
func TestInitCanaryCreatesOnlyProbedSurfaces(t *testing.T) {
	resetAll(t)
	InitCanary(Run{Namespace: "init", Canary: "search-only", Corpus: "kb"}, "Search")
	InitCanary(Run{Namespace: "init", Canary: "search-only-2", Corpus: "kb"}, "Search")
	if n := testutil.CollectAndCount(ReappearancesTotal); n != 1 {
		t.Errorf("two search-only canaries of one corpus made %d reappearance series, want 1", n)
	}
	if got := testutil.ToFloat64(ReappearancesTotal.WithLabelValues("init", "kb", "Search")); got != 0 {
		t.Errorf("Search reappearances = %v, want a series at 0", got)
	}
	for name, c := range map[string]prometheus.Collector{"runs": RunsTotal, "censored runs": CensoredRunsTotal,
		"isolation violations": IsolationViolationsTotal, "live exposure": LiveExposure} {
		if n := testutil.CollectAndCount(c); n != 0 {
			t.Errorf("%d %s series before any event, want none", n, name)
		}
	}
	InitCanary(Run{Namespace: "init", Canary: "every-surface", Corpus: "kb"})
	if n := testutil.CollectAndCount(ReappearancesTotal); n != len(surfaces) {
		t.Errorf("a canary naming no surface left %d reappearance series, want %d (every surface)", n, len(surfaces))
	}
}
