package scoring

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestSummaryDeterministic: a persona's sums over its strata add up in one
// order, so the same inputs give the same report bytes on every run. The
// recalls (1/3, 1/7, …) make floating-point addition order visible in the
// last digits.
func TestSummaryDeterministic(t *testing.T) {
	var cases []CaseV2
	var results []ResultV2
	for i := range 8 {
		for j := range 3 {
			id := fmt.Sprintf("c%d-%d", i, j)
			required := make([]string, 3+i)
			for n := range required {
				required[n] = fmt.Sprintf("%s-d%d", id, n)
			}
			cases = append(cases, CaseV2{ID: id, Question: "?", Persona: "p", Stratum: fmt.Sprintf("s%d", i),
				Expected: Expected{Action: ActionAnswer, AllowedEvidence: required, RequiredEvidence: required}})
			results = append(results, ResultV2{ID: id, RetrievedIDs: required[:1+j], CitedIDs: required[:1], Response: ActionAnswer})
		}
	}
	var first []byte
	for run := range 50 {
		rep, err := EvaluateV2(cases, results, Options{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(rep.Summary)
		if err != nil {
			t.Fatal(err)
		}
		if run == 0 {
			first = b
			continue
		}
		if i := firstDifference(b, first); i >= 0 {
			t.Fatalf("run %d summarised the same inputs differently at byte %d: …%s… vs …%s…", run, i, around(b, i), around(first, i))
		}
	}
}

// firstDifference is the index of the first byte where a and b differ, -1
// when they are equal.
func firstDifference(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

func around(b []byte, i int) []byte { return b[max(i-60, 0):min(i+20, len(b))] }
