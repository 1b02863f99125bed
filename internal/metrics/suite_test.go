package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ragcanary/ragcanary/internal/scoring"
)

// ratio is a defined rate of v.
func ratio(v float64) scoring.Ratio { return scoring.Ratio{Value: &v, Numerator: v, Denominator: 1} }

func TestSuiteCompletionAndForgetSuite(t *testing.T) {
	s := Suite{Namespace: "ns-s", Suite: "iso", Corpus: "corp"}
	other := Suite{Namespace: "ns-s", Suite: "other", Corpus: "corp"}
	RecordSuiteCompletion(s, SuiteCompletion{Passed: false, Finished: time.Unix(100, 0), Personas: []PersonaScores{
		{Persona: "alice", Stats: scoring.Stats{Utility: ratio(1), RecallAtK: ratio(0.5)}},
		{Persona: "mallory", Stats: scoring.Stats{DisclosureRate: ratio(1), AffectedAnswers: 1}},
	}})
	RecordSuiteCompletion(other, SuiteCompletion{Passed: true, Finished: time.Unix(200, 0)})

	if got := testutil.ToFloat64(SuiteRunsTotal.WithLabelValues("ns-s", "iso", "corp", ResultFailed)); got != 1 {
		t.Errorf("suite_runs_total{failed} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(SuiteRunsTotal.WithLabelValues("ns-s", "other", "corp", ResultPassed)); got != 1 {
		t.Errorf("suite_runs_total{passed} = %v, want 1", got)
	}
	disclosuresTotal := suiteCountTotals[scoring.FigureAffectedAnswers]
	if got := testutil.ToFloat64(disclosuresTotal.WithLabelValues("ns-s", "iso", "corp", "mallory")); got != 1 {
		t.Errorf("disclosures = %v, want 1", got)
	}
	// Undefined values have no series: alice has no disclosure rate,
	// mallory no utility.
	if n := testutil.CollectAndCount(suiteRates[scoring.FigureDisclosureRate]); n != 1 {
		t.Errorf("disclosure rate series = %d, want 1 (mallory only)", n)
	}
	if n := testutil.CollectAndCount(suiteRates[scoring.FigureUtility]); n != 1 {
		t.Errorf("utility series = %d, want 1 (alice only)", n)
	}

	// A later run where alice's utility is undefined drops her gauge.
	RecordSuiteCompletion(s, SuiteCompletion{Passed: true, Finished: time.Unix(300, 0), Personas: []PersonaScores{{Persona: "alice"}}})
	if n := testutil.CollectAndCount(suiteRates[scoring.FigureUtility]); n != 0 {
		t.Errorf("utility series after an undefined run = %d, want 0", n)
	}

	ForgetSuite("ns-s", "iso")
	if n := testutil.CollectAndCount(SuiteRunsTotal); n != 1 {
		t.Errorf("suite_runs_total series after ForgetSuite = %d, want 1 (the other suite)", n)
	}
	if n := testutil.CollectAndCount(disclosuresTotal) + testutil.CollectAndCount(SuiteCases); n != 0 {
		t.Errorf("%d disclosures and case series after ForgetSuite, want 0", n)
	}
}

func TestSuiteRunDuration(t *testing.T) {
	s := Suite{Namespace: "ns-dur", Suite: "iso", Corpus: "corp"}
	start := time.Unix(1000, 0)
	tests := []struct {
		name string
		// started and finished are the run's times; a zero start is unknown.
		started, finished time.Time
		// wantCount and wantSum are the histogram after this completion,
		// cumulative over the table.
		wantCount uint64
		wantSum   float64
	}{
		{name: "a 90 s run", started: start, finished: start.Add(90 * time.Second), wantCount: 1, wantSum: 90},
		{name: "a sub-second run", started: start, finished: start.Add(250 * time.Millisecond), wantCount: 2, wantSum: 90.25},
		{name: "unknown start is not observed", finished: start, wantCount: 2, wantSum: 90.25},
		{name: "start after completion is not observed", started: start.Add(time.Second), finished: start, wantCount: 2, wantSum: 90.25},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			RecordSuiteCompletion(s, SuiteCompletion{Passed: true, Started: tt.started, Finished: tt.finished})
			h := histogram(t, "ragcanary_suite_run_duration_seconds", "ns-dur")
			if h.GetSampleCount() != tt.wantCount || h.GetSampleSum() != tt.wantSum {
				t.Errorf("count=%d sum=%v, want %d and %v", h.GetSampleCount(), h.GetSampleSum(), tt.wantCount, tt.wantSum)
			}
		})
	}
	h := histogram(t, "ragcanary_suite_run_duration_seconds", "ns-dur")
	buckets := h.GetBucket()
	if len(buckets) != len(SuiteDurationBuckets) || buckets[0].GetUpperBound() != 0.1 || buckets[len(buckets)-1].GetUpperBound() != 3600 {
		t.Errorf("buckets = %v, want 0.1 s … 1 h", buckets)
	}
	// The 90 s run lands in (60, 120], the 0.25 s run in (0.1, 0.25].
	for _, b := range buckets {
		want := uint64(0)
		switch {
		case b.GetUpperBound() >= 120:
			want = 2
		case b.GetUpperBound() >= 0.25:
			want = 1
		}
		if b.GetCumulativeCount() != want {
			t.Errorf("bucket le=%v count=%d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
	ForgetSuite("ns-dur", "iso")
	if n := testutil.CollectAndCount(SuiteRunDuration); n != 0 {
		t.Errorf("duration series after ForgetSuite = %d, want 0", n)
	}
}

// histogram reads the one histogram series of a metric in a namespace.
func histogram(t *testing.T, name, ns string) *dto.Histogram {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == LabelNamespace && l.GetValue() == ns {
					return m.GetHistogram()
				}
			}
		}
	}
	t.Fatalf("no %s series in namespace %s", name, ns)
	return nil
}

