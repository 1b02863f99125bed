package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/schedule"
	"github.com/ragcanary/ragcanary/internal/shard"
)

// This file is the CronJob-like machinery shared by the scheduling kinds
// (RevocationCanary → CanaryRun, EvalSuite → SuiteRun): listing a parent's
// runs, pruning history, and acting on the pure decisions of
// internal/schedule. Each kind supplies only what differs: how to read a
// run's phase and how to build a new run.

// maxActiveInStatus is status.active's MaxItems: a longer list would fail
// the status write and turn into a retry loop.
const maxActiveInStatus = 10

// childRun is what scheduling needs to know about one run of any kind.
type childRun struct {
	obj client.Object
	// finished runs count against history limits; others are active.
	finished bool
	// succeeded selects the successful or the failed history limit.
	succeeded bool
	// completion orders finished runs; the creation time when unrecorded.
	completion time.Time
}

// childRuns are a parent's runs, split by whether they finished.
type childRuns struct {
	// active runs, oldest first.
	active []childRun
	// finished runs, in no particular order.
	finished []childRun
	// lastScheduled is the newest scheduled-time annotation among them.
	lastScheduled time.Time
}

// runOwnerIndex indexes CanaryRuns and SuiteRuns by the UID of the object
// controlling them, so a parent's runs are read from the cache without
// scanning its namespace: a label query per reconcile would make starting a
// namespace's canaries quadratic in their number.
const runOwnerIndex = ".metadata.controllerUID"

// indexRunsByOwner registers runOwnerIndex for one run kind.
func indexRunsByOwner(mgr ctrl.Manager, run client.Object) error {
	return mgr.GetFieldIndexer().IndexField(context.Background(), run, runOwnerIndex, func(o client.Object) []string {
		if ref := metav1.GetControllerOf(o); ref != nil {
			return []string{string(ref.UID)}
		}
		return nil
	})
}

// listRuns returns the runs owner controls. They come from the cache,
// unless this process created a run for owner that the cache does not show
// yet: "no overlapping runs" must not start a second run because of that
// lag, so then they are listed straight from the API server. A run for the
// same scheduled time could not be doubled anyway (its name is
// deterministic); what the check prevents is a run for a later time
// starting while an earlier one is still active but not yet cached.
func (p parentReconciler) listRuns(ctx context.Context, list client.ObjectList, owner client.Object,
	label string, describe func(client.Object) childRun) (childRuns, error) {
	want, pending := p.created.pending(owner.GetUID())
	if !pending {
		return cachedChildRuns(ctx, p.Client, list, owner, describe)
	}
	if want != "" {
		runs, err := cachedChildRuns(ctx, p.Client, list, owner, describe)
		if err != nil {
			return childRuns{}, err
		}
		if runs.has(want) {
			p.created.observed(owner.GetUID(), want)
			return runs, nil
		}
	}
	runs, err := listChildRuns(ctx, p.APIReader, list, owner, label, describe)
	if err == nil && want != "" && !runs.has(want) {
		// Gone before the cache saw it (pruned, or deleted by hand):
		// nothing is left to wait for.
		p.created.observed(owner.GetUID(), want)
	}
	return runs, err
}

// cachedChildRuns lists owner's runs from the cache by runOwnerIndex.
func cachedChildRuns(ctx context.Context, c client.Reader, list client.ObjectList, owner client.Object,
	describe func(client.Object) childRun) (childRuns, error) {
	if err := c.List(ctx, list, client.InNamespace(owner.GetNamespace()),
		client.MatchingFields{runOwnerIndex: string(owner.GetUID())}); err != nil {
		return childRuns{}, err
	}
	return collectChildRuns(list, owner, describe)
}

// listChildRuns lists, straight from the API server, the runs that owner
// controls. The label only narrows the query; the controller reference
// decides.
func listChildRuns(ctx context.Context, reader client.Reader, list client.ObjectList, owner client.Object,
	label string, describe func(client.Object) childRun) (childRuns, error) {
	if err := reader.List(ctx, list, client.InNamespace(owner.GetNamespace()),
		client.MatchingLabels{label: schedule.LabelValue(owner.GetName())}); err != nil {
		return childRuns{}, err
	}
	return collectChildRuns(list, owner, describe)
}

// collectChildRuns sorts the runs in list that owner controls.
func collectChildRuns(list client.ObjectList, owner client.Object, describe func(client.Object) childRun) (childRuns, error) {
	items, err := meta.ExtractList(list)
	if err != nil {
		return childRuns{}, err
	}
	var runs childRuns
	for _, item := range items {
		obj, ok := item.(client.Object)
		if !ok || !metav1.IsControlledBy(obj, owner) {
			continue
		}
		runs.add(describe(obj))
	}
	slices.SortFunc(runs.active, func(a, b childRun) int {
		if c := a.obj.GetCreationTimestamp().Compare(b.obj.GetCreationTimestamp().Time); c != 0 {
			return c
		}
		return strings.Compare(a.obj.GetName(), b.obj.GetName())
	})
	return runs, nil
}

