package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

func TestRecordCompletionAndForget(t *testing.T) {
	resetAll(t)
	r := Run{Namespace: "ns-a", Canary: "c1", Corpus: "corp"}
	other := Run{Namespace: "ns-a", Canary: "c2", Corpus: "corp"}
	ttv := 3 * time.Second
	lower, upper := 2*time.Second, 7*time.Second
	SetLiveExposure(r, "Answer", 40*time.Second)
	RecordCompletion(r, Completion{
		Verdict:          "SLOMet",
		TimeToVisibility: &ttv,
		Surfaces: []SurfaceResult{
			{Surface: "Search", Lower: &lower, Upper: &upper},
			{Surface: "Answer", Lower: &lower}, // right-censored: no upper
		},
		Finished: time.Unix(1000, 0),
	})
	RecordCompletion(other, Completion{Verdict: "NotExcluded", Finished: time.Unix(2000, 0)})

	if got := testutil.ToFloat64(RunsTotal.WithLabelValues("ns-a", "c1", "corp", "SLOMet")); got != 1 {
		t.Errorf("runs_total = %v, want 1", got)
	}
	// Verdicts are created by their first run: two runs, two series.
	if n := testutil.CollectAndCount(RunsTotal); n != 2 {
		t.Errorf("runs_total series = %d, want 2 (one per verdict reached)", n)
	}
	// Only the search surface had an upper bound; the answer surface's
	// histogram gets nothing rather than a stand-in. The histograms are
	// the corpus's.
	if got := histCount(t, TimeToExclusion.WithLabelValues("ns-a", "corp")); got != 1 {
		t.Errorf("time_to_exclusion of the corpus observed %d times, want 1", got)
	}
	if n := testutil.CollectAndCount(CacheInvalidation); n != 0 {
		t.Errorf("cache_invalidation series = %d, want 0 (no answer upper bound)", n)
	}
	if n := testutil.CollectAndCount(LiveExposure); n != 0 {
		t.Errorf("live exposure series after completion = %d, want none", n)
	}

	Forget("ns-a", "c1")
	if got := testutil.ToFloat64(RunsTotal.WithLabelValues("ns-a", "c2", "corp", "NotExcluded")); got != 1 {
		t.Errorf("other canary's series was forgotten too: %v", got)
	}
	if n := testutil.CollectAndCount(RunsTotal); n != 1 {
		t.Errorf("runs_total series after Forget = %d, want 1", n)
	}
	// The corpus's histograms describe its other canaries too.
	if n := testutil.CollectAndCount(TimeToExclusion); n != 1 {
		t.Errorf("time_to_exclusion series after Forget = %d, want the corpus's 1", n)
	}
}

// resetAll empties every ragcanary vector now and when t ends: the
// per-corpus series outlive Forget, so a test counting series starts from
// none.
func resetAll(t testing.TB) {
	reset := func() {
		for _, c := range all {
			c.(interface{ Reset() }).Reset()
		}
	}
	reset()
	t.Cleanup(reset)
}

func TestRegisteredWithPrefix(t *testing.T) {
	// Every metric is served under the ragcanary_ prefix by the manager's registry.
	ObserveProbe(Run{Namespace: "n", Canary: "c", Corpus: "x"}, "Search", RolePersona, "absent", time.Millisecond)
	ObserveSchedulingLag(Run{Namespace: "n", Canary: "c", Corpus: "x"}, -time.Second)
	n, err := testutil.GatherAndCount(crmetrics.Registry, "ragcanary_probes_total", "ragcanary_probe_scheduling_lag_seconds")
	if err != nil || n != 2 {
		t.Fatalf("gathered %d series (%v), want 2", n, err)
	}
}
