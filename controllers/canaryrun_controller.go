package controllers

import (
	"context"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/inflight"
	"github.com/ragcanary/ragcanary/internal/probe"
	"github.com/ragcanary/ragcanary/internal/shard"
	"github.com/ragcanary/ragcanary/internal/target"
)

// DefaultProbeHeartbeat is how often probe counters are written to status
// between transitions. What cannot be re-observed is written when it
// changes (recordExclusionProgress), so the heartbeat only refreshes
// counters and the latest sighting; two minutes keeps an active run at
// about 0.008 status writes per second, under the 0.01 a 10,000-canary
// fleet on one replica is sized for (make bench-canaries).
const DefaultProbeHeartbeat = 2 * time.Minute

// waitRetry is how often a run waiting for a missing reference re-checks.
const waitRetry = 10 * time.Second

// canaryRunWorkers is how many runs reconcile at once. A step against a
// blackholed target holds a worker for up to the corpus timeout; with a few
// workers, runs of one slow corpus would delay every other run's deadlines.
const canaryRunWorkers = 16

// maxStepsPerReconcile bounds how many phases one reconcile advances.
const maxStepsPerReconcile = 10

// CanaryRunReconciler drives one CanaryRun through its lifecycle:
// Pending → Planting → Sharing → AwaitingVisibility → Revoking →
// AwaitingExclusion → CleaningUp → Succeeded | Failed. Each phase has one
// small, idempotent step; probing runs in the probe engine, and the steps
// only read its results and persist them.
type CanaryRunReconciler struct {
	client.Client
	// APIReader reads Secrets uncached.
	APIReader client.Reader
	// Door resolves Corpora and Personas into drivers and credentials.
	Door     *target.Door
	Clock    clock.WithTicker
	Probes   *probe.Engine
	Recorder events.EventRecorder
	// inFlight holds the streams runs read across their revocation.
	inFlight inflight.Registry
	// Heartbeat is how often probe counters reach status between transitions.
	Heartbeat time.Duration
	// Shard is this replica's place among the replicas.
	Shard shard.Replica

	transitions chan event.TypedGenericEvent[types.NamespacedName]
}

// +kubebuilder:rbac:groups=ragcanary.dev,resources=canaryruns,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=ragcanary.dev,resources=canaryruns/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=ragcanary.dev,resources=canaryruns/finalizers,verbs=update
// +kubebuilder:rbac:groups=ragcanary.dev,resources=corpora;personas,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// runCtx is the run being reconciled, with the object as last persisted.
type runCtx struct {
	run    *v1alpha1.CanaryRun
	before *v1alpha1.CanaryRun
	key    types.NamespacedName
	now    time.Time
	deps   *runDeps
}

