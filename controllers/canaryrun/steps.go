package canaryrun

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/measure"
	"github.com/ragcanary/ragcanary/internal/metrics"
	"github.com/ragcanary/ragcanary/internal/probe"
	"github.com/ragcanary/ragcanary/internal/reconcile"
	"github.com/ragcanary/ragcanary/internal/target"
)

// start (Pending) resolves the references and fixes the document and
// Secret names. Nothing is written to the target yet.
func (r *CanaryRunReconciler) start(ctx context.Context, rc *runCtx) (ctrl.Result, error) {
	run := rc.run
	run.Status.Phase = v1alpha1.PhasePending
	if run.Status.StartTime == nil {
		run.Status.StartTime = floorSecond(rc.now)
	}
	deps, err := r.resolveRefs(ctx, rc)
	if err != nil {
		return r.onProblem(rc, err, r.setupDeadline(run))
	}
	defer deps.release()
	caps, err := r.capabilities(ctx, deps)
	if err != nil {
		return r.onProblem(rc, err, r.setupDeadline(run))
	}
	r.clearWaiting(rc)
	if msg := setupProblem(run, deps, caps); msg != "" {
		return r.conclude(rc, v1alpha1.VerdictSetupFailed, msg)
	}
	run.Status.DocumentID = DocumentID(run)
	run.Status.TokenSecretName = tokenSecretName(run)
	run.Status.Phase = v1alpha1.PhasePlanting
	// Both names derive from the run, and Sharing persists before it acts:
	// a restart before that write starts over and plants the same document
	// (and cleanup derives its ID: see removeCanary).
	rc.persistWithNext = true
	return ctrl.Result{}, nil
}

// plant (Planting) creates the token Secret and the canary document, which
// no one may read yet. The finalizer goes on first, so nothing is ever
// written to the target that deletion would not clean up.
func (r *CanaryRunReconciler) plant(ctx context.Context, rc *runCtx) (ctrl.Result, error) {
	run := rc.run
	deps, err := r.resolveRefs(ctx, rc)
	if err != nil {
		return r.onProblem(rc, err, r.setupDeadline(run))
	}
	defer deps.release()
	r.clearWaiting(rc)
	if err := r.addFinalizer(ctx, rc); err != nil {
		return ctrl.Result{}, err
	}
	// What cleanup needs is kept before anything is written to the target,
	// so the document can be removed even if the Corpus, its Secret or the
	// Persona are deleted first (also by a namespace deletion).
	if err := r.keepCleanupRecipe(ctx, run, deps); err != nil {
		return ctrl.Result{}, err
	}
	token, problem, err := r.ensureToken(ctx, run)
	if err != nil {
		return ctrl.Result{}, err
	}
	if problem != "" {
		return r.conclude(rc, v1alpha1.VerdictSetupFailed, problem)
	}
	run.Status.TokenHash = tokenHash(token)
	found, err := foundPlanted(ctx, run, deps.corpus)
	if !found && err == nil {
		if err = deps.corpus.Driver.CreateDocument(ctx, plantedDocument(run, token)); driver.IsPermanent(err) {
			err = fmt.Errorf("%w%s", err, mayHaveLeftOne(ctx, deps.corpus, run.Status.DocumentID))
		}
	}
	if res, stop, err := r.sourceResult(rc, "planting the canary document", err, r.setupDeadline(run)); stop {
		return res, err
	}
	keepCaptures(run, deps.corpus)
	run.Status.Phase = v1alpha1.PhaseSharing
	// Sharing persists its request time before it shares. A restart before
	// that write starts over and re-plants the same document.
	rc.persistWithNext = true
	return ctrl.Result{}, nil
}