// TestSuiteV2Rates: the v2 per-persona rates are set when defined, absent
// when undefined, the correct-abstention rate is one series per status
// (never pooled), and the counters count the run's executions.
func TestSuiteV2Rates(t *testing.T) {
	s := Suite{Namespace: "ns-v2", Suite: "matched", Corpus: "corp"}
	undefined := scoring.Ratio{}
	RecordSuiteCompletion(s, SuiteCompletion{Finished: time.Unix(100, 0), Personas: []PersonaScores{
		{Persona: "contractor", Stats: scoring.Stats{FailedToAbstainRate: ratio(0.5), FailedToAbstain: 1,
			CorrectAbstention: map[scoring.Action]scoring.Ratio{scoring.ActionNotApplicable: ratio(0), scoring.ActionClarify: undefined}}},
		{Persona: "employee", Stats: scoring.Stats{StaleRate: ratio(0.5), Stale: 1, CitationValidity: ratio(1),
			CorrectAbstention: map[scoring.Action]scoring.Ratio{scoring.ActionNotFound: ratio(1), scoring.ActionClarify: ratio(0)}}},
	}})
	failedToAbstainRate, staleRate := suiteRates["failed_to_abstain_rate"], suiteRates["stale_rate"]
	if got := testutil.ToFloat64(failedToAbstainRate.WithLabelValues("ns-v2", "matched", "corp", "contractor")); got != 0.5 {
		t.Errorf("failed-to-abstain rate = %v, want 0.5", got)
	}
	if got := testutil.ToFloat64(staleRate.WithLabelValues("ns-v2", "matched", "corp", "employee")); got != 0.5 {
		t.Errorf("stale rate = %v, want 0.5", got)
	}
	// The employee has no required-block case: no failed-to-abstain series.
	if n := testutil.CollectAndCount(failedToAbstainRate); n != 1 {
		t.Errorf("failed-to-abstain series = %d, want 1 (contractor only)", n)
	}
	if n := testutil.CollectAndCount(SuiteCorrectAbstention); n != 3 {
		t.Errorf("correct-abstention series = %d, want 3 (one per defined status)", n)
	}
	if got := testutil.ToFloat64(SuiteCorrectAbstention.WithLabelValues("ns-v2", "matched", "corp", "employee", "clarify")); got != 0 {
		t.Errorf("employee clarify = %v, want 0", got)
	}
	if got := testutil.ToFloat64(suiteCountTotals[scoring.FigureFailedToAbstain].WithLabelValues("ns-v2", "matched", "corp", "contractor")); got != 1 {
		t.Errorf("failed_to_abstain_total = %v, want 1", got)
	}
	// Every persona gets the counters, at zero when nothing happened.
	staleTotal := suiteCountTotals["stale"]
	if got := testutil.ToFloat64(staleTotal.WithLabelValues("ns-v2", "matched", "corp", "contractor")); got != 0 {
		t.Errorf("contractor stale_total = %v, want 0", got)
	}
	ForgetSuite("ns-v2", "matched")
	if n := testutil.CollectAndCount(SuiteCorrectAbstention) + testutil.CollectAndCount(staleTotal); n != 0 {
		t.Errorf("%d series left after ForgetSuite", n)
	}
}

// TestSuiteAffectedAnswers: the affected-answers count is a gauge of the last
// run per persona, set even where the disclosure rate is undefined (leaks in
// answerable cases, no required-block case) and at 0 for a clean persona; a
// later run that did not score a persona drops its series.
func TestSuiteAffectedAnswers(t *testing.T) {
	s := Suite{Namespace: "ns-aff", Suite: "access", Corpus: "corp"}
	RecordSuiteCompletion(s, SuiteCompletion{Finished: time.Unix(100, 0), Personas: []PersonaScores{
		{Persona: "contractor", Stats: scoring.Stats{AffectedAnswers: 2}},
		{Persona: "employee"},
	}})
	affected := suiteCountGauges[scoring.FigureAffectedAnswers]
	if got := testutil.ToFloat64(affected.WithLabelValues("ns-aff", "access", "corp", "contractor")); got != 2 {
		t.Errorf("contractor affected answers = %v, want 2", got)
	}
	if got := testutil.ToFloat64(affected.WithLabelValues("ns-aff", "access", "corp", "employee")); got != 0 {
		t.Errorf("employee affected answers = %v, want 0", got)
	}
	if got := testutil.ToFloat64(SuiteCases.WithLabelValues("ns-aff", "access", "corp", "contractor", scoring.FigureAffectedAnswers)); got != 2 {
		t.Errorf("contractor suite_cases{outcome=affected_answers} = %v, want 2", got)
	}
	if n := testutil.CollectAndCount(suiteRates[scoring.FigureDisclosureRate]); n != 0 {
		t.Errorf("disclosure rate series = %d, want none: no persona had a required-block case", n)
	}
	if got := testutil.ToFloat64(suiteCountTotals[scoring.FigureAffectedAnswers].WithLabelValues("ns-aff", "access", "corp", "contractor")); got != 2 {
		t.Errorf("contractor disclosures_total = %v, want 2", got)
	}
	RecordSuiteCompletion(s, SuiteCompletion{Finished: time.Unix(200, 0), Personas: []PersonaScores{{Persona: "employee"}}})
	if n := testutil.CollectAndCount(affected); n != 1 {
		t.Errorf("affected-answers series after a run without the contractor = %d, want 1", n)
	}
	ForgetSuite("ns-aff", "access")
	if n := testutil.CollectAndCount(affected); n != 0 {
		t.Errorf("affected-answers series after ForgetSuite = %d, want 0", n)
	}
}
