// Package measure holds the pure measurement rules of a canary run: how one
// probe outcome updates a surface's exclusion measurement, how the
// interval-censored bounds are derived from persisted timestamps, and how a
// run's verdict follows from its surfaces. It has no I/O and no clock of its
// own, so every rule is table-tested.
//
// The rules a reader must be able to rely on:
//   - An error is never an absence. It is counted and otherwise ignored: it
//     neither extends nor breaks a negative streak, so exclusion is only ever
//     confirmed by the configured number of real negative probes.
//   - A positive probe after a negative one resets the streak and counts a
//     reappearance, also after exclusion had been confirmed.
//   - Time-to-exclusion is an interval: lower = lastPositiveStart −
//     revokeAcknowledged (floor 0), upper = firstNegativeEnd − revokeRequested.
package measure

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// Outcome is what one probe established.
type Outcome int

const (
	// Error: the probe failed, timed out or got a reply it could not parse.
	// It says nothing about visibility.
	Error Outcome = iota
	// Present: the probe saw the token.
	Present
	// Absent: the probe got a valid reply without the token.
	Absent
)

// String names the outcome; it is also the metric label value.
func (o Outcome) String() string {
	switch o {
	case Present:
		return "present"
	case Absent:
		return "absent"
	default:
		return "error"
	}
}

// Timestamps are held at the precision status stores them (microseconds,
// metav1.MicroTime) from the moment they are captured, rounded in the
// direction that can only widen an interval derived from them: the start of
// an observation or a request down, the end of an observation or an
// acknowledgement up. Bounds computed from live probe state are therefore
// exactly the bounds rebuilt from status after a restart.

// FloorMicro is t rounded down to the microsecond, without a monotonic reading.
func FloorMicro(t time.Time) *metav1.MicroTime {
	return &metav1.MicroTime{Time: t.Truncate(time.Microsecond)}
}

// CeilMicro is t rounded up to the microsecond, without a monotonic reading.
func CeilMicro(t time.Time) *metav1.MicroTime {
	r := t.Truncate(time.Microsecond)
	if r.Before(t) {
		r = r.Add(time.Microsecond)
	}
	return &metav1.MicroTime{Time: r}
}

// Revocation holds the run's revocation timestamps the bounds are measured from.
type Revocation struct {
	// Requested is when the revocation request was sent.
	Requested time.Time
	// Acknowledged is when the source acknowledged it.
	Acknowledged time.Time
}

// Record applies one probe outcome, observed between start and end, to m.
// confirmations is how many consecutive real negatives establish exclusion.
// Record does not touch m.Bounds; call Bounds once the revocation
// timestamps are known.
func Record(m *v1alpha1.SurfaceMeasurement, o Outcome, start, end time.Time, confirmations int32) {
	switch o {
	case Present:
		recordPresent(m, start)
	case Absent:
		recordAbsent(m, end, confirmations)
	default:
		// Never an absence nor a presence: counted, and the streak is left
		// exactly as it was; what the last valid reply saw is no longer
		// known to hold.
		m.Probes.Errors++
		m.ErrorsSinceReply++
	}
}

// Values of SurfaceMeasurement.LastReply.
const (
	replyPresent = "Present"
	replyAbsent  = "Absent"
)

func recordPresent(m *v1alpha1.SurfaceMeasurement, start time.Time) {
	m.Probes.Positive++
	m.LastReply = replyPresent
	m.ErrorsSinceReply = 0
	if m.NegativeStreak > 0 || m.FirstNegativeEnd != nil {
		// Content was seen absent and is back: a lagging replica or cache.
		m.Reappearances++
	}
	m.NegativeStreak = 0
	m.FirstNegativeEnd = nil
	m.Excluded = false
	m.Bounds = nil
	if s := FloorMicro(start); m.LastPositiveStart == nil || s.After(m.LastPositiveStart.Time) {
		m.LastPositiveStart = s
	}
}

func recordAbsent(m *v1alpha1.SurfaceMeasurement, end time.Time, confirmations int32) {
	m.Probes.Negative++
	m.LastReply = replyAbsent
	m.ErrorsSinceReply = 0
	if m.Excluded {
		// Already confirmed; further negatives only count.
		return
	}
	if m.NegativeStreak == 0 {
		m.FirstNegativeEnd = CeilMicro(end)
	}
	m.NegativeStreak++
	if m.NegativeStreak >= max(confirmations, 1) {
		m.Excluded = true
	}
}

// Resume prepares a measurement read back from status for more probes after
// an operator restart. An unconfirmed streak is dropped: probes during the
// downtime might have seen the token, so the streak must start again after
// the restart. That only moves firstNegativeEnd later, widening the upper
// bound, never narrowing it. A confirmed exclusion stays confirmed. LastReply
// is kept: what the last valid reply saw is still true after the restart.
func Resume(m *v1alpha1.SurfaceMeasurement) {
	if m.Excluded {
		return
	}
	m.NegativeStreak = 0
	m.FirstNegativeEnd = nil
}

