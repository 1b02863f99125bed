package canaryrun

import (
	"context"
	"errors"
	"hash/fnv"
	"time"

	"github.com/ragcanary/ragcanary/controllers/shared"

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
	"github.com/ragcanary/ragcanary/internal/driver/rest"
	"github.com/ragcanary/ragcanary/internal/inflight"
	"github.com/ragcanary/ragcanary/internal/probe"
	"github.com/ragcanary/ragcanary/internal/shard"
	"github.com/ragcanary/ragcanary/internal/target"
)

// DefaultStatusCheckpointInterval is how often probe counters and the
// latest sighting are checkpointed into status between transitions. What
// cannot be re-observed is written when it changes (persistNow), so a
// checkpoint only refreshes counters and the latest sighting of a token
// still visible; losing them to a restart widens the interval by at most
// one checkpoint interval (docs/scaling.md). Twenty minutes keeps an active
// run at 1/1200 ≈ 0.00083 status writes per second, under the 0.001 a
// 10,000-canary fleet is sized for (make bench-canaries).
const DefaultStatusCheckpointInterval = 20 * time.Minute

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
// AwaitingExclusion → CleaningUp → Succeeded | Failed, or, for a sentinel,
// AwaitingVisibility → Watching → CleaningUp. Each phase has one
// small, idempotent step; probing runs in the probe engine, and the steps
// only read its results and persist them.
type CanaryRunReconciler struct {
	client.Client
	// APIReader reads the recipe Secret uncached (it is patched after it
	// is read).
	APIReader client.Reader
	// Secrets reads the run's token Secret, through the Secret value
	// cache in the operator.
	Secrets client.Reader
	// Door resolves Corpora and Personas into drivers and credentials.
	Door     *target.Door
	Clock    clock.WithTicker
	Probes   *probe.Engine
	Recorder events.EventRecorder
	// inFlight holds the streams runs read across their revocation.
	inFlight inflight.Registry
	// Checkpoint is how often probe counters reach status between
	// transitions (--status-checkpoint-interval).
	Checkpoint time.Duration
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
	// refs is the resolution the reconcile's steps share (resolveRefs).
	refs *runDeps
	// persistWithNext says the step's changes may wait for the next
	// step's write: that step persists before it acts, and a restart in
	// between redoes this step idempotently.
	persistWithNext bool
	// events are the transitions' events, sent once the status recording
	// the transition is stored: a write that fails is retried from the
	// stored status, which finds the transition again and would send its
	// event twice.
	events []func()
}

// eventAfterWrite queues an event until the status is persisted.
func (r *CanaryRunReconciler) eventAfterWrite(rc *runCtx, eventtype, reason, action, note string, args ...any) {
	run := rc.run
	rc.events = append(rc.events, func() { r.Recorder.Eventf(run, nil, eventtype, reason, action, note, args...) })
}

