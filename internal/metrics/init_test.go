package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestInitCanaryCreatesOnlyProbedSurfaces: a canary's per-surface counters
// exist at zero for the surfaces it probes and for no other, so a fleet of
// search-only canaries does not carry series that can never count.
func TestInitCanaryCreatesOnlyProbedSurfaces(t *testing.T) {
	t.Cleanup(func() {
		for _, c := range []string{"search-only", "search-only-2", "every-surface"} {
			Forget("init", c)
		}
	})
	r := Run{Namespace: "init", Canary: "search-only", Corpus: "kb"}
	InitCanary(r, "Search")
	reappear, censored := testutil.CollectAndCount(ReappearancesTotal), testutil.CollectAndCount(CensoredRunsTotal)
	InitCanary(Run{Namespace: "init", Canary: "search-only-2", Corpus: "kb"}, "Search")
	if got := testutil.CollectAndCount(ReappearancesTotal) - reappear; got != 1 {
		t.Errorf("a search-only canary added %d reappearance series, want 1", got)
	}
	if got := testutil.CollectAndCount(CensoredRunsTotal) - censored; got != 1 {
		t.Errorf("a search-only canary added %d censored-run series, want 1", got)
	}
	if got := testutil.ToFloat64(ReappearancesTotal.WithLabelValues("init", "search-only", "kb", "Search")); got != 0 {
		t.Errorf("Search reappearances = %v, want a series at 0", got)
	}
	before := testutil.CollectAndCount(ReappearancesTotal)
	InitCanary(Run{Namespace: "init", Canary: "every-surface", Corpus: "kb"})
	if got := testutil.CollectAndCount(ReappearancesTotal) - before; got != len(surfaces) {
		t.Errorf("a canary naming no surface added %d reappearance series, want %d (every surface)", got, len(surfaces))
	}
}