// share (Sharing) gives the persona access by the revocation method. The
// share request time is persisted before the request is sent.
func (r *CanaryRunReconciler) share(ctx context.Context, rc *runCtx) (ctrl.Result, error) {
	run := rc.run
	deps, err := r.resolveRefs(ctx, rc)
	if err != nil {
		return r.onProblem(rc, err, r.setupDeadline(run))
	}
	defer deps.release()
	r.clearWaiting(rc)
	if run.Status.ShareRequestedTime == nil {
		run.Status.ShareRequestedTime = measure.FloorMicro(r.Clock.Now())
		if err := r.persist(ctx, rc); err != nil {
			return ctrl.Result{}, err
		}
	}
	err = shareCanary(ctx, deps.corpus.Driver, run, deps.persona.Object.Spec.Subject)
	if res, stop, err := r.sourceResult(rc, "sharing the canary", err, r.setupDeadline(run)); stop {
		return res, err
	}
	keepCaptures(run, deps.corpus)
	run.Status.Phase = v1alpha1.PhaseAwaitingVisibility
	return ctrl.Result{}, nil
}

// awaitVisibility (AwaitingVisibility) lets the probe engine probe until the
// persona sees the token on every surface, or the visibility timeout passes.
func (r *CanaryRunReconciler) awaitVisibility(ctx context.Context, rc *runCtx) (ctrl.Result, error) {
	run := rc.run
	if run.Status.ShareRequestedTime == nil {
		run.Status.Phase = v1alpha1.PhaseSharing
		return ctrl.Result{}, nil
	}
	deadline := run.Status.ShareRequestedTime.Add(visibilityTimeout(run))
	if st, ok := r.Probes.StateAt(rc.key, probe.StageVisibility); ok {
		r.recordProbing(rc, st.Snapshot())
	}
	if !rc.now.Before(deadline) {
		snap, _ := r.stopProbing(rc)
		// "Not seen", not "not visible": probe errors say nothing either way.
		msg := fmt.Sprintf("the persona did not see the canary within %s", visibilityTimeout(run))
		if s, ok := snap.SurfaceWithoutReply(); ok {
			msg += fmt.Sprintf("; no probe of the %s surface got a valid reply (%d probe errors), so visibility could not be established", s, snap.VisibilityErrors)
		}
		return r.conclude(rc, v1alpha1.VerdictSetupFailed, msg)
	}
	st, res, err := r.ensureProbing(ctx, rc, probe.StageVisibility, deadline)
	if st == nil {
		return res, err
	}
	snap := st.Snapshot()
	r.recordProbing(rc, snap)
	if !snap.AllVisible {
		return requeueBefore(rc.now, deadline, r.untilNextCheckpoint(rc)), nil
	}
	run.Status.VisibleTime = measure.CeilMicro(snap.FirstVisibleEnd)
	run.Status.TimeToVisibility = durationBetween(run.Status.ShareRequestedTime, run.Status.VisibleTime)
	run.Status.Phase = afterVisibility(run)
	// Revoking persists its request time, and with it the sighting, before
	// it revokes. A restart in between probes visibility again: the later
	// sighting can only lengthen time-to-visibility, never shorten it.
	rc.persistWithNext = run.Status.Phase == v1alpha1.PhaseRevoking
	return ctrl.Result{}, nil
}