// flushEvents sends the queued events; persist calls it after a write.
func (rc *runCtx) flushEvents() {
	for _, e := range rc.events {
		e()
	}
	rc.events = nil
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
	if actsOnTarget(&run) {
		// The cache may be a write behind (a probe transition queued right
		// after the run's own write): a step acting on that copy would
		// repeat what the stored status records as done.
		if err := r.APIReader.Get(ctx, req.NamespacedName, &run); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}
	rc := &runCtx{run: &run, before: run.DeepCopy(), key: req.NamespacedName, now: r.Clock.Now()}
	defer rc.releaseRefs()
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
// A step whose result the next step persists before it acts
// (persistWithNext) is not written on its own: one write fewer per run.
// A write that fails ends the reconcile: the next step never runs on state
// the API server did not accept, and the retry starts from what it holds.
func (r *CanaryRunReconciler) advance(ctx context.Context, rc *runCtx) (ctrl.Result, error) {
	// A REST source's templates may name the run ({{.Run}}).
	ctx = rest.WithRun(ctx, rc.run.Name)
	for range maxStepsPerReconcile {
		if r.Shard.Draining(rc.run) || !rc.run.DeletionTimestamp.IsZero() {
			// A write rebased onto a drain or a deletion (persist): the
			// run's state is stored, and the reconcile that change queued
			// hands it over or cleans it up.
			return ctrl.Result{}, nil
		}
		phase := rc.run.Status.Phase
		rc.persistWithNext = false
		res, err := r.step(phase)(ctx, rc)
		moved := err == nil && res.RequeueAfter == 0 && rc.run.Status.Phase != phase && !isTerminal(rc.run.Status.Phase)
		if moved && rc.persistWithNext {
			rc.now = r.Clock.Now()
			continue
		}
		if perr := r.persist(ctx, rc); perr != nil {
			return ctrl.Result{}, errors.Join(err, perr)
		}
		if !moved {
			return res, err
		}
		rc.now = r.Clock.Now()
	}
	return ctrl.Result{RequeueAfter: time.Second}, r.persist(ctx, rc)
}

// actsOnTarget reports whether a reconcile of run may act on the target
// before it writes: the phases whose step creates, shares, revokes or
// removes, and a deletion. Waiting phases only probe; the step they move
// to writes before it acts.
func actsOnTarget(run *v1alpha1.CanaryRun) bool {
	if !run.DeletionTimestamp.IsZero() {
		return true
	}
	switch run.Status.Phase {
	case v1alpha1.PhaseAwaitingVisibility, v1alpha1.PhaseAwaitingExclusion, v1alpha1.PhaseWatching,
		v1alpha1.PhaseSucceeded, v1alpha1.PhaseFailed:
		return false
	}
	return true
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
// were already persisted, so it fails and retries on fresh data. A
// conflict caused by metadata alone (a label patch such as a shard drain,
// a finalizer) is no stale read: when the stored status is still the one
// the reconcile started from, the write is rebased onto the stored object
// and sent again, once.
func (r *CanaryRunReconciler) persist(ctx context.Context, rc *runCtx) error {
	if equality.Semantic.DeepEqual(rc.before.Status, rc.run.Status) {
		rc.flushEvents()
		return nil
	}
	err := r.Status().Patch(ctx, rc.run, client.MergeFromWithOptions(rc.before, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsConflict(err) {
		err = r.rebase(ctx, rc, err)
	}
	if err != nil {
		return err
	}
	rc.before = rc.run.DeepCopy()
	rc.flushEvents()
	return nil
}

// rebase sends a conflicting status write again on top of the stored
// object when only its metadata changed since rc.before (rc.run then
// carries the stored metadata, a drain label included, which advance
// reads); otherwise it returns conflict and rc.run is left as it was.
func (r *CanaryRunReconciler) rebase(ctx context.Context, rc *runCtx, conflict error) error {
	var stored v1alpha1.CanaryRun
	if err := r.APIReader.Get(ctx, rc.key, &stored); err != nil {
		return conflict
	}
	if stored.Generation != rc.before.Generation || !equality.Semantic.DeepEqual(stored.Status, rc.before.Status) {
		return conflict
	}
	pending := rc.run.Status.DeepCopy()
	// In place: steps hold rc.run.
	*rc.run = stored
	rc.run.Status = *pending
	rc.before = stored.DeepCopy()
	return r.Status().Patch(ctx, rc.run, client.MergeFromWithOptions(rc.before, client.MergeFromWithOptimisticLock{}))
}

// checkpointDue reports whether probe results should be written now, and
// how long until the next checkpoint otherwise.
func (r *CanaryRunReconciler) checkpointDue(rc *runCtx) (bool, time.Duration) {
	last := rc.run.Status.LastHeartbeatTime
	if last == nil {
		return true, r.Checkpoint
	}
	next := nextCheckpoint(last.Time, r.Checkpoint, checkpointPhase(rc.run.UID, r.Checkpoint))
	if !rc.now.Before(next) {
		return true, nextCheckpoint(rc.now, r.Checkpoint, checkpointPhase(rc.run.UID, r.Checkpoint)).Sub(rc.now)
	}
	return false, next.Sub(rc.now)
}

// nextCheckpoint is the first of a run's checkpoint slots at least half an
// interval after last. The slots lie on a grid of the interval shifted by
// the run's phase, so a fleet created in a few minutes, or resumed together
// after a restart, spreads its checkpoints evenly over the interval instead
// of writing in a wave; in the steady state a run writes once per interval.
func nextCheckpoint(last time.Time, interval, phase time.Duration) time.Time {
	earliest := last.Add(interval / 2).UnixNano()
	slot := earliest - mod(earliest-int64(phase), int64(interval))
	if slot < earliest {
		slot += int64(interval)
	}
	return time.Unix(0, slot)
}

func mod(a, b int64) int64 { return ((a % b) + b) % b }

// checkpointPhase places a run's checkpoint slots within the interval, from
// its UID: stable across restarts, spread evenly over runs.
func checkpointPhase(uid types.UID, interval time.Duration) time.Duration {
	h := fnv.New64a()
	_, _ = h.Write([]byte(uid))
	return time.Duration(h.Sum64() % uint64(interval))
}

// recordExclusionProgress copies an exclusion snapshot into status when
// something changed that a restarted operator could not observe again
// (persistNow), or when a checkpoint is due; otherwise status keeps what
// it holds, so an active run is not written on a clock. It returns when to
// look again.
func (r *CanaryRunReconciler) recordExclusionProgress(rc *runCtx, snap probe.Snapshot) time.Duration {
	due, next := r.checkpointDue(rc)
	if !due && !persistNow(rc.run.Status.Surfaces, snap.Surfaces) {
		return next
	}
	rc.run.Status.Surfaces = snap.Surfaces
	if len(snap.Controls) > 0 {
		rc.run.Status.ControlProbes = snap.Controls
	}
	rc.run.Status.LastHeartbeatTime = &metav1.Time{Time: rc.now}
	return r.untilNextCheckpoint(rc)
}

// untilNextCheckpoint is how long after a write made now the run's next
// checkpoint comes.
func (r *CanaryRunReconciler) untilNextCheckpoint(rc *runCtx) time.Duration {
	return nextCheckpoint(rc.now, r.Checkpoint, checkpointPhase(rc.run.UID, r.Checkpoint)).Sub(rc.now)
}

// requeueBefore waits for the next checkpoint but never past deadline, and
// never for a delay ≤ 0.
func requeueBefore(now, deadline time.Time, checkpoint time.Duration) ctrl.Result {
	d := min(checkpoint, deadline.Sub(now))
	return ctrl.Result{RequeueAfter: max(d, 10*time.Millisecond)}
}

// SetupWithManager registers the controller and wires the probe engine's
// transitions in as events, so a confirmed exclusion or an isolation
// violation is persisted at once rather than at the next checkpoint.
func (r *CanaryRunReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Checkpoint <= 0 {
		r.Checkpoint = DefaultStatusCheckpointInterval
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
			predicate.GenerationChangedPredicate{}, deletionStarted(), shared.DrainAsked()))).
		WatchesRawSource(source.Channel(r.transitions, enqueueKey)).
		WithOptions(controller.Options{MaxConcurrentReconciles: canaryRunWorkers, RateLimiter: runRateLimiter(),
			NeedLeaderElection: shared.NeedLeader(r.Shard)}).
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
// queue is backed up the next checkpoint still persists the result, so the send
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