// Reconcile advances one run as far as it can without waiting.
func (r *CanaryRunReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var run v1alpha1.CanaryRun
	if err := r.Get(ctx, req.NamespacedName, &run); err != nil {
		if apierrors.IsNotFound(err) {
			_ = r.Probes.Stop(req.NamespacedName)
			r.inFlight.Stop(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	rc := &runCtx{run: &run, before: run.DeepCopy(), key: req.NamespacedName, now: r.Clock.Now()}
	if r.Shard.Draining(&run) {
		return r.handOver(ctx, rc)
	}
	if !run.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, rc)
	}
	if isTerminal(run.Status.Phase) {
		_ = r.Probes.Stop(rc.key)
		r.inFlight.Stop(rc.key)
		return ctrl.Result{}, r.removeFinalizer(ctx, rc)
	}
	return r.advance(ctx, rc)
}

// advance runs phase steps, persisting after each, until a step waits.
// Chaining steps in one reconcile keeps the object the steps see equal to
// what was persisted, instead of reading a possibly stale cache between them.
func (r *CanaryRunReconciler) advance(ctx context.Context, rc *runCtx) (ctrl.Result, error) {
	for range maxStepsPerReconcile {
		phase := rc.run.Status.Phase
		res, err := r.step(phase)(ctx, rc)
		if perr := r.persist(ctx, rc); perr != nil && err == nil {
			err = perr
		}
		if err != nil || res.RequeueAfter > 0 || rc.run.Status.Phase == phase || isTerminal(rc.run.Status.Phase) {
			return res, err
		}
		rc.now = r.Clock.Now()
	}
	return ctrl.Result{RequeueAfter: time.Second}, nil
}

type stepFunc func(context.Context, *runCtx) (ctrl.Result, error)

func (r *CanaryRunReconciler) step(phase v1alpha1.CanaryPhase) stepFunc {
	switch phase {
	case v1alpha1.PhasePlanting:
		return r.plant
	case v1alpha1.PhaseSharing:
		return r.share
	case v1alpha1.PhaseAwaitingVisibility:
		return r.awaitVisibility
	case v1alpha1.PhaseRevoking:
		return r.revoke
	case v1alpha1.PhaseAwaitingExclusion:
		return r.awaitExclusion
	case v1alpha1.PhaseWatching:
		return r.watch
	case v1alpha1.PhaseCleaningUp:
		return r.cleanUp
	default:
		return r.start
	}
}

// persist writes status when it changed, with an optimistic lock: a
// reconcile that read a stale object must not overwrite timestamps that
// were already persisted, so it fails and retries on fresh data.
func (r *CanaryRunReconciler) persist(ctx context.Context, rc *runCtx) error {
	if equality.Semantic.DeepEqual(rc.before.Status, rc.run.Status) {
		return nil
	}
	if err := r.Status().Patch(ctx, rc.run, client.MergeFromWithOptions(rc.before, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	rc.before = rc.run.DeepCopy()
	return nil
}

// heartbeatDue reports whether probe results should be written now, and
// when the next heartbeat is due otherwise.
func (r *CanaryRunReconciler) heartbeatDue(rc *runCtx) (bool, time.Duration) {
	last := rc.run.Status.LastHeartbeatTime
	if last == nil || rc.now.Sub(last.Time) >= r.Heartbeat {
		return true, r.Heartbeat
	}
	return false, r.Heartbeat - rc.now.Sub(last.Time)
}

// recordExclusionProgress copies an exclusion snapshot into status when
// something changed that a restarted operator could not observe again
// (persistNow), or when the heartbeat is due; otherwise status keeps what
// it holds, so an active run is not written on a clock. It returns when to
// look again.
func (r *CanaryRunReconciler) recordExclusionProgress(rc *runCtx, snap probe.Snapshot) time.Duration {
	due, next := r.heartbeatDue(rc)
	if !due && !persistNow(rc.run.Status.Surfaces, snap.Surfaces) {
		return next
	}
	rc.run.Status.Surfaces = snap.Surfaces
	if len(snap.Controls) > 0 {
		rc.run.Status.ControlProbes = snap.Controls
	}
	rc.run.Status.LastHeartbeatTime = &metav1.Time{Time: rc.now}
	return r.Heartbeat
}

// requeueBefore waits for the heartbeat but never past deadline, and never
// for a delay ≤ 0.
func requeueBefore(now, deadline time.Time, heartbeat time.Duration) ctrl.Result {
	d := min(heartbeat, deadline.Sub(now))
	return ctrl.Result{RequeueAfter: max(d, 10*time.Millisecond)}
}

// SetupWithManager registers the controller and wires the probe engine's
// transitions in as events, so a confirmed exclusion or an isolation
// violation is persisted at once rather than at the next heartbeat.
func (r *CanaryRunReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Heartbeat <= 0 {
		r.Heartbeat = DefaultProbeHeartbeat
	}
	r.transitions = make(chan event.TypedGenericEvent[types.NamespacedName], 1024)
	r.Probes.OnTransition(r.enqueueTransition)
	// Streams read across a revocation end with the manager, as they would
	// with its process.
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		r.inFlight.StopAll()
		return nil
	})); err != nil {
		return err
	}
	enqueueKey := handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, key types.NamespacedName) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: key}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.CanaryRun{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, deletionStarted(), drainAsked()))).
		WatchesRawSource(source.Channel(r.transitions, enqueueKey)).
		WithOptions(controller.Options{MaxConcurrentReconciles: canaryRunWorkers, RateLimiter: runRateLimiter(),
			NeedLeaderElection: needLeader(r.Shard)}).
		Named("canaryrun").
		Complete(r)
}

// runRateLimiter backs off per run on errors, like the default, but shares
// a bucket of 100 retries per second among all runs instead of 10. The
// common error is benign: a probe transition right after the run's own
// status write finds the cache one write behind, and the optimistic lock
// refuses the patch. With the default's 10/s bucket a fleet entering a
// phase together would queue its retries behind one another (make
// bench-canaries).
func runRateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, 1000*time.Second),
		&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(100, 1000)},
	)
}

// enqueueTransition hands a probe transition to the controller. If the
// queue is backed up the heartbeat still persists the result, so the send
// gives up rather than stall probing.
func (r *CanaryRunReconciler) enqueueTransition(key types.NamespacedName) {
	t := r.Clock.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case r.transitions <- event.TypedGenericEvent[types.NamespacedName]{Object: key}:
	case <-t.C():
	}
}

// deletionStarted passes updates that set a deletion timestamp: our own
// status writes are filtered out, the start of a deletion is not.
func deletionStarted() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectNew.GetDeletionTimestamp() != nil && e.ObjectOld.GetDeletionTimestamp() == nil
		},
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// durationBetween is the non-negative duration between two persisted times.
func durationBetween(from, to *metav1.MicroTime) *metav1.Duration {
	if from == nil || to == nil {
		return nil
	}
	return &metav1.Duration{Duration: max(to.Sub(from.Time), 0)}
}
