package canaryrun

import (
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/inflight"
	"github.com/ragcanary/ragcanary/internal/measure"
	"github.com/ragcanary/ragcanary/internal/target"
)

// measuresInFlight: the run reads streams across its revocation.
func measuresInFlight(run *v1alpha1.CanaryRun) bool {
	return slices.Contains(requestedSurfaces(run), v1alpha1.SurfaceInFlight)
}

// inFlightStreams is spec.probing.inFlightStreams with its CRD default.
func inFlightStreams(run *v1alpha1.CanaryRun) int {
	return int(max(run.Spec.Probing.InFlightStreams, 1))
}

// openInFlight (Revoking, before the revocation is requested) opens the
// streams the InFlight surface reads across the revocation and holds the
// revocation until every one is delivering canary content: only a stream
// that is can show what arrives after the request. A stream that ended
// first (the target streams faster than a revocation can be requested, or
// its answer did not hold the canary yet) has the set opened again, until
// the deadline. stop is true when the caller must return res and err.
func (r *CanaryRunReconciler) openInFlight(ctx context.Context, rc *runCtx, deps *runDeps) (ctrl.Result, bool, error) {
	run := rc.run
	if !measuresInFlight(run) || run.Status.RevokeRequestedTime != nil {
		return ctrl.Result{}, false, nil
	}
	w, ok := deps.corpus.Driver.(driver.StreamWatcher)
	if !ok {
		res, err := r.conclude(rc, v1alpha1.VerdictSetupFailed, fmt.Sprintf(
			"Corpus %q has no streaming chat surface; remove InFlight from probing.surfaces", deps.corpus.Object.Name))
		return res, true, err
	}
	deadline := conversationDeadline(run)
	streams := r.inFlight.Streams(rc.key)
	all, ended := inflight.AllShowing(streams)
	if all {
		return ctrl.Result{}, false, nil
	}
	if ended {
		r.inFlight.Stop(rc.key)
		res, err := r.onProblem(rc, target.Wait(v1alpha1.ReasonInFlightNotShowingCanary,
			"a stream opened before the revocation ended before it could be requested, or without showing the canary; opening the streams again"), deadline)
		res.RequeueAfter = min(max(res.RequeueAfter, 10*time.Millisecond), SourceRetry)
		return res, true, err
	}
	if streams == nil {
		if !rc.now.Before(deadline) {
			res, err := r.conclude(rc, v1alpha1.VerdictSetupFailed,
				"no stream opened before the revocation was still delivering the canary when it could be requested")
			return res, true, err
		}
		token, problem, err := r.readToken(ctx, run)
		if err != nil {
			return ctrl.Result{}, true, err
		}
		if problem != "" {
			res, err := r.onProblem(rc, target.Wait("TokenUnavailable", "%s", problem), deadline)
			return res, true, err
		}
		t, persona, key := token.target(run.Status.DocumentID), deps.persona.Token, rc.key
		notify := func() { r.enqueueTransition(key) }
		r.inFlight.Open(key, inFlightStreams(run), deps.corpus.Hold(), func(ctx context.Context) *inflight.Stream {
			return inflight.Watch(ctx, w, deps.corpus.Wait, persona, t.Handle, t.Payload, notify)
		})
		log.FromContext(ctx).V(1).Info("in-flight streams opened before the revocation", "streams", inFlightStreams(run))
	}
	// The first canary chunk or an end enqueues the run; this requeue is
	// the deadline's.
	return ctrl.Result{RequeueAfter: max(min(deadline.Sub(rc.now), SourceRetry), 10*time.Millisecond)}, true, nil
}

// markInFlightRequested tells the run's streams the instant the persisted
// revocation request time was taken from.
func (r *CanaryRunReconciler) markInFlightRequested(rc *runCtx, at time.Time) {
	if measuresInFlight(rc.run) {
		inflight.Requested(r.inFlight.Streams(rc.key), at)
	}
}

// inFlightPending reports whether the run still waits for its streams to
// end before deciding; it never waits past deadline (the streams then
// count as failed: the run stopped waiting for them).
func (r *CanaryRunReconciler) inFlightPending(rc *runCtx, deadline time.Time) bool {
	if !measuresInFlight(rc.run) || rc.run.Status.InFlight != nil || !rc.now.Before(deadline) {
		return false
	}
	streams := r.inFlight.Streams(rc.key)
	return streams != nil && !inflight.AllDone(streams)
}

// recordInFlight puts the streams' measurement into status, once. A run
// whose streams this process does not hold (it restarted after the
// revocation was requested) reports each as failed: nothing it delivered
// after the request can be known now. The streams are let go only once
// the measurement is stored (cleanUp, or a finished run): a decision whose
// status write fails is taken again, from the same streams.
func (r *CanaryRunReconciler) recordInFlight(rc *runCtx, corpus *v1alpha1.Corpus) {
	run := rc.run
	if !measuresInFlight(run) || run.Status.InFlight != nil {
		return
	}
	var m *v1alpha1.InFlightMeasurement
	if streams := r.inFlight.Streams(rc.key); streams != nil {
		m = inflight.Measure(streams)
	} else {
		m = inflight.Lost(inFlightStreams(run))
	}
	slo, source := measure.JudgedSLO(&run.Spec.CanarySpec, corpus, v1alpha1.SurfaceInFlight)
	delivery, bytes, _ := measure.InFlightDelivery(m.Streams)
	m.PostRevocationDelivery, m.CanaryBytesAfterRequest = delivery, bytes
	m.SLO, m.SLOSource = durationOf(slo), source
	m.Delivery = measure.HumanDelivery(delivery, bytes)
	run.Status.InFlight = m
}

func durationOf(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
