package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/metrics"
	"github.com/ragcanary/ragcanary/internal/schedule"
)

const (
	// LabelCanary on a CanaryRun names the RevocationCanary that created it
	// (schedule.LabelValue of the name). Listing also checks the controller
	// owner reference, so the label only narrows the query.
	LabelCanary = "ragcanary.dev/canary"
	// AnnotationScheduledTime on a CanaryRun is the RFC 3339 scheduled time
	// it was created for, so the last schedule time can be recovered from
	// the runs themselves if status is lost or read stale.
	AnnotationScheduledTime = "ragcanary.dev/scheduled-time"
)

// ConditionSLOMet reports whether the latest finished run met its SLO.
const ConditionSLOMet = "SLOMet"

// Reasons on RevocationCanary conditions and events.
const (
	ReasonInvalidSchedule = "InvalidSchedule"
	ReasonCorpusNotFound  = "CorpusNotFound"
	ReasonPersonaNotFound = "PersonaNotFound"
	ReasonScheduled       = "Scheduled"
	ReasonSuspended       = "Suspended"
	ReasonNoRunFinished   = "NoRunFinished"
	ReasonNoVerdict       = "NoVerdict"
	ReasonRunCreated      = "RunCreated"
	ReasonRecovered       = "Recovered"
)

// defaultHistoryLimit matches the CRD default, for objects stored before
// the default existed.
const defaultHistoryLimit int32 = 3

// maxActiveInStatus is status.active's MaxItems: a longer list would fail
// the status write and turn into a retry loop.
const maxActiveInStatus = 10

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
	client.Client
	// APIReader lists runs straight from the API server. The cache may not
	// yet hold a run this reconciler just created, and Forbid must not
	// start a second run because of that lag.
	APIReader client.Reader
	// Clock decides when runs are due; tests replace it.
	Clock clock.PassiveClock
	// Recorder emits events on transitions only.
	Recorder events.EventRecorder
}

// +kubebuilder:rbac:groups=ragcanary.dev,resources=revocationcanaries,verbs=get;list;watch
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
	if !canary.DeletionTimestamp.IsZero() {
		// Runs are owned: garbage collection removes them with the canary.
		return ctrl.Result{}, nil
	}
	before := canary.DeepCopy()

	result, err := r.reconcileCanary(ctx, &canary)
	if err == nil {
		canary.Status.ObservedGeneration = canary.Generation
	}
	patchErr := patchStatus(ctx, r.Client, before, &canary, before.Status, canary.Status)
	return result, errors.Join(err, patchErr)
}

// reconcileCanary runs the steps in order. Observing and pruning runs come
// first because they do not depend on the spec being usable: a canary with
// a broken reference still reports its last result.
func (r *RevocationCanaryReconciler) reconcileCanary(ctx context.Context, canary *v1alpha1.RevocationCanary) (ctrl.Result, error) {
	runs, err := r.ownedRuns(ctx, canary)
	if err != nil {
		return ctrl.Result{}, err
	}
	r.observeRuns(canary, runs)
	if err := r.pruneHistory(ctx, canary, runs.finished); err != nil {
		return ctrl.Result{}, err
	}
	sched, ready, err := r.readiness(ctx, canary)
	if err != nil {
		return ctrl.Result{}, err
	}
	meta.SetStatusCondition(&canary.Status.Conditions, ready)
	if ready.Status != metav1.ConditionTrue {
		// The user must fix the spec or create the reference; the spec
		// change or the Corpus/Persona watch brings us back. No requeue,
		// and no next time shown while no run can be created.
		log.FromContext(ctx).Info("canary not ready", "reason", ready.Reason)
		canary.Status.NextScheduleTime = nil
		return ctrl.Result{}, nil
	}
	if err := r.publishInfo(ctx, canary, sched); err != nil {
		return ctrl.Result{}, err
	}
	return r.scheduleRuns(ctx, canary, sched, runs)
}

