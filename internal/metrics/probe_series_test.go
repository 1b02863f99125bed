package metrics

import (
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// TestProbeSeriesRecordsWhereThePackageFunctionsDid: a loop's cached series
// count each probe under its corpus, surface, role and outcome and under
// its canary and outcome, record durations for the probed persona only and
// the lag per corpus, also when a round's probes record concurrently; the
// canary's counts go when its run completes, the corpus's stay.
func TestProbeSeriesRecordsWhereThePackageFunctionsDid(t *testing.T) {
	resetAll(t)
	r := Run{Namespace: "ps", Canary: "c1", Corpus: "kb"}
	s := NewProbeSeries(r)
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			s.ObserveProbe("Search", RolePersona, "present", 10*time.Millisecond)
			s.ObserveProbe("Search", RoleControl, "absent", time.Second)
			s.ObserveLag(-time.Second) // a probe started early counts as no lag
		})
	}
	wg.Wait()
	// A second loop of another canary on the same corpus shares the
	// corpus's histograms and keeps its own counts.
	NewProbeSeries(Run{Namespace: "ps", Canary: "c2", Corpus: "kb"}).ObserveProbe("Search", RolePersona, "error", time.Millisecond)

	for _, tc := range []struct {
		role, outcome string
		want          float64
	}{
		{RolePersona, "present", 50},
		{RoleControl, "absent", 50},
		{RolePersona, "error", 1},
		{RoleControl, "present", 0},
	} {
		got := testutil.ToFloat64(ProbesTotal.WithLabelValues("ps", "kb", "Search", tc.role, tc.outcome))
		if got != tc.want {
			t.Errorf("probes_total{role=%s,outcome=%s} = %v, want %v", tc.role, tc.outcome, got, tc.want)
		}
	}
	for _, tc := range []struct {
		canary, outcome string
		want            float64
	}{
		{"c1", "present", 50},
		{"c1", "absent", 50},
		{"c2", "error", 1},
		{"c2", "present", 0},
	} {
		if got := testutil.ToFloat64(CanaryProbesTotal.WithLabelValues("ps", tc.canary, "kb", tc.outcome)); got != tc.want {
			t.Errorf("canary_probes_total{canary=%s,outcome=%s} = %v, want %v", tc.canary, tc.outcome, got, tc.want)
		}
	}
	RecordCompletion(r, Completion{Verdict: "SLOMet"})
	if n := testutil.CollectAndCount(CanaryProbesTotal); n != 2 {
		t.Errorf("after c1's run completed, %d canary probe series, want c2's 2 (error, and present read back above)", n)
	}
	if got := testutil.ToFloat64(ProbesTotal.WithLabelValues("ps", "kb", "Search", RolePersona, "present")); got != 50 {
		t.Errorf("the corpus's probe count after the run completed = %v, want 50", got)
	}
	if n, sum := observed(t, ProbeDuration.WithLabelValues("ps", "kb", "Search")); n != 51 || sum > 0.51 {
		t.Errorf("probe duration: %d observations summing %.3fs, want the 51 persona probes (control probes take 1 s and must not count)", n, sum)
	}
	if n, sum := observed(t, ProbeSchedulingLag.WithLabelValues("ps", "kb")); n != 50 || sum != 0 {
		t.Errorf("scheduling lag: %d observations summing %v, want 50 at 0", n, sum)
	}
}

// observed is a histogram series' observation count and sum.
func observed(t *testing.T, o prometheus.Observer) (uint64, float64) {
	t.Helper()
	var m dto.Metric
	if err := o.(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}
