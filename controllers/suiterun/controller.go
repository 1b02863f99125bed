package suiterun

import (
	"context"
	"time"

	"github.com/ragcanary/ragcanary/controllers/shared"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/shard"
	"github.com/ragcanary/ragcanary/internal/target"
)

// suiteNotFoundGrace is how long a run waits for its suite before failing:
// a suite and a hand-written run applied together may arrive in any order.
const suiteNotFoundGrace = 10 * time.Second

// defaultSuiteRunWorkers is how many runs execute at once. Executions are
// network-bound and every run draws from its corpus's shared rate limit.
const defaultSuiteRunWorkers = 4

// SuiteRunReconciler executes one SuiteRun: it loads the suite's cases,
// asks every case as every persona through the corpus driver, scores the
// replies with the scoring engine and records the verdict. A run is one
// reconcile between two status writes (Running, then finished); after an
// operator restart a Running run simply executes again, which is safe
// because executions only read, and nothing was counted before the end.
type SuiteRunReconciler struct {
	client.Client
	// APIReader reads Secrets and report ConfigMaps uncached.
	APIReader client.Reader
	// Door resolves the corpus and personas; its limiters are shared with
	// the canary probes.
	Door *target.Door
	// Clock stamps start and completion times.
	Clock    clock.PassiveClock
	Recorder events.EventRecorder
	// Shard is this replica's place among the replicas.
	Shard shard.Replica
	// Workers bounds concurrently executing runs; defaultSuiteRunWorkers when zero.
	Workers int
	// Pause paces fixture visibility checks; nil uses suite.Pause's default.
	Pause func(context.Context) error
}

// +kubebuilder:rbac:groups=ragcanary.dev,resources=suiteruns,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=ragcanary.dev,resources=suiteruns/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=ragcanary.dev,resources=evalsuites;corpora;personas,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile starts, executes and finishes one run.
func (r *SuiteRunReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var run v1alpha1.SuiteRun
	if err := r.Get(ctx, req.NamespacedName, &run); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.Shard.Draining(&run) {
		// A reconcile executes a run to its end, and one key is never
		// reconciled twice at once: nothing of it runs here any more.
		return ctrl.Result{}, client.IgnoreNotFound(shard.Release(ctx, r.Client, &run))
	}
	if !run.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, &run)
	}
	if shared.SuiteRunFinished(&run) {
		return r.retryFixtureRemoval(ctx, &run)
	}
	s, wait, err := r.suiteOf(ctx, &run)
	if err != nil || wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, err
	}
	if err := r.start(ctx, &run); err != nil {
		return ctrl.Result{}, err
	}
	var done *runOutcome
	if s == nil {
		done = failedOutcome(v1alpha1.ReasonSuiteNotFound, "EvalSuite %q does not exist in namespace %q", run.Spec.SuiteRef.Name, run.Namespace)
	} else if done, err = r.execute(ctx, &run, s); err != nil {
		// Transient: nothing was recorded, so the retry starts afresh.
		return ctrl.Result{}, err
	}
	if err := r.finish(ctx, &run, s, done); err != nil {
		return ctrl.Result{}, err
	}
	if fixturePending(&run) {
		// Removal failed, or this attempt never reached the fixture an
		// earlier one planted: retried until everything is gone.
		return r.retryFixtureRemoval(ctx, &run)
	}
	return ctrl.Result{}, r.releaseRun(ctx, &run)
}

// suiteOf reads the run's suite. A missing suite gets a grace period,
// without any status write, then the run fails with SuiteNotFound (s nil).
func (r *SuiteRunReconciler) suiteOf(ctx context.Context, run *v1alpha1.SuiteRun) (*v1alpha1.EvalSuite, time.Duration, error) {
	var s v1alpha1.EvalSuite
	err := r.suiteReader(run).Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: run.Spec.SuiteRef.Name}, &s)
	if client.IgnoreNotFound(err) != nil {
		return nil, 0, err
	}
	if err == nil {
		return &s, 0, nil
	}
	if wait := run.CreationTimestamp.Add(suiteNotFoundGrace).Sub(r.Clock.Now()); wait > 0 && run.Status.Phase == "" {
		log.FromContext(ctx).V(1).Info("waiting for the suite", "suite", run.Spec.SuiteRef.Name)
		return nil, wait, nil
	}
	return nil, 0, nil
}

// suiteReader is where the run's suite is read. Sharded, a run its suite
// does not control (made by hand) is placed on its own name and may land
// on a replica whose cache lacks the suite: that replica reads it from the
// API server rather than fail the run with SuiteNotFound.
func (r *SuiteRunReconciler) suiteReader(run *v1alpha1.SuiteRun) client.Reader {
	if ref := metav1.GetControllerOf(run); r.Shard.Sharded && (ref == nil || ref.Kind != "EvalSuite") {
		return r.APIReader
	}
	return r.Client
}

// start records that the run is executing, once: the start time cannot be
// re-observed, so it is persisted before any execution.
func (r *SuiteRunReconciler) start(ctx context.Context, run *v1alpha1.SuiteRun) error {
	if run.Status.Phase == v1alpha1.SuiteRunRunning {
		log.FromContext(ctx).Info("resuming suite run: executing again")
		return nil
	}
	before := run.DeepCopy()
	run.Status.Phase = v1alpha1.SuiteRunRunning
	run.Status.StartTime = &metav1.Time{Time: r.Clock.Now()}
	setRunCondition(run, v1alpha1.ConditionComplete, metav1.ConditionFalse, v1alpha1.ReasonRunning, "executing the suite's cases")
	return shared.PatchStatus(ctx, r.Client, before, run, before.Status, run.Status)
}

// SetupWithManager registers the controller. Runs are reconciled when
// created (or listed again after a restart), not on their own status writes.
func (r *SuiteRunReconciler) SetupWithManager(mgr ctrl.Manager) error {
	workers := r.Workers
	if workers <= 0 {
		workers = defaultSuiteRunWorkers
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.SuiteRun{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, shared.DrainAsked()))).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers, NeedLeaderElection: shared.NeedLeader(r.Shard)}).
		Named("suiterun").
		Complete(r)
}