// publishInfo exports the canary's SLO and schedule period, which the
// alert rules compare measurements against.
func (r *RevocationCanaryReconciler) publishInfo(ctx context.Context, canary *v1alpha1.RevocationCanary, sched schedule.Schedule) error {
	var corpus v1alpha1.Corpus
	if err := r.Get(ctx, client.ObjectKey{Namespace: canary.Namespace, Name: canary.Spec.CorpusRef.Name}, &corpus); err != nil {
		return client.IgnoreNotFound(err)
	}
	run := &v1alpha1.CanaryRun{Spec: v1alpha1.CanaryRunSpec{CanarySpec: canary.Spec.CanarySpec}}
	var period time.Duration
	if canary.Spec.Suspend == nil || !*canary.Spec.Suspend {
		period = sched.Period(r.Clock.Now())
	}
	metrics.SetCanaryInfo(metrics.Run{Namespace: canary.Namespace, Canary: canary.Name, Corpus: corpus.Name},
		exclusionSLO(run, &corpus, v1alpha1.SurfaceSearch), period)
	return nil
}

// canaryRuns are the runs a canary controls, split by whether they finished.
type canaryRuns struct {
	// active runs, oldest first.
	active []*v1alpha1.CanaryRun
	// finished runs (phase Succeeded or Failed), in no particular order.
	finished []*v1alpha1.CanaryRun
	// lastScheduled is the newest scheduled-time annotation among them.
	lastScheduled time.Time
}