// revoke (Revoking) takes access away. The request time is persisted before
// the request is sent and the acknowledgement right after it, before any
// exclusion probe runs.
func (r *CanaryRunReconciler) revoke(ctx context.Context, rc *runCtx) (ctrl.Result, error) {
	run := rc.run
	// No visibility probe may straddle the revocation; sightings of the
	// loop's last rounds are kept.
	r.stopProbing(rc)
	deadline := r.revokeDeadline(run)
	deps, err := r.resolveRefs(ctx, rc)
	if err != nil {
		return r.onProblem(rc, err, deadline)
	}
	defer deps.release()
	r.clearWaiting(rc)
	if res, stop, err := r.startConversation(ctx, rc, deps); stop {
		return res, err
	}
	if res, stop, err := r.openInFlight(ctx, rc, deps); stop {
		return res, err
	}
	if run.Status.RevokeRequestedTime == nil {
		at := r.Clock.Now()
		run.Status.RevokeRequestedTime = measure.FloorMicro(at)
		r.markInFlightRequested(rc, at)
		if err := r.persist(ctx, rc); err != nil {
			return ctrl.Result{}, err
		}
	}
	if run.Status.RevokeAcknowledgedTime == nil {
		err = r.revokeBy(ctx, deps.corpus.Driver, run, deps.persona)
		if res, stop, err := r.sourceResult(rc, "revoking access", err, deadline); stop {
			return res, err
		}
		keepCaptures(run, deps.corpus)
		run.Status.RevokeAcknowledgedTime = measure.CeilMicro(r.Clock.Now())
	}
	if len(run.Status.Surfaces) == 0 {
		for _, s := range probingSurfaces(run) {
			run.Status.Surfaces = append(run.Status.Surfaces, v1alpha1.SurfaceMeasurement{Surface: s})
		}
	}
	run.Status.Phase = v1alpha1.PhaseAwaitingExclusion
	// The write that enters AwaitingExclusion is the run's first
	// checkpoint there: the first exclusion snapshot holds nothing new.
	run.Status.LastHeartbeatTime = &metav1.Time{Time: rc.now}
	return ctrl.Result{}, nil
}

// awaitExclusion (AwaitingExclusion) persists what probing learned that
// cannot be re-observed when it changes, and counters at the checkpoint
// (recordExclusionProgress), until every surface confirmed exclusion or
// the exclusion timeout passes; then the verdict is decided and persisted
// together with the measurements before CleaningUp starts.
func (r *CanaryRunReconciler) awaitExclusion(ctx context.Context, rc *runCtx) (ctrl.Result, error) {
	run := rc.run
	ack := run.Status.RevokeAcknowledgedTime
	if ack == nil || run.Status.RevokeRequestedTime == nil {
		run.Status.Phase = v1alpha1.PhaseRevoking
		return ctrl.Result{}, nil
	}
	deadline := ack.Add(exclusionTimeout(run))
	if !rc.now.Before(deadline) {
		surfaces := run.Status.Surfaces
		if snap, ok := r.finalSnapshot(rc); ok {
			surfaces = snap.Surfaces
		}
		return r.decideExclusion(ctx, rc, surfaces, nil)
	}
	st, res, err := r.ensureProbing(ctx, rc, probe.StageExclusion, deadline)
	if st == nil {
		return res, err
	}
	snap := st.Snapshot()
	// Control counts are counters: they wait for the checkpoint below.
	r.recordViolations(rc, snap.IsolationViolations)
	if measure.AllSettled(snap.Surfaces) && r.inFlightPending(rc, deadline) {
		// Streams read across the revocation are part of the verdict: it
		// waits for their end (each end enqueues the run).
		return requeueBefore(rc.now, deadline, r.recordExclusionProgress(rc, snap)), nil
	}
	if measure.AllSettled(snap.Surfaces) {
		// Stop first, so rounds after this snapshot (a control sighting in
		// the last round) are part of the verdict.
		if final, ok := r.finalSnapshot(rc); ok {
			snap = final
		}
		if !measure.AllSettled(snap.Surfaces) {
			// A round between the snapshot and the stop saw the canary
			// again: no decision; probing resumes from status at once.
			run.Status.Surfaces = snap.Surfaces
			return ctrl.Result{RequeueAfter: 10 * time.Millisecond}, nil
		}
		return r.decideExclusion(ctx, rc, snap.Surfaces, rc.deps)
	}
	return requeueBefore(rc.now, deadline, r.recordExclusionProgress(rc, snap)), nil
}