// has reports whether a run of that name is among the runs.
func (r childRuns) has(name string) bool {
	for _, group := range [][]childRun{r.active, r.finished} {
		for _, run := range group {
			if run.obj.GetName() == name {
				return true
			}
		}
	}
	return false
}

// createdRuns remembers, per parent, the last run this process created
// until the cache shows it. A nil *createdRuns remembers nothing and
// reports every parent pending, so runs are always listed from the API
// server.
type createdRuns struct {
	byParent sync.Map // types.UID → run name
}

func newCreatedRuns() *createdRuns { return &createdRuns{} }

// expect records that run was created for parent.
func (c *createdRuns) expect(parent types.UID, run string) {
	if c != nil {
		c.byParent.Store(parent, run)
	}
}

// pending returns the run the cache has yet to show for parent.
func (c *createdRuns) pending(parent types.UID) (string, bool) {
	if c == nil {
		return "", true
	}
	run, ok := c.byParent.Load(parent)
	if !ok {
		return "", false
	}
	return run.(string), true
}

// observed forgets run once the cache showed it (or it is gone); a newer
// run recorded meanwhile is kept.
func (c *createdRuns) observed(parent types.UID, run string) {
	if c != nil {
		c.byParent.CompareAndDelete(parent, run)
	}
}

func (r *childRuns) add(run childRun) {
	if t, err := time.Parse(time.RFC3339, run.obj.GetAnnotations()[v1alpha1.AnnotationScheduledTime]); err == nil && t.After(r.lastScheduled) {
		r.lastScheduled = t
	}
	if run.finished {
		r.finished = append(r.finished, run)
	} else {
		r.active = append(r.active, run)
	}
}

// activeRefs names the active runs, keeping the newest that fit status.
func (r childRuns) activeRefs() []v1alpha1.LocalObjectReference {
	active := r.active
	if len(active) > maxActiveInStatus {
		active = active[len(active)-maxActiveInStatus:]
	}
	var refs []v1alpha1.LocalObjectReference
	for _, run := range active {
		refs = append(refs, v1alpha1.LocalObjectReference{Name: run.obj.GetName()})
	}
	return refs
}

// newest is the finished run that completed last, or nil.
func (r childRuns) newest() client.Object {
	var newest *childRun
	for i := range r.finished {
		run := &r.finished[i]
		if newest == nil || run.completion.After(newest.completion) ||
			(run.completion.Equal(newest.completion) && run.obj.GetName() > newest.obj.GetName()) {
			newest = run
		}
	}
	if newest == nil {
		return nil
	}
	return newest.obj
}

// completionOr is a run's recorded completion time, or its creation time
// for a run that finished without recording when.
func completionOr(completion *metav1.Time, obj client.Object) time.Time {
	if completion != nil {
		return completion.Time
	}
	return obj.GetCreationTimestamp().Time
}

// schedulingStatus points at the status fields every scheduling kind has.
type schedulingStatus struct {
	active           *[]v1alpha1.LocalObjectReference
	lastScheduleTime **metav1.Time
	nextScheduleTime **metav1.Time
	lastRunNowToken  *string
	// conditions is where a due run held back by the active-run cap is
	// shown; only kinds with a cap need it.
	conditions *[]metav1.Condition
}

// scheduledParent is a scheduling object as the shared code sees it.
type scheduledParent struct {
	obj client.Object
	// sched is nil when runs are only created on request (run-now).
	sched     *schedule.Schedule
	suspended bool
	policy    v1alpha1.ConcurrencyPolicy
	// maxActive caps the active runs whatever the policy allows; zero for
	// no cap.
	maxActive int
	// wasHeld: the status read showed a due run held back by the cap, so
	// holding one back now is no transition worth an event.
	wasHeld bool
	jitter  time.Duration
	status  schedulingStatus
}

// runScheduler acts on scheduling decisions for one kind of parent.
type runScheduler struct {
	client   client.Client
	recorder events.EventRecorder
	now      time.Time
	// history applies where a parent sets no history limit.
	history historyDefaults
	// held remembers parents whose hold was announced, so two reconciles
	// reading the same cached status announce it once.
	held *sync.Map
	// created tells listRuns which runs the cache may not show yet.
	created *createdRuns
	// shard labels new runs with their parent's owner, so they land in
	// the same replica's cache.
	shard shard.Replica
}