// ownedRuns lists the runs this canary controls, uncached.
func (r *RevocationCanaryReconciler) ownedRuns(ctx context.Context, canary *v1alpha1.RevocationCanary) (canaryRuns, error) {
	var list v1alpha1.CanaryRunList
	if err := r.APIReader.List(ctx, &list, client.InNamespace(canary.Namespace),
		client.MatchingLabels{LabelCanary: schedule.LabelValue(canary.Name)}); err != nil {
		return canaryRuns{}, err
	}
	var runs canaryRuns
	for i := range list.Items {
		run := &list.Items[i]
		if !metav1.IsControlledBy(run, canary) {
			continue
		}
		if t, err := time.Parse(time.RFC3339, run.Annotations[AnnotationScheduledTime]); err == nil && t.After(runs.lastScheduled) {
			runs.lastScheduled = t
		}
		if runFinished(run) {
			runs.finished = append(runs.finished, run)
		} else {
			runs.active = append(runs.active, run)
		}
	}
	slices.SortFunc(runs.active, func(a, b *v1alpha1.CanaryRun) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return runs, nil
}

func runFinished(run *v1alpha1.CanaryRun) bool {
	return run.Status.Phase == v1alpha1.PhaseSucceeded || run.Status.Phase == v1alpha1.PhaseFailed
}

// observeRuns recomputes status.active, status.lastRun and the SLOMet
// condition from the runs, and emits an event when the verdict changes.
func (r *RevocationCanaryReconciler) observeRuns(canary *v1alpha1.RevocationCanary, runs canaryRuns) {
	canary.Status.Active = activeRefs(runs.active)
	previous := canary.Status.LastRun
	if latest := newestFinished(runs.finished); latest != nil && newerThan(latest, previous) {
		canary.Status.LastRun = summarise(latest)
		r.verdictEvent(canary, previous, canary.Status.LastRun)
	}
	meta.SetStatusCondition(&canary.Status.Conditions, sloCondition(canary.Status.LastRun, canary.Generation))
}

// activeRefs names the active runs, keeping the newest that fit status.
func activeRefs(active []*v1alpha1.CanaryRun) []v1alpha1.LocalObjectReference {
	if len(active) > maxActiveInStatus {
		active = active[len(active)-maxActiveInStatus:]
	}
	var refs []v1alpha1.LocalObjectReference
	for _, run := range active {
		refs = append(refs, v1alpha1.LocalObjectReference{Name: run.Name})
	}
	return refs
}

// newestFinished is the finished run that completed last.
func newestFinished(finished []*v1alpha1.CanaryRun) *v1alpha1.CanaryRun {
	var newest *v1alpha1.CanaryRun
	for _, run := range finished {
		if newest == nil || completedAt(run).After(completedAt(newest)) ||
			(completedAt(run).Equal(completedAt(newest)) && run.Name > newest.Name) {
			newest = run
		}
	}
	return newest
}

// completedAt falls back to the creation time for a run that finished
// without recording when.
func completedAt(run *v1alpha1.CanaryRun) time.Time {
	if run.Status.CompletionTime != nil {
		return run.Status.CompletionTime.Time
	}
	return run.CreationTimestamp.Time
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
func summarise(run *v1alpha1.CanaryRun) *v1alpha1.RunSummary {
	s := &v1alpha1.RunSummary{
		Name:             run.Name,
		Verdict:          run.Status.Verdict,
		CompletionTime:   run.Status.CompletionTime.DeepCopy(),
		TimeToVisibility: run.Status.TimeToVisibility.DeepCopy(),
	}
	for _, m := range run.Status.Surfaces {
		switch m.Surface {
		case v1alpha1.SurfaceSearch:
			s.TimeToExclusion = m.Bounds.DeepCopy()
		case v1alpha1.SurfaceAnswer:
			s.CacheInvalidation = m.Bounds.DeepCopy()
		}
	}
	return s
}

// sloCondition: Unknown before any run finished, True when the latest run
// met its SLO, otherwise False with the verdict as reason.
func sloCondition(last *v1alpha1.RunSummary, generation int64) metav1.Condition {
	c := metav1.Condition{Type: ConditionSLOMet, ObservedGeneration: generation}
	switch {
	case last == nil:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, ReasonNoRunFinished, "no canary run has finished yet"
	case last.Verdict == v1alpha1.VerdictSLOMet:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, string(v1alpha1.VerdictSLOMet), fmt.Sprintf("run %s met its SLO", last.Name)
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
		return ReasonNoVerdict
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
		r.Recorder.Eventf(canary, nil, corev1.EventTypeNormal, ReasonRecovered, "RunFinished",
			"run %s met the SLO again after %s", latest.Name, verdictReason(prev))
	case latest.Verdict != v1alpha1.VerdictSLOMet:
		reason := verdictReason(latest.Verdict)
		r.Recorder.Eventf(canary, nil, corev1.EventTypeWarning, reason, "RunFinished",
			"run %s finished with verdict %s", latest.Name, reason)
	}
}

// pruneHistory deletes finished runs beyond the history limits. Success is
// the run's phase: Succeeded means the measurement completed, whatever its
// verdict; the verdict is reported through lastRun and SLOMet.
func (r *RevocationCanaryReconciler) pruneHistory(ctx context.Context, canary *v1alpha1.RevocationCanary, finished []*v1alpha1.CanaryRun) error {
	byName := make(map[string]*v1alpha1.CanaryRun, len(finished))
	candidates := make([]schedule.FinishedRun, 0, len(finished))
	for _, run := range finished {
		byName[run.Name] = run
		candidates = append(candidates, schedule.FinishedRun{
			Name: run.Name, CompletionTime: completedAt(run), Succeeded: run.Status.Phase == v1alpha1.PhaseSucceeded,
		})
	}
	prune := schedule.Prune(candidates,
		limitOrDefault(canary.Spec.SuccessfulRunsHistoryLimit), limitOrDefault(canary.Spec.FailedRunsHistoryLimit))
	for _, name := range prune {
		if err := r.deleteRun(ctx, byName[name]); err != nil {
			return err
		}
		log.FromContext(ctx).V(1).Info("pruned canary run", "run", name)
	}
	return nil
}

func limitOrDefault(limit *int32) int32 {
	if limit == nil {
		return defaultHistoryLimit
	}
	return *limit
}

// deleteRun deletes a run; one already gone is fine. The run's own
// finalizer cleans the canary document out of the target.
func (r *RevocationCanaryReconciler) deleteRun(ctx context.Context, run *v1alpha1.CanaryRun) error {
	if !run.DeletionTimestamp.IsZero() {
		return nil
	}
	return client.IgnoreNotFound(r.Delete(ctx, run, client.PropagationPolicy(metav1.DeletePropagationBackground)))
}

// readiness parses the schedule and checks that every referenced object
// exists. A problem the user must fix is a False condition, not an error.
func (r *RevocationCanaryReconciler) readiness(ctx context.Context, canary *v1alpha1.RevocationCanary) (schedule.Schedule, metav1.Condition, error) {
	cond := metav1.Condition{Type: v1alpha1.ConditionReady, ObservedGeneration: canary.Generation, Status: metav1.ConditionFalse}
	sched, err := schedule.Parse(canary.Spec.Schedule)
	var invalid *schedule.InvalidError
	if errors.As(err, &invalid) {
		cond.Reason, cond.Message = ReasonInvalidSchedule, invalid.Message
		return sched, cond, nil
	}
	reason, message, err := r.missingReference(ctx, canary)
	if err != nil || reason != "" {
		cond.Reason, cond.Message = reason, message
		return sched, cond, err
	}
	cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, ReasonScheduled, fmt.Sprintf("runs are scheduled by %s", sched)
	if ptrTrue(canary.Spec.Suspend) {
		cond.Reason, cond.Message = ReasonSuspended, "the canary is suspended: no new runs are created"
	}
	return sched, cond, nil
}

// missingReference returns a reason and message for the first referenced
// Corpus or Persona that does not exist, or "" when all do.
func (r *RevocationCanaryReconciler) missingReference(ctx context.Context, canary *v1alpha1.RevocationCanary) (string, string, error) {
	spec := canary.Spec.CanarySpec
	found, err := r.exists(ctx, &v1alpha1.Corpus{}, canary.Namespace, spec.CorpusRef.Name)
	if err != nil || !found {
		return ReasonCorpusNotFound, fmt.Sprintf("Corpus %q does not exist in namespace %q: create it or fix spec.corpusRef",
			spec.CorpusRef.Name, canary.Namespace), err
	}
	for _, ref := range personaRefs(canary) {
		found, err := r.exists(ctx, &v1alpha1.Persona{}, canary.Namespace, ref.name)
		if err != nil || !found {
			return ReasonPersonaNotFound, fmt.Sprintf("Persona %q does not exist in namespace %q: create it or fix %s",
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

func ptrTrue(b *bool) bool { return b != nil && *b }

// scheduleRuns decides with the pure schedule package and acts on it.
func (r *RevocationCanaryReconciler) scheduleRuns(ctx context.Context, canary *v1alpha1.RevocationCanary, sched schedule.Schedule, runs canaryRuns) (ctrl.Result, error) {
	plan := schedule.Decide(r.scheduleInput(canary, &sched, runs))
	logger := log.FromContext(ctx)
	if plan.Missed.Skipped > 0 {
		logger.Info("skipped missed schedule times", "skipped", plan.Missed.Skipped, "truncated", plan.Missed.Truncated)
	}
	if plan.Blocked != schedule.NotBlocked {
		logger.V(1).Info("due run held back", "blocked", plan.Blocked)
	}
	if plan.ReplaceActive {
		if err := r.deleteActive(ctx, runs.active); err != nil {
			return ctrl.Result{}, err
		}
	}
	if plan.Create != nil {
		if err := r.createRun(ctx, canary, plan.Create); err != nil {
			return ctrl.Result{}, err
		}
	}
	canary.Status.NextScheduleTime = optionalTime(plan.NextTime)
	return ctrl.Result{RequeueAfter: plan.RequeueAfter}, nil
}

// scheduleInput gathers the decision input. The last schedule time is the
// newer of status and the runs' annotations: if status was lost or read
// stale, the runs still say which time already ran.
func (r *RevocationCanaryReconciler) scheduleInput(canary *v1alpha1.RevocationCanary, sched *schedule.Schedule, runs canaryRuns) schedule.Input {
	last := runs.lastScheduled
	if s := canary.Status.LastScheduleTime; s != nil && s.After(last) {
		last = s.Time
	}
	var jitter time.Duration
	if canary.Spec.Jitter != nil {
		jitter = canary.Spec.Jitter.Duration
	}
	return schedule.Input{
		Parent:           canary.Name,
		Key:              string(canary.UID),
		Schedule:         sched,
		MaxJitter:        jitter,
		Created:          canary.CreationTimestamp.Time,
		LastScheduled:    last,
		Now:              r.Clock.Now(),
		Suspended:        ptrTrue(canary.Spec.Suspend),
		Policy:           canary.Spec.ConcurrencyPolicy,
		Active:           len(runs.active),
		RunNowAnnotation: canary.Annotations[v1alpha1.RunNowAnnotation],
		LastRunNowToken:  canary.Status.LastRunNowToken,
	}
}

// deleteActive deletes the active runs for the Replace policy.
func (r *RevocationCanaryReconciler) deleteActive(ctx context.Context, active []*v1alpha1.CanaryRun) error {
	for _, run := range active {
		if err := r.deleteRun(ctx, run); err != nil {
			return err
		}
		log.FromContext(ctx).Info("replaced active canary run", "run", run.Name)
	}
	return nil
}

// createRun creates the planned run and records what it consumed. The name
// is deterministic, so AlreadyExists means an earlier reconcile created it:
// the run happened, and only the status record was missing.
func (r *RevocationCanaryReconciler) createRun(ctx context.Context, canary *v1alpha1.RevocationCanary, planned *schedule.Run) error {
	run := newCanaryRun(canary, planned)
	if err := controllerutil.SetControllerReference(canary, run, r.Scheme()); err != nil {
		return err
	}
	err := r.Create(ctx, run)
	switch {
	case apierrors.IsAlreadyExists(err):
		log.FromContext(ctx).V(1).Info("canary run already exists", "run", run.Name)
	case err != nil:
		return err
	default:
		log.FromContext(ctx).Info("created canary run", "run", run.Name)
		r.Recorder.Eventf(canary, run, corev1.EventTypeNormal, ReasonRunCreated, "CreateRun", "created run %s", run.Name)
		canary.Status.Active = appendActive(canary.Status.Active, run.Name)
	}
	if !planned.Scheduled.IsZero() {
		canary.Status.LastScheduleTime = &metav1.Time{Time: planned.Scheduled}
	}
	if planned.RunNowToken != "" {
		canary.Status.LastRunNowToken = planned.RunNowToken
	}
	return nil
}

// newCanaryRun builds the run with the canary spec copied as it is now, so
// later edits never change a measurement in flight.
func newCanaryRun(canary *v1alpha1.RevocationCanary, planned *schedule.Run) *v1alpha1.CanaryRun {
	run := &v1alpha1.CanaryRun{
		ObjectMeta: metav1.ObjectMeta{
			Name:      planned.Name,
			Namespace: canary.Namespace,
			Labels:    map[string]string{LabelCanary: schedule.LabelValue(canary.Name)},
		},
		Spec: v1alpha1.CanaryRunSpec{CanarySpec: *canary.Spec.CanarySpec.DeepCopy()},
	}
	if !planned.Scheduled.IsZero() {
		run.Annotations = map[string]string{AnnotationScheduledTime: planned.Scheduled.UTC().Format(time.RFC3339)}
	}
	return run
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

// SetupWithManager registers the controller. The canary is reconciled on
// spec changes and on annotation changes (run-now), not on its own status
// writes; on a run being created, changing phase or deleted; and on a
// referenced Corpus or Persona appearing or disappearing.
func (r *RevocationCanaryReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := r.indexReferences(mgr); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.RevocationCanary{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&v1alpha1.CanaryRun{}, builder.WithPredicates(runPhaseChanged())).
		Watches(&v1alpha1.Corpus{}, handler.EnqueueRequestsFromMapFunc(r.canariesFor(canaryCorpusIndex)),
			builder.WithPredicates(existenceChanged())).
		Watches(&v1alpha1.Persona{}, handler.EnqueueRequestsFromMapFunc(r.canariesFor(canaryPersonaIndex)),
			builder.WithPredicates(existenceChanged())).
		Named("revocationcanary").
		Complete(r)
}

func (r *RevocationCanaryReconciler) indexReferences(mgr ctrl.Manager) error {
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

// canariesFor maps a Corpus or Persona to the canaries in its namespace
// that reference it through the given index.
func (r *RevocationCanaryReconciler) canariesFor(index string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []ctrl.Request {
		var list v1alpha1.RevocationCanaryList
		if err := r.List(ctx, &list, client.InNamespace(obj.GetNamespace()),
			client.MatchingFields{index: obj.GetName()}); err != nil {
			log.FromContext(ctx).Error(err, "listing canaries for a reference", "index", index)
			return nil
		}
		reqs := make([]ctrl.Request, 0, len(list.Items))
		for i := range list.Items {
			reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
		return reqs
	}
}

// existenceChanged passes creates and deletes: readiness only checks that
// references exist, so their updates (a Corpus health check every minute)
// would only cause idle reconciles.
func existenceChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(event.UpdateEvent) bool { return false },
	}
}

// runPhaseChanged passes run updates that change the phase or start a
// deletion, not the probing heartbeats in between.
func runPhaseChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldRun, okOld := e.ObjectOld.(*v1alpha1.CanaryRun)
			newRun, okNew := e.ObjectNew.(*v1alpha1.CanaryRun)
			if !okOld || !okNew {
				return true
			}
			return oldRun.Status.Phase != newRun.Status.Phase ||
				oldRun.DeletionTimestamp.IsZero() != newRun.DeletionTimestamp.IsZero()
		},
	}
}