// watch (Watching) lets the control personas probe the sentinel until its
// lifetime ends; sightings are persisted as they are seen, then the verdict
// is decided and the document removed.
func (r *CanaryRunReconciler) watch(ctx context.Context, rc *runCtx) (ctrl.Result, error) {
	run := rc.run
	if run.Status.VisibleTime == nil {
		run.Status.Phase = v1alpha1.PhaseAwaitingVisibility
		return ctrl.Result{}, nil
	}
	if startWatch(run) {
		// The watch window is fixed before any watch probe runs.
		if err := r.persist(ctx, rc); err != nil {
			return ctrl.Result{}, err
		}
	}
	if _, ok := r.Probes.StateAt(rc.key, probe.StageVisibility); ok {
		// The visibility loop's last rounds (sightings included) are
		// kept, then it gives way.
		r.stopProbing(rc)
	}
	deadline := run.Status.Sentinel.WatchUntil.Time
	if !rc.now.Before(deadline) {
		r.stopProbing(rc)
		return r.decideSentinel(rc)
	}
	st, res, err := r.ensureProbing(ctx, rc, probe.StageWatch, deadline)
	if st == nil {
		return res, err
	}
	return requeueBefore(rc.now, deadline, r.recordWatch(rc, st.Snapshot())), nil
}

// cleanUp (CleaningUp) always runs, whatever the verdict: it removes the
// canary document, then completes the run, records metrics and emits the
// verdict event.
func (r *CanaryRunReconciler) cleanUp(ctx context.Context, rc *runCtx) (ctrl.Result, error) {
	run := rc.run
	_, _ = r.stopProbing(rc)
	r.inFlight.Stop(rc.key)
	r.endConversation(run)
	// A control sighting in the loop's last rounds outranks the verdict.
	run.Status.Verdict, run.Status.Message = measure.Amend(run.Status.Verdict, run.Status.Message, run.Status.IsolationViolations)
	setMeasurementText(&run.Status)
	if controllerutil.ContainsFinalizer(run, v1alpha1.FinalizerCanaryRun) {
		if res, done, err := r.removeCanary(ctx, rc, false); !done {
			return res, err
		}
	}
	run.Status.Phase = PhaseFor(run.Status.Verdict)
	run.Status.CompletionTime = &metav1.Time{Time: rc.now}
	setCondition(run, v1alpha1.ConditionComplete, metav1.ConditionTrue, string(run.Status.Verdict), run.Status.Message)
	if err := r.persist(ctx, rc); err != nil {
		return ctrl.Result{}, err
	}
	metrics.RecordCompletion(metricsRun(run), completion(run, rc.now))
	r.Recorder.Eventf(run, nil, eventType(run.Status.Verdict), string(run.Status.Verdict), "Complete", "%s", run.Status.Message)
	return ctrl.Result{}, r.removeFinalizer(ctx, rc)
}

// setupDeadline is when a run that is still setting up gives up: its
// visibility timeout after creation.
func (r *CanaryRunReconciler) setupDeadline(run *v1alpha1.CanaryRun) time.Time {
	return run.CreationTimestamp.Add(visibilityTimeout(run))
}

// shareCanary gives the persona access by the run's strategy. Control
// personas are never granted.
func shareCanary(ctx context.Context, d driver.Driver, run *v1alpha1.CanaryRun, subject string) error {
	s, err := strategyOf(run)
	if err != nil {
		return driver.NewError(driver.Permanent, "Share", 0, "unknown revocation method", err)
	}
	return s.Share(ctx, d, canaryOf(run, subject, nil))
}

// ensureProbing resolves the references and makes sure the run's probe
// loop runs at stage. It returns a nil state with the result to return
// when the run has to wait for a reference.
func (r *CanaryRunReconciler) ensureProbing(ctx context.Context, rc *runCtx, stage probe.Stage, deadline time.Time) (*probe.State, ctrl.Result, error) {
	// A running loop keeps the driver and tokens it was started with: the
	// references are resolved once per stage, not on every checkpoint.
	if st, ok := r.Probes.StateAt(rc.key, stage); ok {
		return st, ctrl.Result{}, nil
	}
	deps, err := r.resolveRefs(ctx, rc)
	if err != nil {
		res, err := r.onProblem(rc, err, deadline)
		return nil, res, err
	}
	defer deps.release()
	r.clearWaiting(rc)
	rc.deps = deps
	token, problem, err := r.readToken(ctx, rc.run)
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	if problem != "" {
		res, err := r.onProblem(rc, target.Wait("TokenUnavailable", "%s", problem), deadline)
		return nil, res, err
	}
	log.FromContext(ctx).V(1).Info("starting probe loop", "stage", int(stage))
	return r.Probes.Ensure(rc.key, r.plan(rc, deps, stage, token)), ctrl.Result{}, nil
}

