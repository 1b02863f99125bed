package schedule

import (
	"slices"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

func TestPrune(t *testing.T) {
	base := ts("2026-01-01T00:00:00Z")
	run := func(name string, minute int, ok bool) FinishedRun {
		return FinishedRun{Name: name, CompletionTime: base.Add(time.Duration(minute) * time.Minute), Succeeded: ok}
	}
	tests := []struct {
		name string
		// runs are the finished runs, in any order.
		runs []FinishedRun
		// successful and failed are the history limits.
		successful, failed int32
		// want are the names to delete, oldest first.
		want []string
	}{
		{name: "nothing to prune", runs: []FinishedRun{run("a", 1, true), run("b", 2, false)}, successful: 3, failed: 3, want: nil},
		{name: "keep newest successful", runs: []FinishedRun{run("s3", 3, true), run("s1", 1, true), run("s2", 2, true)},
			successful: 2, failed: 3, want: []string{"s1"}},
		{name: "limits are per class", runs: []FinishedRun{run("s1", 1, true), run("f1", 2, false), run("f2", 3, false), run("s2", 4, true)},
			successful: 1, failed: 1, want: []string{"s1", "f1"}},
		{name: "zero limit deletes all of that class", runs: []FinishedRun{run("s1", 1, true), run("f1", 2, false)},
			successful: 3, failed: 0, want: []string{"f1"}},
		{name: "negative limit is zero", runs: []FinishedRun{run("s1", 1, true)}, successful: -1, failed: 0, want: []string{"s1"}},
		{name: "missing completion time counts as oldest", runs: []FinishedRun{{Name: "nil", Succeeded: true}, run("s1", 1, true)},
			successful: 1, failed: 0, want: []string{"nil"}},
		{name: "ties broken by name", runs: []FinishedRun{run("b", 1, true), run("a", 1, true)}, successful: 1, failed: 0, want: []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Prune(tt.runs, tt.successful, tt.failed)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Prune = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestConcurrency(t *testing.T) {
	tests := []struct {
		name string
		// policy is the concurrency policy ("" = unset).
		policy v1alpha1.ConcurrencyPolicy
		// active is the number of unfinished runs.
		active int
		// want is the action for a due run.
		want Action
	}{
		{name: "forbid, idle", policy: v1alpha1.ForbidConcurrent, active: 0, want: ActionCreate},
		{name: "forbid, active", policy: v1alpha1.ForbidConcurrent, active: 1, want: ActionWait},
		{name: "unset is forbid", policy: "", active: 1, want: ActionWait},
		{name: "allow, active", policy: v1alpha1.AllowConcurrent, active: 2, want: ActionCreate},
		{name: "replace, idle creates", policy: v1alpha1.ReplaceConcurrent, active: 0, want: ActionCreate},
		{name: "replace, active", policy: v1alpha1.ReplaceConcurrent, active: 1, want: ActionReplace},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Concurrency(tt.policy, tt.active); got != tt.want {
				t.Errorf("Concurrency = %s, want %s", got, tt.want)
			}
		})
	}
}
