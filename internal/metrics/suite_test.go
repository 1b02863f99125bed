package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestSuiteCompletionAndForgetSuite(t *testing.T) {
	s := Suite{Namespace: "ns-s", Suite: "iso", Corpus: "corp"}
	other := Suite{Namespace: "ns-s", Suite: "other", Corpus: "corp"}
	one, half := 1.0, 0.5
	RecordSuiteCompletion(s, SuiteCompletion{Passed: false, Finished: time.Unix(100, 0), Personas: []PersonaScores{
		{Persona: "alice", Utility: &one, Recall: &half},
		{Persona: "mallory", DisclosureRate: &one, Disclosures: 1},
	}})
	RecordSuiteCompletion(other, SuiteCompletion{Passed: true, Finished: time.Unix(200, 0)})

	if got := testutil.ToFloat64(SuiteRunsTotal.WithLabelValues("ns-s", "iso", "corp", ResultFailed)); got != 1 {
		t.Errorf("suite_runs_total{failed} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(SuiteLastRunPassed.WithLabelValues("ns-s", "iso", "corp")); got != 0 {
		t.Errorf("suite_last_run_passed after a failed run = %v, want 0", got)
	}
	if got := testutil.ToFloat64(SuiteLastRunPassed.WithLabelValues("ns-s", "other", "corp")); got != 1 {
		t.Errorf("suite_last_run_passed after a passed run = %v, want 1", got)
	}
	if got := testutil.ToFloat64(SuiteDisclosuresTotal.WithLabelValues("ns-s", "iso", "corp", "mallory")); got != 1 {
		t.Errorf("disclosures = %v, want 1", got)
	}
	// Undefined values have no series: alice has no disclosure rate,
	// mallory no utility.
	if n := testutil.CollectAndCount(SuiteDisclosureRate); n != 1 {
		t.Errorf("disclosure rate series = %d, want 1 (mallory only)", n)
	}
	if n := testutil.CollectAndCount(SuiteUtility); n != 1 {
		t.Errorf("utility series = %d, want 1 (alice only)", n)
	}

	// A later run where alice's utility is undefined drops her gauge.
	RecordSuiteCompletion(s, SuiteCompletion{Passed: true, Finished: time.Unix(300, 0), Personas: []PersonaScores{{Persona: "alice"}}})
	if n := testutil.CollectAndCount(SuiteUtility); n != 0 {
		t.Errorf("utility series after an undefined run = %d, want 0", n)
	}
	if got := testutil.ToFloat64(SuiteLastCompletedRun.WithLabelValues("ns-s", "iso", "corp")); got != 300 {
		t.Errorf("last completed = %v, want 300", got)
	}

	ForgetSuite("ns-s", "iso")
	if n := testutil.CollectAndCount(SuiteRunsTotal); n != 1 {
		t.Errorf("suite_runs_total series after ForgetSuite = %d, want 1 (the other suite)", n)
	}
	if n := testutil.CollectAndCount(SuiteDisclosuresTotal); n != 0 {
		t.Errorf("disclosures series after ForgetSuite = %d, want 0", n)
	}
}
