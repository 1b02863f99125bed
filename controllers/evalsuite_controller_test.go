package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
	"github.com/ragcanary/ragcanary/internal/schedule"
)

// waitSuiteCondition waits until the suite's condition has status and reason.
func (f *suiteFixture) waitSuiteCondition(condType string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	f.t.Helper()
	var cond *metav1.Condition
	testutil.Eventually(f.t, eventuallyTimeout, fmt.Sprintf("%s=%s/%s", condType, status, reason), func() error {
		cond = meta.FindStatusCondition(f.getSuite().Status.Conditions, condType)
		if cond == nil || cond.Status != status || cond.Reason != reason {
			return fmt.Errorf("condition is %+v", cond)
		}
		return nil
	})
	return cond
}

// waitRunNowToken waits until the suite acted on token: proof that a
// reconcile after the annotation finished.
func (f *suiteFixture) waitRunNowToken(token string) {
	f.t.Helper()
	testutil.Eventually(f.t, eventuallyTimeout, "lastRunNowToken "+token, func() error {
		if got := f.getSuite().Status.LastRunNowToken; got != token {
			return fmt.Errorf("lastRunNowToken is %q", got)
		}
		return nil
	})
}

// TestEvalSuiteRunNowCreatesExactlyOneRun asks for a run twice with the
// same token and once more after an unrelated change: one run exists.
func TestEvalSuiteRunNowCreatesExactlyOneRun(t *testing.T) {
	f := newSuiteFixture(t, ragtarget.Config{}, nil)
	cond := f.waitSuiteCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonOnDemand)
	if !strings.Contains(cond.Message, v1alpha1.AnnotationRunNow) {
		t.Errorf("on-demand message %q does not say how to run", cond.Message)
	}
	if got := f.getSuite().Status.NextScheduleTime; got != nil {
		t.Errorf("nextScheduleTime = %v without a schedule, want unset", got)
	}
	f.runNow("once")
	f.waitFinishedRun(runNowName(f.suite.Name, "once"))
	f.waitRunNowToken("once")
	f.runNow("once")
	f.poke()
	gen := f.getSuite().Generation
	testutil.Eventually(t, eventuallyTimeout, "suite reconciled after the poke", func() error {
		s := f.getSuite()
		if s.Status.ObservedGeneration != gen || s.Status.LastRun == nil {
			return fmt.Errorf("observedGeneration %d, lastRun %+v", s.Status.ObservedGeneration, s.Status.LastRun)
		}
		return nil
	})
	runs := f.runs()
	if len(runs) != 1 || runs[0].Name != runNowName(f.suite.Name, "once") {
		t.Fatalf("runs = %v, want exactly %s", runNames(runs), runNowName(f.suite.Name, "once"))
	}
	run := runs[0]
	if !metav1.IsControlledBy(&run, f.getSuite()) || run.Labels[v1alpha1.LabelSuite] != f.suite.Name {
		t.Errorf("run %s is not owned and labelled by the suite: %v %v", run.Name, run.OwnerReferences, run.Labels)
	}
}

// TestEvalSuiteScheduleCreatesRun steps the fake schedule clock past the
// first interval: the run for that scheduled time is created.
func TestEvalSuiteScheduleCreatesRun(t *testing.T) {
	f := newSuiteFixture(t, ragtarget.Config{}, func(s *v1alpha1.EvalSuite) {
		s.Spec.Schedule = &v1alpha1.Schedule{Every: &metav1.Duration{Duration: time.Hour}}
	})
	due := f.created.Add(time.Hour)
	testutil.Eventually(t, eventuallyTimeout, "nextScheduleTime is the first interval", func() error {
		s := f.getSuite()
		if s.Status.NextScheduleTime == nil || !s.Status.NextScheduleTime.Time.Equal(due) {
			return fmt.Errorf("nextScheduleTime is %v", s.Status.NextScheduleTime)
		}
		return nil
	})
	if n := len(f.runs()); n != 0 {
		t.Fatalf("%d runs before the schedule was due", n)
	}
	scheduleClock.SetTime(due.Add(time.Second))
	f.poke()
	run := f.waitFinishedRun(schedule.RunName(f.suite.Name, due))
	if run.Annotations[v1alpha1.AnnotationScheduledTime] != due.Format(time.RFC3339) {
		t.Errorf("scheduled-time annotation = %q, want %s", run.Annotations[v1alpha1.AnnotationScheduledTime], due.Format(time.RFC3339))
	}
	testutil.Eventually(t, eventuallyTimeout, "lastScheduleTime recorded", func() error {
		s := f.getSuite()
		if s.Status.LastScheduleTime == nil || !s.Status.LastScheduleTime.Time.Equal(due) {
			return fmt.Errorf("lastScheduleTime is %v", s.Status.LastScheduleTime)
		}
		return nil
	})
}

