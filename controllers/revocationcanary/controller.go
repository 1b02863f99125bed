package revocationcanary

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ragcanary/ragcanary/controllers/shared"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/format"
	"github.com/ragcanary/ragcanary/internal/measure"
	"github.com/ragcanary/ragcanary/internal/metrics"
	"github.com/ragcanary/ragcanary/internal/schedule"
)

// runDeletionRetry is how often a canary being deleted re-checks runs that
// are still cleaning up. A run disappearing brings the canary back sooner
// through the owner watch; the retry covers runs orphaned by the garbage
// collector, whose deletion is not mapped back to the canary.
const runDeletionRetry = 5 * time.Second

// MaxActiveRuns caps a canary's unfinished runs. Under concurrencyPolicy
// Allow, a schedule faster than a run lasts would otherwise create runs,
// token Secrets and probe loops without bound; at the cap a due run waits
// as under Forbid and starts when a run finishes.
const MaxActiveRuns = 5

// Field indexes on RevocationCanary, so a Corpus or Persona appearing
// re-evaluates the canaries waiting for it.
const (
	canaryCorpusIndex  = ".spec.corpusRef.name"
	canaryPersonaIndex = ".spec.personaRefs"
)

// RevocationCanaryReconciler creates CanaryRuns on a RevocationCanary's
// schedule, keeps its run history bounded and summarises the latest
// finished run. It never runs a canary itself: the CanaryRun controller
// does, and a run changing phase brings the canary back here.
type RevocationCanaryReconciler struct {
	shared.ParentReconciler
}

// +kubebuilder:rbac:groups=ragcanary.dev,resources=revocationcanaries,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=ragcanary.dev,resources=revocationcanaries/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=ragcanary.dev,resources=revocationcanaries/finalizers,verbs=update
// +kubebuilder:rbac:groups=ragcanary.dev,resources=canaryruns,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=ragcanary.dev,resources=corpora,verbs=get;list;watch
// +kubebuilder:rbac:groups=ragcanary.dev,resources=personas,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile evaluates one RevocationCanary and writes its status once.
func (r *RevocationCanaryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var canary v1alpha1.RevocationCanary
	if err := r.Get(ctx, req.NamespacedName, &canary); err != nil {
		if apierrors.IsNotFound(err) {
			// Deleted: its series must not linger on dashboards and alerts.
			metrics.Forget(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.Shard.Draining(&canary) {
		return r.HandOver(ctx, &canary, &v1alpha1.CanaryRunList{}, describeCanaryRun, r.ForgetCanary)
	}
	if !canary.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, &canary)
	}
	// The finalizer goes on before any run exists, so no run is left behind.
	if err := r.patchFinalizer(ctx, &canary, controllerutil.AddFinalizer); err != nil {
		return ctrl.Result{}, err
	}
	before := canary.DeepCopy()

	result, err := r.reconcileCanary(ctx, &canary)
	if err == nil {
		canary.Status.ObservedGeneration = canary.Generation
	}
	patchErr := shared.PatchStatus(ctx, r.Client, before, &canary, before.Status, canary.Status)
	return result, errors.Join(err, patchErr)
}

// finalize deletes the canary's runs, waits until they are gone (each run
// removes its canary document first), forgets the canary's series and lets
// the canary go. Status is not written: the object is on its way out.
func (r *RevocationCanaryReconciler) finalize(ctx context.Context, canary *v1alpha1.RevocationCanary) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(canary, v1alpha1.FinalizerRevocationCanary) {
		return ctrl.Result{}, nil
	}
	remaining, err := r.deleteRuns(ctx, canary)
	if err != nil {
		return ctrl.Result{}, err
	}
	if remaining > 0 {
		log.FromContext(ctx).V(1).Info("waiting for runs to clean up", "runs", remaining)
		return ctrl.Result{RequeueAfter: runDeletionRetry}, nil
	}
	metrics.Forget(canary.Namespace, canary.Name)
	return ctrl.Result{}, r.patchFinalizer(ctx, canary, controllerutil.RemoveFinalizer)
}