// plan builds the probe plan; it resumes from status after a restart.
func (r *CanaryRunReconciler) plan(rc *runCtx, deps *runDeps, stage probe.Stage, token CanaryToken) probe.Plan {
	run := rc.run
	p := probe.Plan{
		Stage: stage, Driver: deps.corpus.Driver, Release: deps.corpus.Hold(),
		Corpus: deps.corpus.Key, Limit: deps.corpus.Limit,
		Interval:      probeInterval(run),
		Schedule:      probeSchedule(run, deps.corpus.Object, stage),
		Confirmations: confirmations(run), Surfaces: probingSurfaces(run),
		Persona: deps.persona.Token, PersonaSource: deps.persona.Source,
		Target:  token.target(run.Status.DocumentID),
		Metrics: metricsRun(run),
		Resume:  run.Status.Surfaces, ResumeViolations: run.Status.IsolationViolations,
		ResumeControls: run.Status.ControlProbes,
		// After a credential revocation, the persona's credential refused
		// is the end of access the run measures.
		RefusalExcludes: stage == probe.StageExclusion && revocationMethod(run) == v1alpha1.RevokeCredential,
	}
	p.Target.Conversation = conversationOf(run, deps.persona.Token)
	for _, c := range deps.controls {
		p.Controls = append(p.Controls, probe.Control{Name: c.Object.Name, Token: c.Token, Source: c.Source})
	}
	if ack := run.Status.RevokeAcknowledgedTime; ack != nil {
		p.RevokeAcknowledged = ack.Time
	}
	return sentinelPlan(run, p)
}

// recordProbing persists what the loop learned that status must keep:
// isolation violations and the control personas' probe counts.
func (r *CanaryRunReconciler) recordProbing(rc *runCtx, snap probe.Snapshot) {
	r.recordViolations(rc, snap.IsolationViolations)
	if len(snap.Controls) > 0 {
		rc.run.Status.ControlProbes = snap.Controls
	}
	if isSentinel(rc.run) {
		r.recordSightings(rc, snap)
	}
}

// recordViolations raises the persisted count to what probing saw, with a
// Warning event on the first one: a leak is worth knowing before the run ends.
func (r *CanaryRunReconciler) recordViolations(rc *runCtx, seen int32) {
	if seen <= rc.run.Status.IsolationViolations {
		return
	}
	if rc.run.Status.IsolationViolations == 0 {
		r.eventAfterWrite(rc, "Warning", string(v1alpha1.VerdictIsolationViolation), "Probe",
			"a control persona saw the canary token")
	}
	rc.run.Status.IsolationViolations = seen
}

// finalSnapshot stops the exclusion loop and returns its complete state,
// recorded into status; ok is false when no exclusion loop ran.
func (r *CanaryRunReconciler) finalSnapshot(rc *runCtx) (probe.Snapshot, bool) {
	st := r.Probes.Stop(rc.key)
	if st == nil {
		return probe.Snapshot{}, false
	}
	snap := st.Snapshot()
	r.recordProbing(rc, snap)
	return snap, snap.Stage == probe.StageExclusion
}

