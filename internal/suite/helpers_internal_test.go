package suite

import (
	"testing"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// scoreCases plans cases (no fixture) and scores execs against the plan.
func scoreCases(t testing.TB, cases []v1alpha1.EvalCase, execs []Execution, k int, g Gates) (Result, error) {
	t.Helper()
	plan, err := PlanCases(cases, k, g)
	if err != nil {
		t.Fatalf("PlanCases: %v", err)
	}
	return Score(plan, execs, nil)
}