// deleteRuns deletes every run of the canary, active and finished, and
// returns how many still exist. It lists straight from the API server so a
// run created just before the deletion is not missed. A run counts as the
// canary's when the canary controls it, or when it carries the canary's
// label and no controller at all: the garbage collector orphans runs when
// the canary is deleted with propagation Orphan, and those runs must still
// be cleaned up.
func (r *RevocationCanaryReconciler) deleteRuns(ctx context.Context, canary *v1alpha1.RevocationCanary) (int, error) {
	var list v1alpha1.CanaryRunList
	if err := r.APIReader.List(ctx, &list, client.InNamespace(canary.Namespace),
		client.MatchingLabels{v1alpha1.LabelCanary: schedule.LabelValue(canary.Name)}); err != nil {
		return 0, err
	}
	remaining := 0
	for i := range list.Items {
		run := &list.Items[i]
		if !metav1.IsControlledBy(run, canary) && metav1.GetControllerOf(run) != nil {
			continue
		}
		remaining++
		if !run.DeletionTimestamp.IsZero() {
			continue
		}
		err := r.Delete(ctx, run, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if client.IgnoreNotFound(err) != nil {
			return 0, err
		}
		log.FromContext(ctx).Info("deleted run of deleted canary", "run", run.Name)
	}
	return remaining, nil
}

// patchFinalizer adds or removes v1alpha1.FinalizerRevocationCanary when that changes
// anything, as a patch of metadata.finalizers with an optimistic lock so
// another controller's finalizer is never overwritten.
func (r *RevocationCanaryReconciler) patchFinalizer(ctx context.Context, canary *v1alpha1.RevocationCanary,
	change func(client.Object, string) bool) error {
	base := canary.DeepCopy()
	if !change(canary, v1alpha1.FinalizerRevocationCanary) {
		return nil
	}
	return client.IgnoreNotFound(r.Patch(ctx, canary, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})))
}

// reconcileCanary runs the steps in order. Observing and pruning runs come
// first because they do not depend on the spec being usable: a canary with
// a broken reference still reports its last result.
func (r *RevocationCanaryReconciler) reconcileCanary(ctx context.Context, canary *v1alpha1.RevocationCanary) (ctrl.Result, error) {
	runs, err := r.ListRuns(ctx, &v1alpha1.CanaryRunList{}, canary, v1alpha1.LabelCanary, describeCanaryRun)
	if err != nil {
		return ctrl.Result{}, err
	}
	r.observeRuns(canary, runs)
	sch := r.Scheduler()
	if err := sch.Prune(ctx, runs, canary.Spec.SuccessfulRunsHistoryLimit, canary.Spec.FailedRunsHistoryLimit); err != nil {
		return ctrl.Result{}, err
	}
	sched, ready, err := r.readiness(ctx, canary)
	if err != nil {
		return ctrl.Result{}, err
	}
	wasHeld := heldByCap(canary)
	meta.SetStatusCondition(&canary.Status.Conditions, ready)
	if ready.Status != metav1.ConditionTrue {
		// The user must fix the spec or create the reference; the spec
		// change or the Corpus/Persona watch brings us back. No requeue,
		// and no next time shown while no run can be created.
		log.FromContext(ctx).Info("canary not ready", "reason", ready.Reason)
		canary.Status.NextScheduleTime = nil
		return ctrl.Result{}, nil
	}
	// The series that must exist before their first increase do from the
	// first ready reconcile.
	shared.InitCanaryMetrics(canary)
	parent := canaryParent(canary, &sched)
	parent.WasHeld = wasHeld
	return sch.Schedule(ctx, parent, runs, func(planned *schedule.Run) client.Object {
		return newCanaryRun(canary, planned)
	})
}

// describeCanaryRun tells the shared scheduling code about one CanaryRun.
// Success is the run's phase: Succeeded means the measurement completed,
// whatever its verdict; the verdict is reported through lastRun and SLOMet.
func describeCanaryRun(obj client.Object) shared.ChildRun {
	run := obj.(*v1alpha1.CanaryRun)
	return shared.ChildRun{
		Obj:        run,
		Finished:   runFinished(run),
		Succeeded:  run.Status.Phase == v1alpha1.PhaseSucceeded,
		Completion: completedAt(run),
	}
}

func runFinished(run *v1alpha1.CanaryRun) bool {
	return run.Status.Phase == v1alpha1.PhaseSucceeded || run.Status.Phase == v1alpha1.PhaseFailed
}

