package evalsuite

import (
	"context"
	"errors"
	"fmt"

	"github.com/ragcanary/ragcanary/controllers/shared"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/metrics"
	"github.com/ragcanary/ragcanary/internal/schedule"
	"github.com/ragcanary/ragcanary/internal/suite"
)

// Field indexes on EvalSuite, so a Corpus or case ConfigMap appearing or
// changing re-evaluates the suites that reference it.
const (
	suiteCorpusIndex    = "evalsuite.spec.corpusRef.name"
	suiteConfigMapIndex = "evalsuite.spec.caseSources.configMapRef.name"
)

// EvalSuiteReconciler creates SuiteRuns on an EvalSuite's schedule or on
// request, keeps the run history bounded and summarises the latest finished
// run. It validates the cases (the same loader the runs use) so a suite
// that cannot run says why instead of producing failed runs.
type EvalSuiteReconciler struct {
	shared.ParentReconciler
}

// +kubebuilder:rbac:groups=ragcanary.dev,resources=evalsuites,verbs=get;list;watch
// +kubebuilder:rbac:groups=ragcanary.dev,resources=evalsuites/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=ragcanary.dev,resources=suiteruns,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=ragcanary.dev,resources=corpora;personas,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile evaluates one EvalSuite and writes its status once.
func (r *EvalSuiteReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var s v1alpha1.EvalSuite
	if err := r.Get(ctx, req.NamespacedName, &s); err != nil {
		if client.IgnoreNotFound(err) == nil {
			// Gone: runs are garbage collected with it; drop its series.
			metrics.ForgetSuite(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.Shard.Draining(&s) {
		return r.HandOver(ctx, &s, &v1alpha1.SuiteRunList{}, describeSuiteRun, r.ForgetSuite)
	}
	if !s.DeletionTimestamp.IsZero() {
		metrics.ForgetSuite(s.Namespace, s.Name)
		return ctrl.Result{}, nil
	}
	before := s.DeepCopy()
	result, err := r.reconcileSuite(ctx, &s)
	if err == nil {
		s.Status.ObservedGeneration = s.Generation
	}
	patchErr := shared.PatchStatus(ctx, r.Client, before, &s, before.Status, s.Status)
	return result, errors.Join(err, patchErr)
}

// reconcileSuite runs the steps in order. Observing and pruning runs come
// first because they do not depend on the spec being usable: a suite with
// broken cases still reports its last result.
func (r *EvalSuiteReconciler) reconcileSuite(ctx context.Context, s *v1alpha1.EvalSuite) (ctrl.Result, error) {
	runs, err := r.ListRuns(ctx, &v1alpha1.SuiteRunList{}, s, v1alpha1.LabelSuite, describeSuiteRun)
	if err != nil {
		return ctrl.Result{}, err
	}
	observeSuiteRuns(s, runs)
	sched := r.Scheduler()
	if err := sched.Prune(ctx, runs, s.Spec.SuccessfulRunsHistoryLimit, s.Spec.FailedRunsHistoryLimit); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.pruneReports(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	parsed, ready, err := r.readiness(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	meta.SetStatusCondition(&s.Status.Conditions, ready)
	if ready.Status != metav1.ConditionTrue {
		// The user must fix the spec, a ConfigMap or a reference; the
		// watches bring the suite back. No requeue, so no hot loop.
		// No run will be created while it is not Ready, so no next time
		// may be shown either.
		log.FromContext(ctx).Info("suite not ready", "reason", ready.Reason)
		s.Status.NextScheduleTime = nil
		return ctrl.Result{}, nil
	}
	return sched.Schedule(ctx, suiteParent(s, parsed), runs, func(planned *schedule.Run) client.Object {
		return newSuiteRun(s, planned)
	})
}

// describeSuiteRun tells the shared scheduling code about one SuiteRun.
// Success is a passed run, matching successfulRunsHistoryLimit.
func describeSuiteRun(obj client.Object) shared.ChildRun {
	run := obj.(*v1alpha1.SuiteRun)
	return shared.ChildRun{
		Obj:        run,
		Finished:   shared.SuiteRunFinished(run),
		Succeeded:  run.Status.Phase == v1alpha1.SuiteRunSucceeded,
		Completion: shared.PreciseCompletion(run),
	}
}

// suiteParent adapts the suite to the shared scheduler. Suites never
// overlap runs: Forbid is their fixed policy.
func suiteParent(s *v1alpha1.EvalSuite, sched *schedule.Schedule) shared.ScheduledParent {
	return shared.ScheduledParent{
		Obj:       s,
		Sched:     sched,
		Suspended: shared.PtrTrue(s.Spec.Suspend),
		Policy:    v1alpha1.ForbidConcurrent,
		Status: shared.SchedulingStatus{
			Active:           &s.Status.Active,
			LastScheduleTime: &s.Status.LastScheduleTime,
			NextScheduleTime: &s.Status.NextScheduleTime,
			LastRunNowToken:  &s.Status.LastRunNowToken,
		},
	}
}

// newSuiteRun builds a run of the suite. The run reads the suite's cases
// when it starts.
func newSuiteRun(s *v1alpha1.EvalSuite, planned *schedule.Run) *v1alpha1.SuiteRun {
	return &v1alpha1.SuiteRun{
		ObjectMeta: metav1.ObjectMeta{
			Name:      planned.Name,
			Namespace: s.Namespace,
			Labels:    map[string]string{v1alpha1.LabelSuite: schedule.LabelValue(s.Name)},
		},
		Spec: v1alpha1.SuiteRunSpec{SuiteRef: v1alpha1.LocalObjectReference{Name: s.Name}},
	}
}

// observeSuiteRuns recomputes status.active, status.lastRun and the Passed
// condition from the runs.
func observeSuiteRuns(s *v1alpha1.EvalSuite, runs shared.ChildRuns) {
	s.Status.Active = runs.ActiveRefs()
	if latest, ok := runs.Newest().(*v1alpha1.SuiteRun); ok && latest != nil && suiteSummaryOutdated(latest, s.Status.LastRun) {
		s.Status.LastRun = summariseSuiteRun(latest)
	}
	meta.SetStatusCondition(&s.Status.Conditions, suitePassedCondition(s.Status.LastRun, s.Generation))
}

// suiteSummaryOutdated reports whether run should replace the summary. The
// summary outlives its run (a history limit of 0 deletes it), so an older
// run never overwrites a newer summary.
func suiteSummaryOutdated(run *v1alpha1.SuiteRun, summary *v1alpha1.SuiteRunSummary) bool {
	if summary == nil || summary.Name == run.Name || summary.CompletionTime == nil {
		return true
	}
	return !shared.PreciseCompletion(run).Before(summary.CompletionTime.Time)
}

func summariseSuiteRun(run *v1alpha1.SuiteRun) *v1alpha1.SuiteRunSummary {
	return &v1alpha1.SuiteRunSummary{
		Name:           run.Name,
		Passed:         run.Status.Phase == v1alpha1.SuiteRunSucceeded,
		Disclosures:    ptr.Deref(run.Status.Disclosures, 0),
		CompletionTime: run.Status.CompletionTime.DeepCopy(),
	}
}

// suitePassedCondition: Unknown before any run finished, then the latest
// finished run's verdict.
func suitePassedCondition(last *v1alpha1.SuiteRunSummary, generation int64) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionPassed, ObservedGeneration: generation}
	switch {
	case last == nil:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, v1alpha1.ReasonNoRunFinished, "no suite run has finished yet"
	case last.Passed:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1alpha1.ReasonSuitePassed, fmt.Sprintf("run %s passed every gate", last.Name)
	default:
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonSuiteFailed
		c.Message = fmt.Sprintf("run %s did not pass (%d disclosures); see its status and report", last.Name, last.Disclosures)
	}
	return c
}

// readiness parses the schedule and resolves the cases and references with
// the same loader the runs use. A problem the user must fix is a False
// condition, not an error.
func (r *EvalSuiteReconciler) readiness(ctx context.Context, s *v1alpha1.EvalSuite) (*schedule.Schedule, metav1.Condition, error) {
	cond := metav1.Condition{Type: v1alpha1.ConditionReady, ObservedGeneration: s.Generation, Status: metav1.ConditionFalse}
	var sched *schedule.Schedule
	if s.Spec.Schedule != nil {
		parsed, err := schedule.Parse(*s.Spec.Schedule)
		var invalid *schedule.InvalidError
		if errors.As(err, &invalid) {
			cond.Reason, cond.Message = v1alpha1.ReasonInvalidSchedule, invalid.Message
			return nil, cond, nil
		}
		sched = &parsed
	}
	def, err := suite.Resolve(ctx, r.Client, s)
	if err != nil {
		return nil, cond, shared.UserProblem(err, &cond)
	}
	gates, err := suite.ParseGates(s.Spec.Gates)
	if err != nil {
		return nil, cond, shared.UserProblem(err, &cond)
	}
	// Freezing derives fixture evidence and validates every case with the
	// scoring engine, exactly as a run does at its start.
	if _, err := suite.Freeze(def, s, gates, 0, r.Clock.Now()); err != nil {
		return nil, cond, shared.UserProblem(err, &cond)
	}
	cond.Status = metav1.ConditionTrue
	switch {
	case shared.PtrTrue(s.Spec.Suspend):
		cond.Reason, cond.Message = v1alpha1.ReasonSuspended, "the suite is suspended: no new runs are created"
	case sched == nil:
		cond.Reason, cond.Message = v1alpha1.ReasonOnDemand, fmt.Sprintf("no schedule: set the %s annotation to run", v1alpha1.AnnotationRunNow)
	default:
		cond.Reason, cond.Message = v1alpha1.ReasonScheduled, fmt.Sprintf("runs are scheduled by %s", sched)
	}
	return sched, cond, nil
}

// SetupWithManager registers the controller. The suite is reconciled on
// spec and annotation (run-now) changes, not its own status writes; on its
// runs changing phase; on a case ConfigMap changing; and on a Corpus or
// Persona appearing or disappearing. ConfigMaps are watched as metadata
// only, so the cache never holds a ConfigMap's data; the suite reads its
// ConfigMaps from the API server when it is reconciled.
func (r *EvalSuiteReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := r.indexReferences(mgr); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.EvalSuite{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, shared.DrainAsked()))).
		Owns(&v1alpha1.SuiteRun{}, builder.WithPredicates(shared.PhaseChanged(func(r *v1alpha1.SuiteRun) string { return string(r.Status.Phase) }))).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(shared.Referrers(r.Client, newSuiteList, suiteConfigMapIndex)),
			builder.OnlyMetadata).
		Watches(&v1alpha1.Corpus{}, handler.EnqueueRequestsFromMapFunc(shared.Referrers(r.Client, newSuiteList, suiteCorpusIndex)),
			builder.WithPredicates(shared.ExistenceChanged())).
		// Personas named inside ConfigMaps cannot be indexed, so a Persona
		// re-evaluates every suite in its namespace; they are few.
		Watches(&v1alpha1.Persona{}, handler.EnqueueRequestsFromMapFunc(shared.Referrers(r.Client, newSuiteList, "")),
			builder.WithPredicates(shared.ExistenceChanged())).
		WithOptions(controller.Options{NeedLeaderElection: shared.NeedLeader(r.Shard)}).
		Named("evalsuite").
		Complete(r)
}

func (r *EvalSuiteReconciler) indexReferences(mgr ctrl.Manager) error {
	if err := shared.IndexRunsByOwner(mgr, &v1alpha1.SuiteRun{}); err != nil {
		return err
	}
	indexer := mgr.GetFieldIndexer()
	if err := indexer.IndexField(context.Background(), &v1alpha1.EvalSuite{}, suiteCorpusIndex,
		func(o client.Object) []string {
			return []string{o.(*v1alpha1.EvalSuite).Spec.CorpusRef.Name}
		}); err != nil {
		return err
	}
	return indexer.IndexField(context.Background(), &v1alpha1.EvalSuite{}, suiteConfigMapIndex,
		func(o client.Object) []string {
			var names []string
			spec := o.(*v1alpha1.EvalSuite).Spec
			for _, src := range spec.CaseSources {
				names = append(names, src.ConfigMapRef.Name)
			}
			if spec.Fixture != nil {
				for _, src := range spec.Fixture.Sources {
					names = append(names, src.ConfigMapRef.Name)
				}
			}
			return names
		})
}

func newSuiteList() client.ObjectList { return &v1alpha1.EvalSuiteList{} }
