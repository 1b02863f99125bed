package canaryrun

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/probe"
)

// A sentinel run (spec.sentinel) is Pending → Planting → Sharing (with its
// owner alone) → AwaitingVisibility (the owner sees it, proving it is
// indexed) → Watching (the control personas probe every surface for its
// lifetime) → CleaningUp. Nothing is revoked. The steps here are the only
// ones that differ from an ordinary run's.

// DefaultSentinelLifetime is the CRD default of spec.sentinel.lifetime.
const DefaultSentinelLifetime = 24 * time.Hour

func isSentinel(run *v1alpha1.CanaryRun) bool { return run.Spec.Sentinel != nil }

// sentinelLifetime is spec.sentinel.lifetime, its CRD default when unset.
func sentinelLifetime(run *v1alpha1.CanaryRun) time.Duration {
	if d := run.Spec.Sentinel.Lifetime.Duration; d > 0 {
		return d
	}
	return DefaultSentinelLifetime
}

// afterVisibility is the phase a run enters once its persona saw it: a
// sentinel is watched, any other canary is revoked.
func afterVisibility(run *v1alpha1.CanaryRun) v1alpha1.CanaryPhase {
	if isSentinel(run) {
		return v1alpha1.PhaseWatching
	}
	return v1alpha1.PhaseRevoking
}

// plantedDocument is the document a run plants.
func plantedDocument(run *v1alpha1.CanaryRun, t CanaryToken) driver.Document {
	if !isSentinel(run) {
		return canaryDocument(run, t)
	}
	return driver.Document{ID: run.Status.DocumentID, Title: "ragcanary sentinel", Body: sentinelBody(t.Handle, t.Payload)}
}

// sentinelBody is a sentinel's text. Its first sentence holds both the
// handle and the payload: derivation jobs lift a document's lead, and a
// derived document is found by the handle (the only query probes send) and
// recognised by the payload, so the lead must carry both. Every sentence
// carries the payload, as a canary's does.
func sentinelBody(handle, payload string) string {
	return "Sentinel " + handle + " holds " + payload + " and nothing else. " +
		"The payload " + payload + " is restricted to its owner and shared with no one. " +
		"Any reader outside its access list who sees " + payload + " got it through a leak."
}

// sentinelPlan adds what a sentinel's probe loop needs to the plan: its
// evidence resumed from status and, while watching, the Adaptive spacing
// (whatever spec.probing.schedule says: a watch lasts days, and fixed
// probing would cost a probe per interval for all of it).
func sentinelPlan(run *v1alpha1.CanaryRun, p probe.Plan) probe.Plan {
	if !isSentinel(run) {
		return p
	}
	p.Sentinel = true
	if st := run.Status.Sentinel; st != nil {
		p.ResumeSightings, p.ResumeSightingTotal = st.Sightings, st.TotalSightings
	}
	if p.Stage == probe.StageWatch {
		p.Schedule = watchSchedule(run)
	}
	return p
}

// watchSchedule counts elapsed time from the start of watching and ends a
// probe just before the lifetime does, so the verdict's last observation is
// at its end.
func watchSchedule(run *v1alpha1.CanaryRun) probe.Schedule {
	precision, err := probe.ParsePrecision(run.Spec.Probing.Precision)
	if err != nil {
		precision = probe.DefaultPrecision
	}
	s := probe.Schedule{Adaptive: true, Precision: precision, MaxInterval: maxProbeInterval(run)}
	if st := run.Status.Sentinel; st != nil && st.WatchStartTime != nil && st.WatchUntil != nil {
		s.Start = st.WatchStartTime.Time
		s.Deadlines = []time.Time{st.WatchUntil.Time}
	}
	return s
}

// startWatch fixes the watch window from the owner's first sighting; it
// reports whether status changed.
func startWatch(run *v1alpha1.CanaryRun) bool {
	if run.Status.Sentinel == nil {
		run.Status.Sentinel = &v1alpha1.SentinelStatus{}
	}
	st := run.Status.Sentinel
	if st.WatchStartTime != nil && st.WatchUntil != nil {
		return false
	}
	start := *run.Status.VisibleTime
	st.WatchStartTime = &start
	st.WatchUntil = &metav1.MicroTime{Time: start.Add(sentinelLifetime(run))}
	return true
}

// recordWatch persists a watch snapshot: a new sighting at once (it cannot
// be observed again), the control personas' counts at the checkpoint. It
// returns when to look again.
func (r *CanaryRunReconciler) recordWatch(rc *runCtx, snap probe.Snapshot) time.Duration {
	fresh := r.recordSightings(rc, snap)
	due, next := r.checkpointDue(rc)
	if !due && !fresh {
		return next
	}
	if len(snap.Controls) > 0 {
		rc.run.Status.ControlProbes = snap.Controls
	}
	rc.run.Status.LastHeartbeatTime = &metav1.Time{Time: rc.now}
	return r.untilNextCheckpoint(rc)
}

// recordSightings copies a snapshot's sightings into status when it holds
// more than status does (recordProbing calls it for every sentinel loop
// that stops), with a Warning event naming the first one (the
// persona, the surface and the carrier: IDs, never the payload). It reports
// whether status changed.
func (r *CanaryRunReconciler) recordSightings(rc *runCtx, snap probe.Snapshot) bool {
	r.recordViolations(rc, snap.IsolationViolations)
	run := rc.run
	if run.Status.Sentinel == nil {
		run.Status.Sentinel = &v1alpha1.SentinelStatus{}
	}
	st := run.Status.Sentinel
	if snap.SightingTotal <= st.TotalSightings {
		return false
	}
	if st.TotalSightings == 0 && len(snap.Sightings) > 0 {
		r.eventAfterWrite(rc, "Warning", v1alpha1.ReasonSentinelSighting, "Probe", "%s", describeSighting(snap.Sightings[0]))
	}
	st.Sightings, st.TotalSightings = snap.Sightings, snap.SightingTotal
	return true
}

// describeSighting is one sighting in a sentence.
func describeSighting(s v1alpha1.SentinelSighting) string {
	via := "an answer that cited no source"
	switch {
	case s.OwnDocument:
		via = "the sentinel's own document (an access-list bug)"
	case len(s.Carriers) > 0:
		via = strings.Join(s.Carriers, ", ")
	}
	return fmt.Sprintf("persona %s saw the sentinel's payload on the %s surface through %s", s.Persona, s.Surface, via)
}

// decideSentinel decides a watched sentinel and moves to CleaningUp.
func (r *CanaryRunReconciler) decideSentinel(rc *runCtx) (ctrl.Result, error) {
	run := rc.run
	verdict, msg := sentinelVerdict(run.Status.Sentinel, run.Status.IsolationViolations, controlCounts(run), sentinelLifetime(run))
	run.Status.LastHeartbeatTime = &metav1.Time{Time: rc.now}
	return r.conclude(rc, verdict, msg)
}