// observeRuns recomputes status.active, status.lastRun and the SLOMet
// condition from the runs, and emits an event when the verdict changes.
func (r *RevocationCanaryReconciler) observeRuns(canary *v1alpha1.RevocationCanary, runs shared.ChildRuns) {
	canary.Status.Active = runs.ActiveRefs()
	previous := canary.Status.LastRun
	if latest, ok := runs.Newest().(*v1alpha1.CanaryRun); ok && newerThan(latest, previous) {
		canary.Status.LastRun = Summarise(latest)
		r.verdictEvent(canary, previous, canary.Status.LastRun)
	}
	meta.SetStatusCondition(&canary.Status.Conditions, sloCondition(canary.Status.LastRun, canary.Generation))
}

// completedAt falls back to the creation time for a run that finished
// without recording when.
func completedAt(run *v1alpha1.CanaryRun) time.Time {
	return shared.CompletionOr(run.Status.CompletionTime, run)
}

// newerThan reports whether run should replace the summary. The summary
// outlives its run (history limit 0 deletes it), so an older run never
// overwrites a newer summary.
func newerThan(run *v1alpha1.CanaryRun, summary *v1alpha1.RunSummary) bool {
	if summary == nil {
		return true
	}
	if summary.Name == run.Name {
		return true // same run: refresh in case its status was corrected
	}
	return summary.CompletionTime == nil || !completedAt(run).Before(summary.CompletionTime.Time)
}

// summarise copies the reportable measurements of a finished run.
func Summarise(run *v1alpha1.CanaryRun) *v1alpha1.RunSummary {
	s := &v1alpha1.RunSummary{
		Name:             run.Name,
		Verdict:          run.Status.Verdict,
		CompletionTime:   run.Status.CompletionTime.DeepCopy(),
		TimeToVisibility: run.Status.TimeToVisibility.DeepCopy(),
	}
	for i := range run.Status.Surfaces {
		m := &run.Status.Surfaces[i]
		sum := v1alpha1.SurfaceSummary{Surface: m.Surface, Bounds: m.Bounds.DeepCopy(),
			// Recomputed from the bounds rather than copied, so a run that
			// finished before runs kept the text is shown the same way.
			Exclusion: format.Interval(m.Bounds), SLO: m.SLO.DeepCopy(), SLOSource: m.SLOSource}
		if m.NewContent != nil {
			sum.ContentFreshness = measure.Freshness(m)
		}
		s.Surfaces = append(s.Surfaces, sum)
	}
	s.InFlight = shared.InFlightSummary(run.Status.InFlight)
	if s.TimeToVisibility != nil {
		s.VisibleAfter = format.HumanDuration(s.TimeToVisibility.Duration)
	}
	return s
}

// sloCondition: Unknown before any run finished, True when the latest run
// met its SLO, otherwise False with the verdict as reason.
func sloCondition(last *v1alpha1.RunSummary, generation int64) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionSLOMet, ObservedGeneration: generation}
	switch {
	case last == nil:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, v1alpha1.ReasonNoRunFinished, "no canary run has finished yet"
	case last.Verdict == v1alpha1.VerdictSLOMet:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, string(v1alpha1.VerdictSLOMet), fmt.Sprintf("run %s met its SLO", last.Name)
	case last.Verdict == v1alpha1.VerdictIsolated:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, string(v1alpha1.VerdictIsolated), fmt.Sprintf("sentinel run %s stayed isolated", last.Name)
	default:
		c.Status, c.Reason = metav1.ConditionFalse, verdictReason(last.Verdict)
		c.Message = fmt.Sprintf("run %s finished with verdict %s", last.Name, c.Reason)
	}
	return c
}

// verdictReason turns a verdict into a condition/event reason. Verdicts are
// an enum of constants; a run that finished without one gets NoVerdict so
// the reason is never empty (which the API server rejects).
func verdictReason(v v1alpha1.Verdict) string {
	if v == "" {
		return v1alpha1.ReasonNoVerdict
	}
	return string(v)
}

