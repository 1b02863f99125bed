package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// TestCensoredRunsAreNeverDropped: every finished surface lands in exactly
// one tail histogram; one without an upper bound is counted as censored and
// observed at its lower bound (0 when none was established).
func TestCensoredRunsAreNeverDropped(t *testing.T) {
	resetAll(t)
	r := Run{Namespace: "tails", Canary: "c", Corpus: "kb"}
	InitCanary(r)
	// Created by the first censored run, not before: the alert and the
	// share panel see a series that appears at 1.
	if n := testutil.CollectAndCount(CensoredRunsTotal); n != 0 {
		t.Fatalf("%d censored-run series before any run, want none", n)
	}
	lower, upper, timeout := 2*time.Second, 7*time.Second, 60*time.Second
	RecordCompletion(r, Completion{Verdict: "NotExcluded", Surfaces: []SurfaceResult{
		{Surface: "Search", Lower: &lower, Upper: &upper},
		{Surface: "Answer", Lower: &timeout}, // still visible at the timeout
		{Surface: "Conversation"},            // nothing established
	}})
	RecordCompletion(r, Completion{Verdict: "SLOMet", Surfaces: []SurfaceResult{
		{Surface: "Search", Lower: &lower, Upper: &upper, Content: true},
	}})
	for _, tc := range []struct {
		surface  string
		censored float64
		// censoredSum is the sum of the censored lower bounds observed.
		censoredSum float64
		upperCount  uint64
		freshCount  uint64
	}{
		{surface: "Search", upperCount: 1, freshCount: 1},
		{surface: "Answer", censored: 1, censoredSum: 60},
		{surface: "Conversation", censored: 1, censoredSum: 0},
	} {
		if tc.censored > 0 {
			if got := testutil.ToFloat64(CensoredRunsTotal.WithLabelValues("tails", "c", "kb", tc.surface)); got != tc.censored {
				t.Errorf("%s: censored runs = %v, want %v", tc.surface, got, tc.censored)
			}
		}
		l := []string{"tails", "kb", tc.surface} // the histograms are the corpus's
		if got := histCount(t, CensoredLowerBound.WithLabelValues(l...)); got != uint64(tc.censored) {
			t.Errorf("%s: censored lower-bound observations = %d, want %v", tc.surface, got, tc.censored)
		}
		if got := histSum(t, CensoredLowerBound.WithLabelValues(l...)); got != tc.censoredSum {
			t.Errorf("%s: censored lower-bound sum = %v, want %v", tc.surface, got, tc.censoredSum)
		}
		if got := histCount(t, ExclusionUpperBound.WithLabelValues(l...)); got != tc.upperCount {
			t.Errorf("%s: exclusion upper-bound observations = %d, want %d", tc.surface, got, tc.upperCount)
		}
		if got := histCount(t, ContentFreshness.WithLabelValues(l...)); got != tc.freshCount {
			t.Errorf("%s: content freshness observations = %d, want %d", tc.surface, got, tc.freshCount)
		}
	}
	// The content run's bounds are not an exclusion: the legacy search
	// histogram holds the one revocation run only.
	if got := histCount(t, TimeToExclusion.WithLabelValues("tails", "kb")); got != 1 {
		t.Errorf("time_to_exclusion observations = %d, want 1", got)
	}
	if n := testutil.CollectAndCount(CensoredRunsTotal); n != 2 {
		t.Errorf("censored series = %d, want 2 (Answer, Conversation; never Search)", n)
	}
	Forget("tails", "c")
	if n := testutil.CollectAndCount(CensoredRunsTotal); n != 0 {
		t.Errorf("censored series after Forget = %d, want 0", n)
	}
}

func histCount(t *testing.T, o prometheus.Observer) uint64 {
	t.Helper()
	return observedHistogram(t, o).GetSampleCount()
}

func histSum(t *testing.T, o prometheus.Observer) float64 {
	t.Helper()
	return observedHistogram(t, o).GetSampleSum()
}

