package suiterun

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/ragcanary/ragcanary/controllers/shared"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/suite"
	"github.com/ragcanary/ragcanary/internal/target"
)

// fixtureRetry is how soon a failed fixture removal is tried again.
const fixtureRetry = 30 * time.Second

// fixturePending reports whether the run planted a fixture that is not
// known to be removed.
func fixturePending(run *v1alpha1.SuiteRun) bool {
	return controllerutil.ContainsFinalizer(run, SuiteRunFinalizer) && (run.Status.Fixture == nil || !run.Status.Fixture.Removed)
}

// retryFixtureRemoval removes what a finished run left at the target, then
// releases the run.
func (r *SuiteRunReconciler) retryFixtureRemoval(ctx context.Context, run *v1alpha1.SuiteRun) (ctrl.Result, error) {
	if !fixturePending(run) {
		return ctrl.Result{}, r.releaseRun(ctx, run)
	}
	err := r.removeFixture(ctx, run)
	before := run.DeepCopy()
	var abandon *abandonError
	if errors.As(err, &abandon) {
		r.Recorder.Eventf(run, nil, corev1.EventTypeWarning, v1alpha1.ReasonFixtureAbandoned, "Cleanup",
			"fixture documents under prefix %s may remain at the target: %s", fixturePrefix(run), abandon.msg)
		setRunCondition(run, v1alpha1.ConditionFixtureRemoved, metav1.ConditionFalse, v1alpha1.ReasonFixtureAbandoned,
			shared.TruncateMessage("planted fixture documents may remain at the target: "+abandon.msg))
		if err := shared.PatchStatus(ctx, r.Client, before, run, before.Status, run.Status); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, r.releaseRun(ctx, run)
	}
	if err != nil {
		setRunCondition(run, v1alpha1.ConditionFixtureRemoved, metav1.ConditionFalse, v1alpha1.ReasonFixtureRemovalFailed,
			shared.TruncateMessage("removing the fixture failed, retrying: "+suite.ErrorText(err)))
		return ctrl.Result{RequeueAfter: fixtureRetry}, shared.PatchStatus(ctx, r.Client, before, run, before.Status, run.Status)
	}
	markRemoved(run)
	if err := shared.PatchStatus(ctx, r.Client, before, run, before.Status, run.Status); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.releaseRun(ctx, run)
}

// finalize removes the fixture of a run deleted mid-flight (or before a
// failed removal succeeded) and lets it go. When neither the plan nor the
// corpus can be found any more, it gives up with a Warning event, so a
// namespace deletion is never blocked forever.
func (r *SuiteRunReconciler) finalize(ctx context.Context, run *v1alpha1.SuiteRun) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(run, SuiteRunFinalizer) {
		return ctrl.Result{}, nil
	}
	err := r.removeFixture(ctx, run)
	var abandon *abandonError
	switch {
	case errors.As(err, &abandon):
		log.FromContext(ctx).Info("fixture removal abandoned: planted documents may remain at the target", "reason", abandon.msg)
		r.Recorder.Eventf(run, nil, corev1.EventTypeWarning, v1alpha1.ReasonFixtureAbandoned, "Cleanup",
			"fixture documents under prefix %s may remain at the target: %s", fixturePrefix(run), abandon.msg)
	case err != nil:
		return ctrl.Result{RequeueAfter: fixtureRetry}, nil
	}
	return ctrl.Result{}, r.releaseRun(ctx, run)
}

// abandonError is a removal that cannot succeed by retrying.
type abandonError struct{ msg string }

func (e *abandonError) Error() string { return e.msg }

// removeFixture removes every document and membership of the run's plan
// through its corpus.
func (r *SuiteRunReconciler) removeFixture(ctx context.Context, run *v1alpha1.SuiteRun) error {
	cm, err := r.reportConfigMap(ctx, run)
	if err != nil && !errors.Is(err, errReportTaken) {
		return err
	}
	if cm == nil || cm.Data[v1alpha1.ReportKeyPlan] == "" {
		return &abandonError{msg: "the run's stored plan is gone"}
	}
	var plan suite.Plan
	if err := json.Unmarshal([]byte(cm.Data[v1alpha1.ReportKeyPlan]), &plan); err != nil {
		return &abandonError{msg: "the run's stored plan is unreadable"}
	}
	f, err := plan.LoadFixture()
	if err != nil || f == nil {
		return &abandonError{msg: "the run's stored plan has no usable fixture"}
	}
	var obj v1alpha1.Corpus
	if err := r.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: plan.Corpus}, &obj); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return &abandonError{msg: "Corpus " + plan.Corpus + " no longer exists"}
		}
		return err
	}
	corpus, err := r.Door.Corpus(ctx, &obj)
	if p, ok := target.IsUserProblem(err); ok {
		return &abandonError{msg: p.Message}
	}
	if err != nil {
		return err
	}
	defer corpus.Release()
	return suite.NewScope(f, fixturePrefix(run)).Remove(ctx, corpus.Driver, corpus.Wait)
}

func markRemoved(run *v1alpha1.SuiteRun) {
	if run.Status.Fixture != nil {
		run.Status.Fixture.Removed = true
	}
	setRunCondition(run, v1alpha1.ConditionFixtureRemoved, metav1.ConditionTrue, v1alpha1.ReasonFixtureRemoved,
		"every planted fixture document and membership was removed from the target")
}

// releaseRun drops the fixture finalizer.
func (r *SuiteRunReconciler) releaseRun(ctx context.Context, run *v1alpha1.SuiteRun) error {
	if !controllerutil.ContainsFinalizer(run, SuiteRunFinalizer) {
		return nil
	}
	before := run.DeepCopy()
	controllerutil.RemoveFinalizer(run, SuiteRunFinalizer)
	return client.IgnoreNotFound(r.Patch(ctx, run, client.MergeFrom(before)))
}