// parentReconciler holds what the scheduling reconcilers (RevocationCanary,
// EvalSuite) share; each embeds it.
type parentReconciler struct {
	client.Client
	// APIReader lists runs straight from the API server while the cache
	// may not yet hold a run this reconciler just created (see listRuns).
	APIReader client.Reader
	// Clock decides when runs are due; tests replace it.
	Clock clock.PassiveClock
	// Recorder emits events on transitions only.
	Recorder events.EventRecorder
	// History holds the operator's default history limits.
	History historyDefaults
	// held is shared by every reconcile of this reconciler (see runScheduler).
	held *sync.Map
	// created is shared likewise (see listRuns); nil lists from the API server.
	created *createdRuns
	// Shard is this replica's place among the replicas.
	Shard shard.Replica
	// forgetCanary and forgetSuite drop series when an object leaves
	// this replica (see releaseParent).
	forgetCanary, forgetSuite func(namespace, name string)
}

// scheduler acts on the parent's runs as of now.
func (p parentReconciler) scheduler() runScheduler {
	return runScheduler{client: p.Client, recorder: p.Recorder, now: p.Clock.Now(), history: p.History, held: p.heldRuns(),
		created: p.created, shard: p.Shard}
}

// historyDefaults are the operator's history limits.
type historyDefaults struct {
	successful, failed int32
}

// prune deletes finished runs beyond the history limits.
func (s runScheduler) prune(ctx context.Context, runs childRuns, successfulLimit, failedLimit *int32) error {
	byName := make(map[string]client.Object, len(runs.finished))
	candidates := make([]schedule.FinishedRun, 0, len(runs.finished))
	for _, run := range runs.finished {
		byName[run.obj.GetName()] = run.obj
		candidates = append(candidates, schedule.FinishedRun{
			Name: run.obj.GetName(), CompletionTime: run.completion, Succeeded: run.succeeded,
		})
	}
	for _, name := range schedule.Prune(candidates, orDefault(successfulLimit, s.history.successful), orDefault(failedLimit, s.history.failed)) {
		if err := s.deleteChild(ctx, byName[name]); err != nil {
			return err
		}
		log.FromContext(ctx).V(1).Info("pruned run", "run", name)
	}
	return nil
}

// orDefault is the object's limit, or the operator's when unset.
func orDefault(limit *int32, def int32) int32 {
	if limit == nil {
		return def
	}
	return *limit
}

// deleteChild deletes a run; one already gone or going is fine.
func (s runScheduler) deleteChild(ctx context.Context, obj client.Object) error {
	if !obj.GetDeletionTimestamp().IsZero() {
		return nil
	}
	return client.IgnoreNotFound(s.client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)))
}