// TestEvalSuiteHistoryLimitsPrune keeps one passed run: three runs leave
// only the newest.
func TestEvalSuiteHistoryLimitsPrune(t *testing.T) {
	f := newSuiteFixture(t, ragtarget.Config{}, func(s *v1alpha1.EvalSuite) {
		s.Spec.SuccessfulRunsHistoryLimit = ptr.To[int32](1)
	})
	var last string
	for _, token := range []string{"h1", "h2", "h3"} {
		run := f.runOnce(token)
		if run.Status.Phase != v1alpha1.SuiteRunSucceeded {
			t.Fatalf("run %s phase %s, want Succeeded", run.Name, run.Status.Phase)
		}
		last = run.Name
		// Forbid holds a new run while one is active; wait for the suite
		// to see this one finish before asking again.
		f.waitRunNowToken(token)
	}
	testutil.Eventually(t, eventuallyTimeout, "history pruned to the newest run", func() error {
		var live []string
		for _, r := range f.runs() {
			if r.DeletionTimestamp.IsZero() {
				live = append(live, r.Name)
			}
		}
		if len(live) != 1 || live[0] != last {
			return fmt.Errorf("runs are %v, want only %s", live, last)
		}
		return nil
	})
}

// TestEvalSuiteInvalidRelevantNotAllowed: a relevant ID outside allowedIDs
// makes the suite not Ready naming the case, and run-now creates nothing.
func TestEvalSuiteInvalidRelevantNotAllowed(t *testing.T) {
	f := newSuiteFixture(t, ragtarget.Config{}, func(s *v1alpha1.EvalSuite) {
		s.Spec.Cases[1].Expectations[1].RelevantIDs = []string{salaryChunk}
	})
	f.runNow("blocked")
	cond := f.waitSuiteCondition(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonInvalidCases)
	for _, want := range []string{`"vacation"`, `"mallory"`, salaryChunk} {
		if !strings.Contains(cond.Message, want) {
			t.Errorf("message %q does not name %s", cond.Message, want)
		}
	}
	f.expectNoRuns()
}

// TestEvalSuiteCaseSources: a missing ConfigMap makes the suite not Ready
// naming it; creating it with YAML cases that duplicate an inline ID names
// the duplicate; fixing the ConfigMap makes the suite Ready and runnable.
func TestEvalSuiteCaseSources(t *testing.T) {
	f := newSuiteFixture(t, ragtarget.Config{}, func(s *v1alpha1.EvalSuite) {
		s.Spec.CaseSources = []v1alpha1.CaseSource{{ConfigMapRef: v1alpha1.LocalObjectReference{Name: "more-cases"}, Key: "cases.yaml"}}
	})
	f.runNow("blocked")
	cond := f.waitSuiteCondition(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonConfigMapNotFound)
	if !strings.Contains(cond.Message, `"more-cases"`) {
		t.Errorf("message %q does not name the ConfigMap", cond.Message)
	}
	f.expectNoRuns()

	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "more-cases"},
		Data:       map[string]string{"cases.yaml": yamlCases("vacation")},
	}
	f.create(cm)
	cond = f.waitSuiteCondition(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonInvalidCases)
	if !strings.Contains(cond.Message, `"vacation"`) || !strings.Contains(cond.Message, "more-cases") {
		t.Errorf("message %q does not name the duplicate case and its ConfigMap", cond.Message)
	}
	f.expectNoRuns()

	cm.Data["cases.yaml"] = yamlCases("handbook-owner")
	if err := k8sClient.Update(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	f.waitSuiteCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonOnDemand)
	// The pending run-now token is acted on once the suite is valid.
	run := f.waitFinishedRun(runNowName(f.suite.Name, "blocked"))
	if got := ptr.Deref(run.Status.Executions, -1); got != 5 {
		t.Errorf("executions = %d, want 5 (4 inline + 1 from the ConfigMap)", got)
	}
}

// yamlCases is one YAML case with the given ID that alice can answer.
func yamlCases(id string) string {
	return fmt.Sprintf(`- id: %s
  question: Who keeps the vacation handbook?
  expectations:
    - persona: alice
      relevantIDs: [%q]
      allowedIDs: [%q, %q]
`, id, handbookChunk, handbookChunk, salaryChunk)
}

// expectNoRuns checks that no run exists once the suite has settled: the
// condition was already observed, so the reconcile that would have created
// one has finished.
func (f *suiteFixture) expectNoRuns() {
	f.t.Helper()
	if runs := f.runs(); len(runs) != 0 {
		f.t.Fatalf("runs = %v, want none for an invalid suite", runNames(runs))
	}
	var list v1alpha1.SuiteRunList
	if err := k8sClient.List(context.Background(), &list, client.InNamespace(f.ns)); err != nil {
		f.t.Fatal(err)
	}
}

func runNames(runs []v1alpha1.SuiteRun) []string {
	var names []string
	for _, r := range runs {
		names = append(names, r.Name)
	}
	return names
}