// decideExclusion finalizes the measurements, decides the verdict and
// moves to CleaningUp. deps may be nil (at the timeout the corpus is read
// only for its SLOs, and a missing corpus falls back to defaults).
func (r *CanaryRunReconciler) decideExclusion(ctx context.Context, rc *runCtx, surfaces []v1alpha1.SurfaceMeasurement, deps *runDeps) (ctrl.Result, error) {
	run := rc.run
	rev := measure.Revocation{Requested: run.Status.RevokeRequestedTime.Time, Acknowledged: run.Status.RevokeAcknowledgedTime.Time}
	corpus := r.corpusForSLO(ctx, run, deps)
	final := finalizeSurfaces(run, surfaces, rev, corpus)
	r.recordInFlight(rc, corpus)
	verdict, msg := measure.Verdict(measure.RunOutcome{
		Surfaces: final, IsolationViolations: run.Status.IsolationViolations,
		SLO:        runSLO(run, corpus),
		Revocation: rev, Controls: controlCounts(run), Content: isContentRun(run),
		InFlight: run.Status.InFlight,
	})
	run.Status.Surfaces = final
	run.Status.LastHeartbeatTime = &metav1.Time{Time: rc.now}
	return r.conclude(rc, verdict, msg)
}

// controlCounts are the control personas' probe counts on every probed
// surface, with a zero entry where status has none (never probed).
func controlCounts(run *v1alpha1.CanaryRun) []v1alpha1.ControlProbeCounts {
	surfaces := probingSurfaces(run)
	out := make([]v1alpha1.ControlProbeCounts, 0, len(run.Spec.ControlPersonaRefs)*len(surfaces))
	for _, ref := range run.Spec.ControlPersonaRefs {
		for _, s := range surfaces {
			c := v1alpha1.ControlProbeCounts{Persona: ref.Name, Surface: s}
			for _, got := range run.Status.ControlProbes {
				if got.Persona == ref.Name && got.Surface == s {
					c = got
				}
			}
			out = append(out, c)
		}
	}
	return out
}

func (r *CanaryRunReconciler) corpusForSLO(ctx context.Context, run *v1alpha1.CanaryRun, deps *runDeps) *v1alpha1.Corpus {
	if deps != nil {
		return deps.corpus.Object
	}
	var c v1alpha1.Corpus
	if err := r.Get(ctx, corpusName(run), &c); err != nil {
		return nil
	}
	return &c
}

// conclude records the verdict and moves to CleaningUp, which always runs.
func (r *CanaryRunReconciler) conclude(rc *runCtx, verdict v1alpha1.Verdict, message string) (ctrl.Result, error) {
	verdict, message = measure.Amend(verdict, message, rc.run.Status.IsolationViolations)
	rc.run.Status.Verdict = verdict
	rc.run.Status.Message = truncate(message, 1024)
	rc.run.Status.Phase = v1alpha1.PhaseCleaningUp
	return ctrl.Result{}, nil
}

// sourceResult maps a failed source-side step: a rejection (permanent, or
// a refused source credential) is SetupFailed; anything else is transient
// and retried with backoff until the phase's deadline, after which the run
// is SetupFailed and cleans up: a target that keeps failing must not leave
// the persona with access indefinitely. stop is false on success.
func (r *CanaryRunReconciler) sourceResult(rc *runCtx, what string, err error, deadline time.Time) (ctrl.Result, bool, error) {
	if err == nil {
		return ctrl.Result{}, false, nil
	}
	if driver.IsPermanent(err) || driver.IsUnauthorized(err) {
		// Driver errors are sanitized: no bodies, no credentials.
		res, cerr := r.conclude(rc, v1alpha1.VerdictSetupFailed, fmt.Sprintf("the source rejected %s: %v", what, err))
		return res, true, cerr
	}
	if !rc.now.Before(deadline) {
		res, cerr := r.conclude(rc, v1alpha1.VerdictSetupFailed,
			fmt.Sprintf("%s kept failing until the deadline: %v", what, err))
		return res, true, cerr
	}
	// Retried on a short fixed delay, never past the deadline: controller
	// backoff doubles without regard to it and could overshoot it by far.
	msg := fmt.Sprintf("%s failed, retrying until %s: %v", what, deadline.UTC().Format(time.RFC3339), err)
	setCondition(rc.run, v1alpha1.ConditionWaiting, metav1.ConditionTrue, v1alpha1.ReasonSourceRetrying, msg)
	return ctrl.Result{RequeueAfter: max(min(SourceRetry, deadline.Sub(rc.now)), 10*time.Millisecond)}, true, nil
}