// schedule decides with the pure schedule package and acts on it: replace
// active runs, create the due run (built by build), record what it
// consumed and when to come back.
func (s runScheduler) schedule(ctx context.Context, p scheduledParent, runs childRuns,
	build func(*schedule.Run) client.Object) (ctrl.Result, error) {
	plan := schedule.Decide(s.input(p, runs))
	logger := log.FromContext(ctx)
	if plan.Missed.Skipped > 0 {
		logger.Info("skipped missed schedule times", "skipped", plan.Missed.Skipped, "truncated", plan.Missed.Truncated)
	}
	if plan.Blocked != schedule.NotBlocked {
		logger.V(1).Info("due run held back", "blocked", plan.Blocked)
	}
	if plan.Blocked == schedule.BlockedTooManyActive {
		s.holdBack(p, len(runs.active))
	} else {
		s.held.Delete(p.obj.GetUID())
	}
	if plan.ReplaceActive {
		for _, run := range runs.active {
			if err := s.deleteChild(ctx, run.obj); err != nil {
				return ctrl.Result{}, err
			}
			logger.Info("replaced active run", "run", run.obj.GetName())
		}
	}
	requeue := plan.RequeueAfter
	if plan.Create != nil {
		existed, err := s.create(ctx, p, plan.Create, build(plan.Create))
		if err != nil {
			return ctrl.Result{}, err
		}
		if existed && plan.Create.RunNowToken != "" {
			// The plan was made on a view that did not show the run-now
			// run; a scheduled time it would have consumed may be due,
			// so look again soon instead of a period later.
			requeue = schedule.MinRequeue
		}
	}
	*p.status.nextScheduleTime = optionalTime(plan.NextTime)
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// input gathers the decision input. The last schedule time is the newer of
// status and the runs' annotations: if status was lost or read stale, the
// runs still say which time already ran.
func (s runScheduler) input(p scheduledParent, runs childRuns) schedule.Input {
	last := runs.lastScheduled
	if t := *p.status.lastScheduleTime; t != nil && t.After(last) {
		last = t.Time
	}
	annotation := p.obj.GetAnnotations()[v1alpha1.AnnotationRunNow]
	lastToken := *p.status.lastRunNowToken
	if token, pending := schedule.PendingRunNow(annotation, lastToken); pending && runs.has(schedule.RunNowName(p.obj.GetName(), token)) {
		// The status write that recorded the token may not be read back
		// yet; the run shows it was acted on. Taking it as pending again
		// would let it swallow a scheduled time that fell due since.
		lastToken = token
	}
	return schedule.Input{
		Parent:           p.obj.GetName(),
		Key:              string(p.obj.GetUID()),
		Schedule:         p.sched,
		MaxJitter:        p.jitter,
		Created:          p.obj.GetCreationTimestamp().Time,
		LastScheduled:    last,
		Now:              s.now,
		Suspended:        p.suspended,
		Policy:           p.policy,
		Active:           len(runs.active),
		MaxActive:        p.maxActive,
		RunNowAnnotation: annotation,
		LastRunNowToken:  lastToken,
	}
}

// heldRuns is the reconciler's shared hold record; a reconciler built
// without newParentReconciler (tests) gets a private one.
func (p parentReconciler) heldRuns() *sync.Map {
	if p.held == nil {
		return &sync.Map{}
	}
	return p.held
}

// holdBack shows a due run held back by the active-run cap: Ready stays
// True (the object is fine, its runs last longer than its schedule allows)
// with reason TooManyActiveRuns while the cap holds, and a Warning event
// marks the moment it starts holding.
func (s runScheduler) holdBack(p scheduledParent, active int) {
	msg := fmt.Sprintf("%d runs are active, the most allowed at once (%d); the due run starts when one finishes",
		active, p.maxActive)
	if p.status.conditions != nil {
		meta.SetStatusCondition(p.status.conditions, metav1.Condition{Type: v1alpha1.ConditionReady,
			Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonTooManyActiveRuns, Message: msg, ObservedGeneration: p.obj.GetGeneration()})
	}
	if _, announced := s.held.LoadOrStore(p.obj.GetUID(), true); !p.wasHeld && !announced {
		s.recorder.Eventf(p.obj, nil, corev1.EventTypeWarning, v1alpha1.ReasonTooManyActiveRuns, "HoldRun", "%s", msg)
	}
}

// create creates the planned run, owned by the parent, and records what it
// consumed. The name is deterministic, so AlreadyExists (existed) means an
// earlier reconcile created it: the run happened, only the status record was
// missing. A scheduled run's name is its time, so that time is consumed
// either way; an existing run-now run was created before this plan and
// consumed only what its own annotation says.
func (s runScheduler) create(ctx context.Context, p scheduledParent, planned *schedule.Run, run client.Object) (existed bool, err error) {
	if !planned.Scheduled.IsZero() {
		annotations := run.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[v1alpha1.AnnotationScheduledTime] = planned.Scheduled.UTC().Format(time.RFC3339)
		run.SetAnnotations(annotations)
	}
	if err := controllerutil.SetControllerReference(p.obj, run, s.client.Scheme()); err != nil {
		return false, err
	}
	s.shard.Adopt(run, p.obj)
	err = s.client.Create(ctx, run)
	switch {
	case apierrors.IsAlreadyExists(err):
		// The cache did not show it, or it would not have been planned.
		existed = true
		s.created.expect(p.obj.GetUID(), run.GetName())
		log.FromContext(ctx).V(1).Info("run already exists", "run", run.GetName())
	case err != nil:
		return false, err
	default:
		s.created.expect(p.obj.GetUID(), run.GetName())
		log.FromContext(ctx).Info("created run", "run", run.GetName())
		s.recorder.Eventf(p.obj, run, corev1.EventTypeNormal, v1alpha1.ReasonRunCreated, "CreateRun", "created run %s", run.GetName())
		*p.status.active = appendActive(*p.status.active, run.GetName())
	}
	if !planned.Scheduled.IsZero() && (!existed || planned.RunNowToken == "") {
		*p.status.lastScheduleTime = &metav1.Time{Time: planned.Scheduled}
	}
	if planned.RunNowToken != "" {
		*p.status.lastRunNowToken = planned.RunNowToken
	}
	return existed, nil
}

// appendActive adds a just-created run to status.active within its bound.
func appendActive(active []v1alpha1.LocalObjectReference, name string) []v1alpha1.LocalObjectReference {
	active = append(active, v1alpha1.LocalObjectReference{Name: name})
	if len(active) > maxActiveInStatus {
		active = active[len(active)-maxActiveInStatus:]
	}
	return active
}

func optionalTime(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	return &metav1.Time{Time: t}
}

func ptrTrue(b *bool) bool { return b != nil && *b }

// existenceChanged passes creates and deletes: readiness only checks that
// references exist, so their updates (a Corpus health check every minute)
// would only cause idle reconciles.
func existenceChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(event.UpdateEvent) bool { return false },
	}
}
