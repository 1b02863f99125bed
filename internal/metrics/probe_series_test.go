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
// count each probe under its canary, surface, role and outcome, record
// durations for the probed persona only and the lag per corpus, also when
// a round's probes record concurrently.
func TestProbeSeriesRecordsWhereThePackageFunctionsDid(t *testing.T) {
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
		canary, role, outcome string
		want                  float64
	}{
		{"c1", RolePersona, "present", 50},
		{"c1", RoleControl, "absent", 50},
		{"c2", RolePersona, "error", 1},
		{"c2", RolePersona, "present", 0},
	} {
		got := testutil.ToFloat64(ProbesTotal.WithLabelValues("ps", tc.canary, "kb", "Search", tc.role, tc.outcome))
		if got != tc.want {
			t.Errorf("probes_total{canary=%s,role=%s,outcome=%s} = %v, want %v", tc.canary, tc.role, tc.outcome, got, tc.want)
		}
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