// SourceRetry is how soon a transiently failed source-side step is retried.
const SourceRetry = 2 * time.Second

// onProblem is where a run maps a failure from the door: a planted target
// no longer reachable ends the run Inconclusive; the user's problems
// (Stalled or Waiting) become a Waiting condition until the phase
// deadline; transient errors are returned for backoff, but never past it.
func (r *CanaryRunReconciler) onProblem(rc *runCtx, err error, deadline time.Time) (ctrl.Result, error) {
	if tc := (*targetChangedError)(nil); errors.As(err, &tc) {
		return r.conclude(rc, v1alpha1.VerdictInconclusive, tc.Error())
	}
	out := reconcile.Compute(err, runPolicy)
	if out.Condition != nil {
		return r.waitUntil(rc, out.Problem, out.Result, deadline)
	}
	if !deadline.IsZero() && !rc.now.Before(deadline) && rc.run.Status.Phase != v1alpha1.PhaseAwaitingExclusion {
		return r.conclude(rc, v1alpha1.VerdictSetupFailed, fmt.Sprintf("the run could not be set up before its deadline: %s", out.Problem.Message))
	}
	return ctrl.Result{}, out.Err
}

// runPolicy: a run re-checks what it waits for (the user's problem or a
// reference not there yet) every waitRetry, until the phase's deadline.
var runPolicy = reconcile.Policy{StalledRequeue: waitRetry, WaitingRequeue: waitRetry}

// revokeDeadline bounds the Revoking phase: a revocation not acknowledged
// within the exclusion timeout of its request fails the run, which then
// cleans up (deleting the document ends the persona's access either way).
func (r *CanaryRunReconciler) revokeDeadline(run *v1alpha1.CanaryRun) time.Time {
	if t := run.Status.RevokeRequestedTime; t != nil {
		return t.Add(exclusionTimeout(run))
	}
	return r.Clock.Now().Add(exclusionTimeout(run))
}

// stopProbing ends the run's probe loop and keeps the isolation violations
// its last rounds saw, which no snapshot may have reported yet.
func (r *CanaryRunReconciler) stopProbing(rc *runCtx) (probe.Snapshot, bool) {
	st := r.Probes.Stop(rc.key)
	if st == nil {
		return probe.Snapshot{}, false
	}
	snap := st.Snapshot()
	r.recordProbing(rc, snap)
	return snap, true
}

// waitUntil shows a Waiting condition and re-checks later. Past deadline
// (zero: none) a run that is still setting up fails as SetupFailed.
func (r *CanaryRunReconciler) waitUntil(rc *runCtx, w *target.Problem, res ctrl.Result, deadline time.Time) (ctrl.Result, error) {
	if !deadline.IsZero() && !rc.now.Before(deadline) && rc.run.Status.Phase != v1alpha1.PhaseAwaitingExclusion {
		return r.conclude(rc, v1alpha1.VerdictSetupFailed, w.Message)
	}
	setCondition(rc.run, v1alpha1.ConditionWaiting, metav1.ConditionTrue, w.Reason, w.Message)
	rc.run.Status.Message = truncate(w.Message, 1024)
	next := res.RequeueAfter
	if !deadline.IsZero() {
		next = min(next, deadline.Sub(rc.now))
	}
	return ctrl.Result{RequeueAfter: max(next, 10*time.Millisecond)}, nil
}

func (r *CanaryRunReconciler) clearWaiting(rc *runCtx) {
	c := meta.FindStatusCondition(rc.run.Status.Conditions, v1alpha1.ConditionWaiting)
	if c == nil {
		return
	}
	if rc.run.Status.Message == c.Message {
		rc.run.Status.Message = ""
	}
	meta.RemoveStatusCondition(&rc.run.Status.Conditions, v1alpha1.ConditionWaiting)
}
