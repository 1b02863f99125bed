package schedule

import "github.com/ragcanary/ragcanary/api/v1alpha1"

// Action is what to do with a due run given the runs still active.
type Action string

const (
	// ActionCreate creates the due run.
	ActionCreate Action = "Create"
	// ActionWait leaves the run due until the active runs finish (Forbid).
	ActionWait Action = "Wait"
	// ActionReplace deletes the active runs, then creates the due run.
	ActionReplace Action = "Replace"
)

// Concurrency decides what a due run does while active runs exist. An empty
// policy is Forbid, the API default, so kinds without a policy field (an
// EvalSuite) never overlap runs.
func Concurrency(policy v1alpha1.ConcurrencyPolicy, active int) Action {
	if active == 0 {
		return ActionCreate
	}
	switch policy {
	case v1alpha1.AllowConcurrent:
		return ActionCreate
	case v1alpha1.ReplaceConcurrent:
		return ActionReplace
	default:
		return ActionWait
	}
}
