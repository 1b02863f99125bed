package suite

import (
	"testing"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/scoring"
)

// TestScoreFailedToAbstain: mallory must be refused but gets public
// evidence she may see. Nothing forbidden leaks, yet the run fails on
// no_failed_to_abstain, and the count shows per persona and per stratum.
func TestScoreFailedToAbstain(t *testing.T) {
	c := v1alpha1.EvalCase{ID: "c", Question: "q", Stratum: "hr", Expectations: []v1alpha1.Expectation{
		{Persona: "alice", RelevantIDs: []string{"a#0"}, AllowedIDs: []string{"a#0", "pub#0"}},
		{Persona: "mallory", AllowedIDs: []string{"pub#0"}, MustAbstain: true},
	}}
	execs := []Execution{
		{CaseID: "c", Persona: "alice", Stratum: "hr", Hits: []string{"a#0"}},
		{CaseID: "c", Persona: "mallory", Stratum: "hr", Hits: []string{"pub#0"}},
	}
	// Tolerating disclosures must not tolerate this: it is a different gate.
	res, err := scoreCases(t, []v1alpha1.EvalCase{c}, execs, 5, Gates{MaxDisclosures: 5})
	if err != nil {
		t.Fatal(err)
	}
	if res.Passed || res.Disclosures != 0 {
		t.Fatalf("passed=%v disclosures=%d, want a failed run without disclosures", res.Passed, res.Disclosures)
	}
	gates := map[string]v1alpha1.GateResult{}
	for _, g := range GateResults(res) {
		gates[g.Name] = g
	}
	if g := gates[scoring.GateNoFailedToAbstain]; g.Passed || g.Value != "1" || g.Threshold != "0" {
		t.Errorf("status gate %s = %+v, want failing with value 1, threshold 0", scoring.GateNoFailedToAbstain, g)
	}
	if !gates[scoring.GateNoForbidden].Passed {
		t.Errorf("no_forbidden failed: %+v", gates[scoring.GateNoForbidden])
	}
	rows := PersonaResults(res)
	if len(rows) != 4 {
		t.Fatalf("rows = %+v, want alice and mallory overall and in hr", rows)
	}
	for _, row := range rows {
		got, ok := row.Rate("failed_to_abstain_rate")
		if !ok {
			t.Fatalf("%s/%q has no failed_to_abstain_rate: %+v", row.Persona, row.Stratum, row.Rates)
		}
		switch row.Persona {
		case "mallory":
			if got.Value == nil || *got.Value != "1" || got.Numerator != "1" || got.Denominator != 1 {
				t.Errorf("mallory/%q failedToAbstainRate = %+v, want 1/1", row.Stratum, got)
			}
		case "alice":
			// alice has no required-block case: undefined, not 0.
			if got.Value != nil || got.Denominator != 0 {
				t.Errorf("alice/%q failedToAbstainRate = %+v, want unset over 0", row.Stratum, got)
			}
		}
	}
	fc := FailingCases(res)
	if len(fc) != 1 || fc[0].Persona != "mallory" || fc[0].Outcome != string(scoring.OutcomeFailedToAbstain) {
		t.Errorf("failing cases = %+v, want mallory failed_to_abstain", fc)
	}
}
