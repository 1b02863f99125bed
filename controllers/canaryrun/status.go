package canaryrun

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/format"
	"github.com/ragcanary/ragcanary/internal/measure"
	"github.com/ragcanary/ragcanary/internal/metrics"
	"github.com/ragcanary/ragcanary/internal/revocation"
	"github.com/ragcanary/ragcanary/internal/target"
)

// DocumentIDPrefix marks canary documents at the source.
const DocumentIDPrefix = "rc-"

// DocumentID derives the canary document ID from the run's UID, so a
// retried step never creates a second document.
func DocumentID(run *v1alpha1.CanaryRun) string {
	return DocumentIDPrefix + string(run.UID)
}

// tokenSecretName is "<run>-token", shortened with a hash when the run name
// leaves no room for the suffix.
func tokenSecretName(run *v1alpha1.CanaryRun) string {
	const suffix = "-token"
	name := run.Name
	if len(name)+len(suffix) > 253 {
		sum := sha256.Sum256([]byte(name))
		name = name[:253-len(suffix)-9] + "-" + hex.EncodeToString(sum[:4])
	}
	return name + suffix
}

// floorSecond rounds a whole-second status timestamp (metav1.Time) down,
// so the in-memory value is what status will hold. Timestamps a measurement
// is derived from are metav1.MicroTime instead, rounded by measure.FloorMicro
// and measure.CeilMicro.
func floorSecond(t time.Time) *metav1.Time {
	return &metav1.Time{Time: t.Truncate(time.Second)}
}

// PhaseFor maps a verdict to the terminal phase: Succeeded when the run
// produced a measurement (including bad news such as a breach, a token
// still visible or a leak), Failed when it could not measure.
func PhaseFor(v v1alpha1.Verdict) v1alpha1.CanaryPhase {
	switch v {
	case v1alpha1.VerdictSetupFailed, v1alpha1.VerdictInconclusive:
		return v1alpha1.PhaseFailed
	default:
		return v1alpha1.PhaseSucceeded
	}
}

func isTerminal(p v1alpha1.CanaryPhase) bool {
	return p == v1alpha1.PhaseSucceeded || p == v1alpha1.PhaseFailed
}

// eventType is Normal only for a met SLO or an isolated sentinel:
// everything else deserves attention.
func eventType(v v1alpha1.Verdict) string {
	if v == v1alpha1.VerdictSLOMet || v == v1alpha1.VerdictIsolated {
		return "Normal"
	}
	return "Warning"
}

func setCondition(run *v1alpha1.CanaryRun, condType string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&run.Status.Conditions, metav1.Condition{
		Type: condType, Status: status, Reason: reason, Message: truncate(message, 1024),
		ObservedGeneration: run.Generation,
	})
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// exclusionSLO is the objective a run's surface is judged by (measure.SurfaceSLO).
func exclusionSLO(run *v1alpha1.CanaryRun, corpus *v1alpha1.Corpus, surface v1alpha1.Surface) time.Duration {
	slo, _ := measure.SurfaceSLO(&run.Spec.CanarySpec, corpus, surface)
	return slo
}

// metricsRun labels a run's series (metrics.RunOf).
func metricsRun(run *v1alpha1.CanaryRun) metrics.Run { return metrics.RunOf(run) }

// completion turns a finished run's status into what the metrics record.
func completion(run *v1alpha1.CanaryRun, now time.Time) metrics.Completion {
	c := metrics.Completion{Verdict: string(run.Status.Verdict), Finished: now}
	if run.Status.TimeToVisibility != nil {
		d := run.Status.TimeToVisibility.Duration
		c.TimeToVisibility = &d
	}
	for i := range run.Status.Surfaces {
		m := &run.Status.Surfaces[i]
		// A content-freshness run reports the surface's freshness, not the
		// old content's exclusion alone.
		s, b := metrics.SurfaceResult{Surface: string(m.Surface), Content: isContentRun(run)}, m.Bounds
		if s.Content {
			b = measure.Freshness(m)
		}
		if b != nil && b.Lower != nil {
			d := b.Lower.Duration
			s.Lower = &d
		}
		if b != nil && b.Upper != nil {
			d := b.Upper.Duration
			s.Upper = &d
		}
		c.Surfaces = append(c.Surfaces, s)
	}
	return c
}