// verdictEvent emits an event only when the verdict changes: a warning
// named after a bad verdict, or Recovered when SLOMet follows a bad one.
func (r *RevocationCanaryReconciler) verdictEvent(canary *v1alpha1.RevocationCanary, previous, latest *v1alpha1.RunSummary) {
	prev := v1alpha1.Verdict("")
	if previous != nil {
		if previous.Name == latest.Name {
			return
		}
		prev = previous.Verdict
	}
	switch {
	case latest.Verdict == prev:
	case latest.Verdict == v1alpha1.VerdictSLOMet && previous != nil:
		r.Recorder.Eventf(canary, nil, corev1.EventTypeNormal, v1alpha1.ReasonRecovered, "RunFinished",
			"run %s met the SLO again after %s", latest.Name, verdictReason(prev))
	case latest.Verdict == v1alpha1.VerdictIsolated && previous != nil:
		r.Recorder.Eventf(canary, nil, corev1.EventTypeNormal, v1alpha1.ReasonRecovered, "RunFinished",
			"sentinel run %s stayed isolated after %s", latest.Name, verdictReason(prev))
	case latest.Verdict != v1alpha1.VerdictSLOMet && latest.Verdict != v1alpha1.VerdictIsolated:
		reason := verdictReason(latest.Verdict)
		r.Recorder.Eventf(canary, nil, corev1.EventTypeWarning, reason, "RunFinished",
			"run %s finished with verdict %s", latest.Name, reason)
	}
}

// readiness parses the schedule and checks that every referenced object
// exists. A problem the user must fix is a False condition, not an error.
func (r *RevocationCanaryReconciler) readiness(ctx context.Context, canary *v1alpha1.RevocationCanary) (schedule.Schedule, metav1.Condition, error) {
	cond := metav1.Condition{Type: v1alpha1.ConditionReady, ObservedGeneration: canary.Generation, Status: metav1.ConditionFalse}
	sched, err := schedule.Parse(canary.Spec.Schedule)
	var invalid *schedule.InvalidError
	if errors.As(err, &invalid) {
		cond.Reason, cond.Message = v1alpha1.ReasonInvalidSchedule, invalid.Message
		return sched, cond, nil
	}
	reason, message, err := r.missingReference(ctx, canary)
	if err != nil || reason != "" {
		cond.Reason, cond.Message = reason, message
		return sched, cond, err
	}
	cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, v1alpha1.ReasonScheduled, fmt.Sprintf("runs are scheduled by %s", sched)
	if shared.PtrTrue(canary.Spec.Suspend) {
		cond.Reason, cond.Message = v1alpha1.ReasonSuspended, "the canary is suspended: no new runs are created"
	}
	return sched, cond, nil
}

// missingReference returns a reason and message for the first referenced
// Corpus or Persona that does not exist, or "" when all do.
func (r *RevocationCanaryReconciler) missingReference(ctx context.Context, canary *v1alpha1.RevocationCanary) (string, string, error) {
	spec := canary.Spec.CanarySpec
	found, err := r.exists(ctx, &v1alpha1.Corpus{}, canary.Namespace, spec.CorpusRef.Name)
	if err != nil || !found {
		return v1alpha1.ReasonCorpusNotFound, fmt.Sprintf("Corpus %q does not exist in namespace %q: create it or fix spec.corpusRef",
			spec.CorpusRef.Name, canary.Namespace), err
	}
	for _, ref := range personaRefs(canary) {
		found, err := r.exists(ctx, &v1alpha1.Persona{}, canary.Namespace, ref.name)
		if err != nil || !found {
			return v1alpha1.ReasonPersonaNotFound, fmt.Sprintf("Persona %q does not exist in namespace %q: create it or fix %s",
				ref.name, canary.Namespace, ref.field), err
		}
	}
	return "", "", nil
}

