package shared

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

// ChildRun is what scheduling needs to know about one run of any kind.
type ChildRun struct {
	Obj client.Object
	// finished runs count against history limits; others are active.
	Finished bool
	// succeeded selects the successful or the failed history limit.
	Succeeded bool
	// completion orders finished runs; the creation time when unrecorded.
	Completion time.Time
}

// ChildRuns are a parent's runs, split by whether they finished.
type ChildRuns struct {
	// active runs, oldest first.
	Active []ChildRun
	// finished runs, in no particular order.
	Finished []ChildRun
	// lastScheduled is the newest scheduled-time annotation among them.
	lastScheduled time.Time
}

// RunOwnerIndex indexes CanaryRuns and SuiteRuns by the UID of the object
// controlling them, so a parent's runs are read from the cache without
// scanning its namespace: a label query per reconcile would make starting a
// namespace's canaries quadratic in their number.
const RunOwnerIndex = ".metadata.controllerUID"

// IndexRunsByOwner registers RunOwnerIndex for one run kind.
func IndexRunsByOwner(mgr ctrl.Manager, run client.Object) error {
	return mgr.GetFieldIndexer().IndexField(context.Background(), run, RunOwnerIndex, func(o client.Object) []string {
		if ref := metav1.GetControllerOf(o); ref != nil {
			return []string{string(ref.UID)}
		}
		return nil
	})
}

// ListRuns returns the runs owner controls. They come from the cache,
// unless this process created a run for owner that the cache does not show
// yet: "no overlapping runs" must not start a second run because of that
// lag, so then they are listed straight from the API server. A run for the
// same scheduled time could not be doubled anyway (its name is
// deterministic); what the check prevents is a run for a later time
// starting while an earlier one is still active but not yet cached.
func (p ParentReconciler) ListRuns(ctx context.Context, list client.ObjectList, owner client.Object,
	label string, describe func(client.Object) ChildRun) (ChildRuns, error) {
	want, pending := p.Created.Pending(owner.GetUID())
	if !pending {
		return cachedChildRuns(ctx, p.Client, list, owner, describe)
	}
	if want != "" {
		runs, err := cachedChildRuns(ctx, p.Client, list, owner, describe)
		if err != nil {
			return ChildRuns{}, err
		}
		if runs.has(want) {
			p.Created.observed(owner.GetUID(), want)
			return runs, nil
		}
	}
	runs, err := listChildRuns(ctx, p.APIReader, list, owner, label, describe)
	if err == nil && want != "" && !runs.has(want) {
		// Gone before the cache saw it (pruned, or deleted by hand):
		// nothing is left to wait for.
		p.Created.observed(owner.GetUID(), want)
	}
	return runs, err
}

// cachedChildRuns lists owner's runs from the cache by RunOwnerIndex.
func cachedChildRuns(ctx context.Context, c client.Reader, list client.ObjectList, owner client.Object,
	describe func(client.Object) ChildRun) (ChildRuns, error) {
	if err := c.List(ctx, list, client.InNamespace(owner.GetNamespace()),
		client.MatchingFields{RunOwnerIndex: string(owner.GetUID())}); err != nil {
		return ChildRuns{}, err
	}
	return collectChildRuns(list, owner, describe)
}

// listChildRuns lists, straight from the API server, the runs that owner
// controls. The label only narrows the query; the controller reference
// decides.
func listChildRuns(ctx context.Context, reader client.Reader, list client.ObjectList, owner client.Object,
	label string, describe func(client.Object) ChildRun) (ChildRuns, error) {
	if err := reader.List(ctx, list, client.InNamespace(owner.GetNamespace()),
		client.MatchingLabels{label: schedule.LabelValue(owner.GetName())}); err != nil {
		return ChildRuns{}, err
	}
	return collectChildRuns(list, owner, describe)
}

// collectChildRuns sorts the runs in list that owner controls.
func collectChildRuns(list client.ObjectList, owner client.Object, describe func(client.Object) ChildRun) (ChildRuns, error) {
	items, err := meta.ExtractList(list)
	if err != nil {
		return ChildRuns{}, err
	}
	var runs ChildRuns
	for _, item := range items {
		obj, ok := item.(client.Object)
		if !ok || !metav1.IsControlledBy(obj, owner) {
			continue
		}
		runs.Add(describe(obj))
	}
	slices.SortFunc(runs.Active, func(a, b ChildRun) int {
		if c := a.Obj.GetCreationTimestamp().Compare(b.Obj.GetCreationTimestamp().Time); c != 0 {
			return c
		}
		return strings.Compare(a.Obj.GetName(), b.Obj.GetName())
	})
	return runs, nil
}