// Bounds is the interval-censored time-to-exclusion of a confirmed
// exclusion. The lower bound is 0 when no probe after the revocation saw the
// token. It returns nil when exclusion is not confirmed.
func Bounds(m *v1alpha1.SurfaceMeasurement, rev Revocation) *v1alpha1.ExclusionBounds {
	if !m.Excluded || m.FirstNegativeEnd == nil {
		return nil
	}
	if clockStepped(m, rev) {
		return nil
	}
	upper := m.FirstNegativeEnd.Sub(rev.Requested)
	return &v1alpha1.ExclusionBounds{
		Lower: &metav1.Duration{Duration: lowerBound(m, rev)},
		Upper: &metav1.Duration{Duration: upper},
	}
}

// lowerBound is lastPositiveStart − revokeAcknowledged, floored at 0.
func lowerBound(m *v1alpha1.SurfaceMeasurement, rev Revocation) time.Duration {
	if m.LastPositiveStart == nil {
		return 0
	}
	return nonNegative(m.LastPositiveStart.Sub(rev.Acknowledged))
}

// State classifies a surface measurement at the end of the exclusion wait.
type State int

const (
	// Excluded: the required negatives were observed.
	Excluded State = iota
	// StillVisible: the last probe got a valid reply, and it saw the token.
	StillVisible
	// Undetermined: neither; errors (or too little time) left the streak
	// short, or probes failed after the last sighting (see ErrorsAfterSighting).
	Undetermined
	// ClockStepped: the persisted timestamps are out of order (a negative
	// probe ending before the revocation was acknowledged), so the wall clock
	// stepped back; no bound can be trusted.
	ClockStepped
)

// Classify reports a surface's state given the run's revocation times.
func Classify(m *v1alpha1.SurfaceMeasurement, rev Revocation) State {
	switch {
	case clockStepped(m, rev):
		return ClockStepped
	case m.Excluded:
		return Excluded
	case lastReplyPresent(m) && m.ErrorsSinceReply == 0:
		return StillVisible
	default:
		return Undetermined
	}
}

// ErrorsAfterSighting reports a surface whose last valid reply saw the token
// and whose probes all failed since: it was served until that reply, and
// after it nothing is known.
func ErrorsAfterSighting(m *v1alpha1.SurfaceMeasurement) bool {
	return !m.Excluded && lastReplyPresent(m) && m.ErrorsSinceReply > 0
}

// lastReplyPresent reports whether the last valid reply saw the token. For a
// measurement written before LastReply existed, a zero streak after a
// sighting is the best evidence there is.
func lastReplyPresent(m *v1alpha1.SurfaceMeasurement) bool {
	if m.LastReply != "" {
		return m.LastReply == replyPresent
	}
	return m.NegativeStreak == 0 && m.LastPositiveStart != nil
}

// clockStepped reports timestamps that cannot be in this order on a clock
// that only moves forward: the first negative of the streak ending before
// the revocation was acknowledged (every exclusion probe starts after it),
// or a sighting starting before the revocation was requested.
func clockStepped(m *v1alpha1.SurfaceMeasurement, rev Revocation) bool {
	if rev.Acknowledged.IsZero() {
		return false
	}
	if m.FirstNegativeEnd != nil && m.FirstNegativeEnd.Time.Before(rev.Acknowledged) {
		return true
	}
	if c := m.NewContent; c != nil && c.FirstSeenEnd != nil && c.FirstSeenEnd.Time.Before(rev.Acknowledged) {
		return true
	}
	return rev.Acknowledged.Before(rev.Requested)
}

// Finalize sets m.Bounds when the exclusion wait ends at the timeout.
// Excluded surfaces get their interval; a surface still visible is
// right-censored: lower = timeout, no upper. An undetermined surface keeps
// the lower bound it has (last sighting) and has no upper bound.
func Finalize(m *v1alpha1.SurfaceMeasurement, rev Revocation, timeout time.Duration) {
	switch Classify(m, rev) {
	case Excluded:
		m.Bounds = Bounds(m, rev)
	case StillVisible:
		m.Bounds = &v1alpha1.ExclusionBounds{Lower: &metav1.Duration{Duration: timeout}}
	case ClockStepped:
		m.Bounds = nil
	default:
		m.Bounds = &v1alpha1.ExclusionBounds{Lower: &metav1.Duration{Duration: lowerBound(m, rev)}}
	}
}

// AllExcluded reports whether every surface has confirmed exclusion.
func AllExcluded(ms []v1alpha1.SurfaceMeasurement) bool {
	if len(ms) == 0 {
		return false
	}
	for i := range ms {
		if !ms[i].Excluded {
			return false
		}
	}
	return true
}

// LiveExposure is how long a revoked token has been visible as of now:
// now − revokeAcknowledged while exclusion is not confirmed, 0 after.
//
// Only what was observed counts: while the last valid reply showed the token
// it is still exposed now; once a valid reply showed it absent (an
// unconfirmed streak), exposure is what the last sighting proved; probe
// errors alone prove nothing, so a surface never seen after the revocation
// reports 0 (the probe-error metrics say the target is failing).
func LiveExposure(m *v1alpha1.SurfaceMeasurement, acknowledged, now time.Time) time.Duration {
	if m.Excluded || acknowledged.IsZero() {
		return 0
	}
	if lastReplyPresent(m) {
		return nonNegative(now.Sub(acknowledged))
	}
	if m.LastPositiveStart != nil {
		return nonNegative(m.LastPositiveStart.Sub(acknowledged))
	}
	return 0
}

func nonNegative(d time.Duration) time.Duration {
	return max(d, 0)
}