// setMeasurementText fills the rounded, human-readable copies of the
// measurement that printer columns show. It runs once the verdict is known;
// a surface that was not probed keeps an empty field rather than a claim.
func setMeasurementText(st *v1alpha1.CanaryRunStatus) {
	st.VisibleAfter = ""
	if st.TimeToVisibility != nil {
		st.VisibleAfter = format.HumanDuration(st.TimeToVisibility.Duration)
	}
	for i := range st.Surfaces {
		st.Surfaces[i].Exclusion = format.Interval(st.Surfaces[i].Bounds)
	}
	st.ContentFreshness = contentFreshnessText(st)
}

// probingSurfaces are the run's surfaces, Search when none are set.
func probingSurfaces(run *v1alpha1.CanaryRun) []v1alpha1.Surface {
	return v1alpha1.Probed(run.Spec.Probing.Surfaces)
}

// requestedSurfaces are every surface the run measures, InFlight included.
func requestedSurfaces(run *v1alpha1.CanaryRun) []v1alpha1.Surface {
	if len(run.Spec.Probing.Surfaces) == 0 {
		return []v1alpha1.Surface{v1alpha1.SurfaceSearch}
	}
	return run.Spec.Probing.Surfaces
}

// Probing settings with the CRD defaults, for runs created by clients
// that send zero values.
func probeInterval(run *v1alpha1.CanaryRun) time.Duration {
	if d := run.Spec.Probing.Interval.Duration; d > 0 {
		return d
	}
	return 5 * time.Second
}

func confirmations(run *v1alpha1.CanaryRun) int32 {
	if c := run.Spec.Probing.Confirmations; c > 0 {
		return c
	}
	return 3
}

func visibilityTimeout(run *v1alpha1.CanaryRun) time.Duration {
	if d := run.Spec.Probing.VisibilityTimeout.Duration; d > 0 {
		return d
	}
	return 10 * time.Minute
}

func exclusionTimeout(run *v1alpha1.CanaryRun) time.Duration {
	if d := run.Spec.Probing.ExclusionTimeout.Duration; d > 0 {
		return d
	}
	return 30 * time.Minute
}

func revocationMethod(run *v1alpha1.CanaryRun) v1alpha1.RevocationMethod {
	if m := run.Spec.Revocation.Method; m != "" {
		return m
	}
	return v1alpha1.RevokeRemoveGrant
}

// strategyOf is the run's revocation strategy, chosen once from its spec;
// the CRD admits only the methods revocation.Methods lists, and a method
// without a strategy is refused before anything is planted (setupProblem).
func strategyOf(run *v1alpha1.CanaryRun) (revocation.Strategy, error) {
	return revocation.For(revocationMethod(run))
}

// canaryOf is what the strategy acts on; subject is the persona's, "" when
// nobody knows it any more; rev revokes its client (RevokeCredential), nil
// when it declares no way to.
func canaryOf(run *v1alpha1.CanaryRun, subject string, rev revocation.Revoker) revocation.Canary {
	return revocation.Canary{DocumentID: run.Status.DocumentID, Subject: subject, Group: run.Spec.Revocation.Group, Credential: rev}
}

// revokerOf is a persona's revoker as the strategy's interface: nil stays
// nil (a nil pointer in an interface would not).
func revokerOf(c *target.CredentialRevoker) revocation.Revoker {
	if c == nil {
		return nil
	}
	return c
}

// persistNow reports whether probing changed a surface measurement in a
// way a restarted operator could not observe again, so status must hold it
// before anything acts on it:
//   - exclusion confirmed or undone;
//   - a reappearance (a replica or cache served the revoked token again);
//   - the last valid reply flipped between Present and Absent: the first
//     negative of a streak fixes the lower bound (the last positive before
//     it), and a restart that then finds only probe errors must know what
//     was seen last;
//   - the first sighting after the revocation, without which the lower
//     bound would be 0;
//   - a content-freshness run's first sighting of the new content, which
//     fixes the new content's upper bound.
//
// Probe counts and a later sighting of a token that is still visible are
// not among them: losing them to a restart only widens the interval, so
// they wait for the next checkpoint.
func persistNow(persisted, cur []v1alpha1.SurfaceMeasurement) bool {
	if len(persisted) != len(cur) {
		return true
	}
	for i := range cur {
		old, m := &persisted[i], &cur[i]
		if old.Surface != m.Surface || old.Excluded != m.Excluded || old.Reappearances != m.Reappearances ||
			old.LastReply != m.LastReply || (old.LastPositiveStart == nil) != (m.LastPositiveStart == nil) ||
			newContentSeen(old) != newContentSeen(m) {
			return true
		}
	}
	return false
}
