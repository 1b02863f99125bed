package evalsuite

import (
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/controllers/shared"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// TestSuiteRunOrderWithinOneSecond checks that runs finishing in the same
// second are ordered by the completed-at annotation, not by their (hashed,
// random-order) names: otherwise pruning could delete the newest run.
func TestSuiteRunOrderWithinOneSecond(t *testing.T) {
	second := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	run := func(name string, precise time.Duration, annotate bool) *v1alpha1.SuiteRun {
		r := &v1alpha1.SuiteRun{ObjectMeta: metav1.ObjectMeta{Name: name}}
		r.Status.Phase = v1alpha1.SuiteRunSucceeded
		r.Status.CompletionTime = &metav1.Time{Time: second}
		if annotate {
			r.Annotations = map[string]string{v1alpha1.AnnotationCompletedAt: second.Add(precise).Format(time.RFC3339Nano)}
		}
		return r
	}
	tests := []struct {
		name string
		runs []*v1alpha1.SuiteRun
		want string
	}{
		// "z" sorts last by name but finished first.
		{name: "annotation orders within the second", want: "a",
			runs: []*v1alpha1.SuiteRun{run("z", 100*time.Millisecond, true), run("a", 900*time.Millisecond, true)}},
		{name: "without annotations the name breaks the tie", want: "z",
			runs: []*v1alpha1.SuiteRun{run("z", 0, false), run("a", 0, false)}},
		// An annotation disagreeing with status (another second) is ignored.
		{name: "stale annotation ignored", want: "z",
			runs: []*v1alpha1.SuiteRun{run("z", 0, false), run("a", -2*time.Second, true)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var runs shared.ChildRuns
			for _, r := range tt.runs {
				runs.Add(describeSuiteRun(r))
			}
			got := runs.Newest()
			if got == nil || got.GetName() != tt.want {
				t.Errorf("newest = %v, want %s", got, tt.want)
			}
		})
	}
}