// exists reports whether the named object exists; other errors are returned.
func (r *RevocationCanaryReconciler) exists(ctx context.Context, obj client.Object, namespace, name string) (bool, error) {
	err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// personaRef is a referenced Persona and the spec field naming it.
type personaRef struct {
	name, field string
}

func personaRefs(canary *v1alpha1.RevocationCanary) []personaRef {
	refs := []personaRef{{name: canary.Spec.PersonaRef.Name, field: "spec.personaRef"}}
	for _, c := range canary.Spec.ControlPersonaRefs {
		refs = append(refs, personaRef{name: c.Name, field: "spec.controlPersonaRefs"})
	}
	return refs
}

// canaryParent adapts the canary to the shared scheduler.
func canaryParent(canary *v1alpha1.RevocationCanary, sched *schedule.Schedule) shared.ScheduledParent {
	var jitter time.Duration
	if canary.Spec.Jitter != nil {
		jitter = canary.Spec.Jitter.Duration
	}
	return shared.ScheduledParent{
		Obj:       canary,
		Sched:     sched,
		Suspended: shared.PtrTrue(canary.Spec.Suspend),
		Policy:    canary.Spec.ConcurrencyPolicy,
		MaxActive: MaxActiveRuns,
		Jitter:    jitter,
		Status: shared.SchedulingStatus{
			Active:           &canary.Status.Active,
			LastScheduleTime: &canary.Status.LastScheduleTime,
			NextScheduleTime: &canary.Status.NextScheduleTime,
			LastRunNowToken:  &canary.Status.LastRunNowToken,
			Conditions:       &canary.Status.Conditions,
		},
	}
}

// heldByCap reports whether the canary's status, as read, shows a due run
// held back by MaxActiveRuns.
func heldByCap(canary *v1alpha1.RevocationCanary) bool {
	c := meta.FindStatusCondition(canary.Status.Conditions, v1alpha1.ConditionReady)
	return c != nil && c.Reason == v1alpha1.ReasonTooManyActiveRuns
}

// newCanaryRun builds the run with the canary spec copied as it is now, so
// later edits never change a measurement in flight. The shared scheduler
// adds the scheduled-time annotation and the owner reference.
func newCanaryRun(canary *v1alpha1.RevocationCanary, planned *schedule.Run) *v1alpha1.CanaryRun {
	return &v1alpha1.CanaryRun{
		ObjectMeta: metav1.ObjectMeta{
			Name:      planned.Name,
			Namespace: canary.Namespace,
			Labels:    map[string]string{v1alpha1.LabelCanary: schedule.LabelValue(canary.Name)},
			// Set at creation, so planting need not patch it on: one write
			// fewer per run.
			Finalizers: []string{v1alpha1.FinalizerCanaryRun},
		},
		Spec: v1alpha1.CanaryRunSpec{CanarySpec: *canary.Spec.CanarySpec.DeepCopy()},
	}
}

// canaryWorkers is how many canaries reconcile at once. Every phase change
// of a run requeues its canary: with one worker, 1,000 canaries starting
// together got their runs at about 8 per second (make bench-canaries on a
// loaded 2-core machine), so 10,000 would wait 20 minutes for the last.
const canaryWorkers = 8

// SetupWithManager registers the controller. The canary is reconciled on
// spec changes and on annotation changes (run-now), not on its own status
// writes (the start of its deletion changes the generation); on a run
// being created, finishing or deleted; and on a
// referenced Corpus or Persona appearing or disappearing.
func (r *RevocationCanaryReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := r.indexReferences(mgr); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.RevocationCanary{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, shared.DrainAsked()))).
		// A canary reads of its runs only whether each has finished
		// (describeCanaryRun): a run's other phase changes, four or more
		// per run, would reconcile it for nothing, and with 10,000 runs
		// starting those reconciles queued behind the API server.
		Owns(&v1alpha1.CanaryRun{}, builder.WithPredicates(shared.PhaseChanged(func(r *v1alpha1.CanaryRun) string { return strconv.FormatBool(runFinished(r)) }))).
		Watches(&v1alpha1.Corpus{}, handler.EnqueueRequestsFromMapFunc(shared.Referrers(r.Client, newCanaryList, canaryCorpusIndex)),
			builder.WithPredicates(shared.ExistenceChanged())).
		Watches(&v1alpha1.Persona{}, handler.EnqueueRequestsFromMapFunc(shared.Referrers(r.Client, newCanaryList, canaryPersonaIndex)),
			builder.WithPredicates(shared.ExistenceChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: canaryWorkers, NeedLeaderElection: shared.NeedLeader(r.Shard)}).
		Named("revocationcanary").
		Complete(r)
}

func (r *RevocationCanaryReconciler) indexReferences(mgr ctrl.Manager) error {
	if err := shared.IndexRunsByOwner(mgr, &v1alpha1.CanaryRun{}); err != nil {
		return err
	}
	indexer := mgr.GetFieldIndexer()
	if err := indexer.IndexField(context.Background(), &v1alpha1.RevocationCanary{}, canaryCorpusIndex,
		func(o client.Object) []string {
			return []string{o.(*v1alpha1.RevocationCanary).Spec.CorpusRef.Name}
		}); err != nil {
		return err
	}
	return indexer.IndexField(context.Background(), &v1alpha1.RevocationCanary{}, canaryPersonaIndex,
		func(o client.Object) []string {
			var names []string
			for _, ref := range personaRefs(o.(*v1alpha1.RevocationCanary)) {
				names = append(names, ref.name)
			}
			return names
		})
}

func newCanaryList() client.ObjectList { return &v1alpha1.RevocationCanaryList{} }
