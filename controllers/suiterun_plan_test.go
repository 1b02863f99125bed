package controllers

import (
	"context"
	"testing"

	"github.com/ragcanary/ragcanary/controllers/suiterun"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// TestRunKeepsItsPlan: a run freezes the suite once; after the suite is
// edited, a resumed attempt (an operator restart) executes the stored plan,
// not the live suite. The run here exists only in memory, so the manager's
// own controller never races the reconciler under test.
func TestRunKeepsItsPlan(t *testing.T) {
	f := newSuiteFixture(t, ragtarget.Config{}, nil)
	r := &suiterun.SuiteRunReconciler{Client: k8sClient, APIReader: k8sClient, Clock: clock.RealClock{}}
	run := &v1alpha1.SuiteRun{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "in-memory-1", UID: types.UID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")},
		Spec: v1alpha1.SuiteRunSpec{SuiteRef: v1alpha1.LocalObjectReference{Name: f.suite.Name}}}
	ctx := context.Background()
	first, _, out, err := r.Plan(ctx, run, f.getSuite())
	if err != nil || out != nil {
		t.Fatalf("plan: %v %+v", err, out)
	}
	f.patchSuite(`{"spec":{"cases":[{"id":"edited","question":"Something else?","expectations":[{"persona":"alice"}]}]}}`)
	edited := f.getSuite()
	if edited.Spec.Cases[0].ID != "edited" {
		t.Fatalf("suite not edited: %+v", edited.Spec.Cases)
	}
	again, _, out, err := r.Plan(ctx, run, edited)
	if err != nil || out != nil {
		t.Fatalf("plan again: %v %+v", err, out)
	}
	if again.CasesHash() != first.CasesHash() || len(again.Jobs) != 4 || again.Jobs[0].SuiteCase != "salary-bands" {
		t.Errorf("resumed plan has %d jobs (first %q), hash %s; want the frozen 4 jobs, hash %s",
			len(again.Jobs), again.Jobs[0].SuiteCase, again.CasesHash(), first.CasesHash())
	}
	// Another run's report under this name is never taken over.
	other := run.DeepCopy()
	other.UID = types.UID("ffffffff-0000-0000-0000-000000000000")
	if _, _, out, err := r.Plan(ctx, other, edited); err != nil || out == nil || out.Reason() != v1alpha1.ReasonReportConflict {
		t.Errorf("plan for a run not owning the report: %v %+v, want %s", err, out, v1alpha1.ReasonReportConflict)
	}
}