// has reports whether a run of that name is among the runs.
func (r ChildRuns) has(name string) bool {
	for _, group := range [][]ChildRun{r.Active, r.Finished} {
		for _, run := range group {
			if run.Obj.GetName() == name {
				return true
			}
		}
	}
	return false
}

// CreatedRuns remembers, per parent, the last run this process created
// until the cache shows it. A nil *CreatedRuns remembers nothing and
// reports every parent pending, so runs are always listed from the API
// server.
type CreatedRuns struct {
	byParent sync.Map // types.UID → run name
}

func NewCreatedRuns() *CreatedRuns { return &CreatedRuns{} }

// expect records that run was created for parent.
func (c *CreatedRuns) Expect(parent types.UID, run string) {
	if c != nil {
		c.byParent.Store(parent, run)
	}
}

// pending returns the run the cache has yet to show for parent.
func (c *CreatedRuns) Pending(parent types.UID) (string, bool) {
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
func (c *CreatedRuns) observed(parent types.UID, run string) {
	if c != nil {
		c.byParent.CompareAndDelete(parent, run)
	}
}

func (r *ChildRuns) Add(run ChildRun) {
	if t, err := time.Parse(time.RFC3339, run.Obj.GetAnnotations()[v1alpha1.AnnotationScheduledTime]); err == nil && t.After(r.lastScheduled) {
		r.lastScheduled = t
	}
	if run.Finished {
		r.Finished = append(r.Finished, run)
	} else {
		r.Active = append(r.Active, run)
	}
}

// activeRefs names the active runs, keeping the newest that fit status.
func (r ChildRuns) ActiveRefs() []v1alpha1.LocalObjectReference {
	active := r.Active
	if len(active) > maxActiveInStatus {
		active = active[len(active)-maxActiveInStatus:]
	}
	var refs []v1alpha1.LocalObjectReference
	for _, run := range active {
		refs = append(refs, v1alpha1.LocalObjectReference{Name: run.Obj.GetName()})
	}
	return refs
}

// newest is the finished run that completed last, or nil.
func (r ChildRuns) Newest() client.Object {
	var newest *ChildRun
	for i := range r.Finished {
		run := &r.Finished[i]
		if newest == nil || run.Completion.After(newest.Completion) ||
			(run.Completion.Equal(newest.Completion) && run.Obj.GetName() > newest.Obj.GetName()) {
			newest = run
		}
	}
	if newest == nil {
		return nil
	}
	return newest.Obj
}

// CompletionOr is a run's recorded completion time, or its creation time
// for a run that finished without recording when.
func CompletionOr(completion *metav1.Time, obj client.Object) time.Time {
	if completion != nil {
		return completion.Time
	}
	return obj.GetCreationTimestamp().Time
}

// SchedulingStatus points at the status fields every scheduling kind has.
type SchedulingStatus struct {
	Active           *[]v1alpha1.LocalObjectReference
	LastScheduleTime **metav1.Time
	NextScheduleTime **metav1.Time
	LastRunNowToken  *string
	// conditions is where a due run held back by the active-run cap is
	// shown; only kinds with a cap need it.
	Conditions *[]metav1.Condition
}

// ScheduledParent is a scheduling object as the shared code sees it.
type ScheduledParent struct {
	Obj client.Object
	// sched is nil when runs are only created on request (run-now).
	Sched     *schedule.Schedule
	Suspended bool
	Policy    v1alpha1.ConcurrencyPolicy
	// maxActive caps the active runs whatever the policy allows; zero for
	// no cap.
	MaxActive int
	// WasHeld: the status read showed a due run held back by the cap, so
	// holding one back now is no transition worth an event.
	WasHeld bool
	Jitter  time.Duration
	Status  SchedulingStatus
}

// RunScheduler acts on scheduling decisions for one kind of parent.
type RunScheduler struct {
	Client   client.Client
	Recorder events.EventRecorder
	Now      time.Time
	// history applies where a parent sets no history limit.
	History HistoryDefaults
	// held remembers parents whose hold was announced, so two reconciles
	// reading the same cached status announce it once.
	Held *sync.Map
	// Created tells ListRuns which runs the cache may not show yet.
	Created *CreatedRuns
	// shard labels new runs with their parent's owner, so they land in
	// the same replica's cache.
	Shard shard.Replica
}

// ParentReconciler holds what the scheduling reconcilers (RevocationCanary,
// EvalSuite) share; each embeds it.
type ParentReconciler struct {
	client.Client
	// APIReader lists runs straight from the API server while the cache
	// may not yet hold a run this reconciler just created (see ListRuns).
	APIReader client.Reader
	// Clock decides when runs are due; tests replace it.
	Clock clock.PassiveClock
	// Recorder emits events on transitions only.
	Recorder events.EventRecorder
	// History holds the operator's default history limits.
	History HistoryDefaults
	// held is shared by every reconcile of this reconciler (see RunScheduler).
	Held *sync.Map
	// Created is shared likewise (see ListRuns); nil lists from the API server.
	Created *CreatedRuns
	// Shard is this replica's place among the replicas.
	Shard shard.Replica
	// ForgetCanary and ForgetSuite drop series when an object leaves
	// this replica (see releaseParent).
	ForgetCanary, ForgetSuite func(namespace, name string)
}

// scheduler acts on the parent's runs as of now.
func (p ParentReconciler) Scheduler() RunScheduler {
	return RunScheduler{Client: p.Client, Recorder: p.Recorder, Now: p.Clock.Now(), History: p.History, Held: p.heldRuns(),
		Created: p.Created, Shard: p.Shard}
}

// HistoryDefaults are the operator's history limits.
type HistoryDefaults struct {
	successful, failed int32
}

// prune deletes finished runs beyond the history limits.
func (s RunScheduler) Prune(ctx context.Context, runs ChildRuns, successfulLimit, failedLimit *int32) error {
	byName := make(map[string]client.Object, len(runs.Finished))
	candidates := make([]schedule.FinishedRun, 0, len(runs.Finished))
	for _, run := range runs.Finished {
		byName[run.Obj.GetName()] = run.Obj
		candidates = append(candidates, schedule.FinishedRun{
			Name: run.Obj.GetName(), CompletionTime: run.Completion, Succeeded: run.Succeeded,
		})
	}
	for _, name := range schedule.Prune(candidates, orDefault(successfulLimit, s.History.successful), orDefault(failedLimit, s.History.failed)) {
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
func (s RunScheduler) deleteChild(ctx context.Context, obj client.Object) error {
	if !obj.GetDeletionTimestamp().IsZero() {
		return nil
	}
	return client.IgnoreNotFound(s.Client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)))
}

// schedule decides with the pure schedule package and acts on it: replace
// active runs, create the due run (built by build), record what it
// consumed and when to come back.
func (s RunScheduler) Schedule(ctx context.Context, p ScheduledParent, runs ChildRuns,
	build func(*schedule.Run) client.Object) (ctrl.Result, error) {
	plan := schedule.Decide(s.Input(p, runs))
	logger := log.FromContext(ctx)
	if plan.Missed.Skipped > 0 {
		logger.Info("skipped missed schedule times", "skipped", plan.Missed.Skipped, "truncated", plan.Missed.Truncated)
	}
	if plan.Blocked != schedule.NotBlocked {
		logger.V(1).Info("due run held back", "blocked", plan.Blocked)
	}
	if plan.Blocked == schedule.BlockedTooManyActive {
		s.holdBack(p, len(runs.Active))
	} else {
		s.Held.Delete(p.Obj.GetUID())
	}
	if plan.ReplaceActive {
		for _, run := range runs.Active {
			if err := s.deleteChild(ctx, run.Obj); err != nil {
				return ctrl.Result{}, err
			}
			logger.Info("replaced active run", "run", run.Obj.GetName())
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
	*p.Status.NextScheduleTime = optionalTime(plan.NextTime)
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// input gathers the decision input. The last schedule time is the newer of
// status and the runs' annotations: if status was lost or read stale, the
// runs still say which time already ran.
func (s RunScheduler) Input(p ScheduledParent, runs ChildRuns) schedule.Input {
	last := runs.lastScheduled
	if t := *p.Status.LastScheduleTime; t != nil && t.After(last) {
		last = t.Time
	}
	annotation := p.Obj.GetAnnotations()[v1alpha1.AnnotationRunNow]
	lastToken := *p.Status.LastRunNowToken
	if token, pending := schedule.PendingRunNow(annotation, lastToken); pending && runs.has(schedule.RunNowName(p.Obj.GetName(), token)) {
		// The status write that recorded the token may not be read back
		// yet; the run shows it was acted on. Taking it as pending again
		// would let it swallow a scheduled time that fell due since.
		lastToken = token
	}
	return schedule.Input{
		Parent:           p.Obj.GetName(),
		Key:              string(p.Obj.GetUID()),
		Schedule:         p.Sched,
		MaxJitter:        p.Jitter,
		Created:          p.Obj.GetCreationTimestamp().Time,
		LastScheduled:    last,
		Now:              s.Now,
		Suspended:        p.Suspended,
		Policy:           p.Policy,
		Active:           len(runs.Active),
		MaxActive:        p.MaxActive,
		RunNowAnnotation: annotation,
		LastRunNowToken:  lastToken,
	}
}

// heldRuns is the reconciler's shared hold record; a reconciler built
// without NewParentReconciler (tests) gets a private one.
func (p ParentReconciler) heldRuns() *sync.Map {
	if p.Held == nil {
		return &sync.Map{}
	}
	return p.Held
}

// holdBack shows a due run held back by the active-run cap: Ready stays
// True (the object is fine, its runs last longer than its schedule allows)
// with reason TooManyActiveRuns while the cap holds, and a Warning event
// marks the moment it starts holding.
func (s RunScheduler) holdBack(p ScheduledParent, active int) {
	msg := fmt.Sprintf("%d runs are active, the most allowed at once (%d); the due run starts when one finishes",
		active, p.MaxActive)
	if p.Status.Conditions != nil {
		meta.SetStatusCondition(p.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady,
			Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonTooManyActiveRuns, Message: msg, ObservedGeneration: p.Obj.GetGeneration()})
	}
	if _, announced := s.Held.LoadOrStore(p.Obj.GetUID(), true); !p.WasHeld && !announced {
		s.Recorder.Eventf(p.Obj, nil, corev1.EventTypeWarning, v1alpha1.ReasonTooManyActiveRuns, "HoldRun", "%s", msg)
	}
}

// create creates the planned run, owned by the parent, and records what it
// consumed. The name is deterministic, so AlreadyExists (existed) means an
// earlier reconcile created it: the run happened, only the status record was
// missing. A scheduled run's name is its time, so that time is consumed
// either way; an existing run-now run was created before this plan and
// consumed only what its own annotation says.
func (s RunScheduler) create(ctx context.Context, p ScheduledParent, planned *schedule.Run, run client.Object) (existed bool, err error) {
	if !planned.Scheduled.IsZero() {
		annotations := run.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[v1alpha1.AnnotationScheduledTime] = planned.Scheduled.UTC().Format(time.RFC3339)
		run.SetAnnotations(annotations)
	}
	if err := controllerutil.SetControllerReference(p.Obj, run, s.Client.Scheme()); err != nil {
		return false, err
	}
	s.Shard.Adopt(run, p.Obj)
	err = s.Client.Create(ctx, run)
	switch {
	case apierrors.IsAlreadyExists(err):
		// The cache did not show it, or it would not have been planned.
		existed = true
		s.Created.Expect(p.Obj.GetUID(), run.GetName())
		log.FromContext(ctx).V(1).Info("run already exists", "run", run.GetName())
	case err != nil:
		return false, err
	default:
		s.Created.Expect(p.Obj.GetUID(), run.GetName())
		log.FromContext(ctx).Info("created run", "run", run.GetName())
		s.Recorder.Eventf(p.Obj, run, corev1.EventTypeNormal, v1alpha1.ReasonRunCreated, "CreateRun", "created run %s", run.GetName())
		*p.Status.Active = appendActive(*p.Status.Active, run.GetName())
	}
	if !planned.Scheduled.IsZero() && (!existed || planned.RunNowToken == "") {
		*p.Status.LastScheduleTime = &metav1.Time{Time: planned.Scheduled}
	}
	if planned.RunNowToken != "" {
		*p.Status.LastRunNowToken = planned.RunNowToken
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

func PtrTrue(b *bool) bool { return b != nil && *b }

// ExistenceChanged passes creates and deletes: readiness only checks that
// references exist, so their updates (a Corpus health check every minute)
// would only cause idle reconciles.
func ExistenceChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(event.UpdateEvent) bool { return false },
	}
}