func observedHistogram(t *testing.T, o prometheus.Observer) *dto.Histogram {
	t.Helper()
	var m dto.Metric
	if err := o.(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram()
}

// TestCollectorFreshnessSeries: a content-freshness canary exports its
// per-surface content-freshness SLO (not an exclusion SLO) and its last
// run's freshness bound per surface (the upper, or the lower of a censored
// surface, never both); a revocation canary that sets no SLO of its own
// has none: its corpus's per-surface exclusion SLOs judge it.
func TestCollectorFreshnessSeries(t *testing.T) {
	// The SLOs are the judged ones (measure.JudgedSLO): the corpus's
	// content-freshness SLO for the UpdateContent canary, its cache
	// invalidation SLO on Answer, its exclusion SLO on Search.
	kb := corpus("kb", 10*time.Second)
	kb.Spec.Freshness.ContentFreshnessSLO = dur(40 * time.Second)
	kb.Spec.Freshness.CacheInvalidationSLO = dur(20 * time.Second)
	content := canary("fresh", func(c *v1alpha1.RevocationCanary) {
		c.Spec.Revocation.Method = v1alpha1.RevokeUpdateContent
		c.Status.LastRun = &v1alpha1.RunSummary{Name: "fresh-1", CompletionTime: at(1000),
			Surfaces: []v1alpha1.SurfaceSummary{{Surface: v1alpha1.SurfaceSearch,
				ContentFreshness: &v1alpha1.ExclusionBounds{Lower: dur(2 * time.Second), Upper: dur(5 * time.Second)}},
				// Censored: its lower bound is the one it exports.
				{Surface: v1alpha1.SurfaceAnswer, ContentFreshness: &v1alpha1.ExclusionBounds{Lower: dur(7 * time.Second)}}}}
	})
	grant := canary("grant", func(c *v1alpha1.RevocationCanary) {
		c.Spec.Probing.Surfaces = []v1alpha1.Surface{v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer}
	})
	reader := newReader(t, nil, kb, content, grant)
	c := NewObjectCollector(reader, clocktesting.NewFakePassiveClock(scrapeTime))
	want := `
# HELP ragcanary_canary_content_freshness_slo_seconds Content-freshness SLO an UpdateContent canary's runs are judged by, per probed surface; every UpdateContent canary has it, which also tells the exclusion alerts to leave the canary to the freshness alert.
# TYPE ragcanary_canary_content_freshness_slo_seconds gauge
ragcanary_canary_content_freshness_slo_seconds{canary="fresh",corpus="kb",namespace="rag",surface="Search"} 40
# HELP ragcanary_corpus_surface_slo_seconds Exclusion SLO a canary of the corpus is judged by on a surface its canaries probe, unless canary_surface_slo_seconds gives the canary its own.
# TYPE ragcanary_corpus_surface_slo_seconds gauge
ragcanary_corpus_surface_slo_seconds{corpus="kb",namespace="rag",surface="Answer"} 20
ragcanary_corpus_surface_slo_seconds{corpus="kb",namespace="rag",surface="Search"} 10
# HELP ragcanary_last_run_content_freshness_lower_bound_seconds Lower bound of the time until the surface served only the new content, in the content-freshness canary's last finished run, when censored; absent when the upper bound was established.
# TYPE ragcanary_last_run_content_freshness_lower_bound_seconds gauge
ragcanary_last_run_content_freshness_lower_bound_seconds{canary="fresh",corpus="kb",namespace="rag",surface="Answer"} 7
# HELP ragcanary_last_run_content_freshness_upper_bound_seconds Upper bound of the time until the surface served only the new content, in the content-freshness canary's last finished run; absent when censored.
# TYPE ragcanary_last_run_content_freshness_upper_bound_seconds gauge
ragcanary_last_run_content_freshness_upper_bound_seconds{canary="fresh",corpus="kb",namespace="rag",surface="Search"} 5
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"ragcanary_canary_content_freshness_slo_seconds", "ragcanary_canary_surface_slo_seconds", "ragcanary_corpus_surface_slo_seconds",
		"ragcanary_last_run_content_freshness_lower_bound_seconds", "ragcanary_last_run_content_freshness_upper_bound_seconds"); err != nil {
		t.Error(err)
	}
}
