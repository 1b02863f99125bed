package measure

import (
	"fmt"
	"strings"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// RunOutcome is what a whole run observed, as input to Verdict.
type RunOutcome struct {
	// Surfaces are the finalized measurements (see Finalize).
	Surfaces []v1alpha1.SurfaceMeasurement
	// IsolationViolations counts control-persona sightings.
	IsolationViolations int32
	// SetupFailed is set when the token never became visible or the source
	// rejected a step.
	SetupFailed bool
	// SLO returns the objective a surface is judged by.
	SLO func(v1alpha1.Surface) time.Duration
	// Revocation is when the revocation was requested and acknowledged.
	Revocation Revocation
	// Controls are the control personas' probe counts per surface; one that
	// never got a valid reply on a surface never tested isolation there.
	Controls []v1alpha1.ControlProbeCounts
	// Content marks a content-freshness run (UpdateContent): the surfaces
	// carry the new content's measurement and SLO returns the
	// content-freshness SLO.
	Content bool
	// InFlight is the streams read across the revocation (InFlight
	// surface), judged by SLO(SurfaceInFlight); nil when not measured.
	InFlight *v1alpha1.InFlightMeasurement
}

// Verdict decides a run. The order is fixed: an isolation violation
// outranks everything, because it is a leak regardless of timing; then a
// failed setup (there is no measurement); then a token still visible; then
// a measurement errors left open; only a complete measurement is judged
// against the SLO. The message is one sentence without secrets.
func Verdict(o RunOutcome) (v1alpha1.Verdict, string) {
	if o.IsolationViolations > 0 {
		return v1alpha1.VerdictIsolationViolation,
			fmt.Sprintf("a control persona saw the canary token in %d probe(s)", o.IsolationViolations)
	}
	if o.SetupFailed {
		return v1alpha1.VerdictSetupFailed, "the canary could not be set up"
	}
	if s, ok := firstInState(o.Surfaces, o.Revocation, ClockStepped); ok {
		return v1alpha1.VerdictInconclusive,
			fmt.Sprintf("the %s surface's timestamps are out of order (the clock stepped back); no bound can be trusted", s)
	}
	if o.Content {
		return contentVerdict(o)
	}
	if s, ok := firstInState(o.Surfaces, o.Revocation, StillVisible); ok {
		return v1alpha1.VerdictNotExcluded,
			fmt.Sprintf("the %s surface still served the revoked token at the exclusion timeout", s)
	}
	if len(o.Surfaces) == 0 {
		return v1alpha1.VerdictInconclusive, "no surface was measured after the revocation"
	}
	if m, ok := erredAfterSighting(o.Surfaces, o.Revocation); ok {
		return v1alpha1.VerdictInconclusive,
			fmt.Sprintf("the %s surface served the revoked token until %s after the revocation; only probe errors followed until the exclusion timeout, so whether it still served it is unknown",
				m.Surface, lowerBound(m, o.Revocation).Round(time.Millisecond))
	}
	if s, ok := firstInState(o.Surfaces, o.Revocation, Undetermined); ok {
		return v1alpha1.VerdictInconclusive,
			fmt.Sprintf("probe errors prevented confirming exclusion on the %s surface", s)
	}
	if names := unanswered(o.Controls); len(names) > 0 {
		return v1alpha1.VerdictInconclusive,
			fmt.Sprintf("control persona(s) %s never got a valid reply, so isolation was not tested", strings.Join(names, ", "))
	}
	// In-flight streams rank like a surface: what they left open before
	// any SLO judgement, their breach beside the others'.
	var inFlight v1alpha1.Verdict
	var inFlightMsg string
	if o.InFlight != nil {
		inFlight, inFlightMsg = InFlightVerdict(o.InFlight, o.SLO(v1alpha1.SurfaceInFlight))
		if inFlight == v1alpha1.VerdictInconclusive {
			return inFlight, inFlightMsg
		}
	}
	for i := range o.Surfaces {
		m := &o.Surfaces[i]
		if breached(m.Bounds, o.SLO(m.Surface)) {
			return v1alpha1.VerdictSLOBreached,
				fmt.Sprintf("exclusion on the %s surface exceeded the SLO of %s", m.Surface, o.SLO(m.Surface))
		}
	}
	if inFlight == v1alpha1.VerdictSLOBreached {
		return inFlight, inFlightMsg
	}
	if o.InFlight != nil {
		return v1alpha1.VerdictSLOMet, "exclusion was confirmed within the SLO on every surface, and streams in flight stopped delivering the canary within the post-revocation delivery SLO"
	}
	return v1alpha1.VerdictSLOMet, "exclusion was confirmed within the SLO on every surface"
}

// breached reports an SLO breach: the upper bound exceeds the SLO, or the
// lower bound does (a certain breach, also when no upper bound exists).
func breached(b *v1alpha1.ExclusionBounds, slo time.Duration) bool {
	if b == nil {
		return false
	}
	if b.Lower != nil && b.Lower.Duration > slo {
		return true
	}
	return b.Upper != nil && b.Upper.Duration > slo
}

// unanswered names the control personas (and surface) without a single
// valid reply.
func unanswered(cs []v1alpha1.ControlProbeCounts) []string {
	var out []string
	for _, c := range cs {
		if c.Answered == 0 {
			out = append(out, fmt.Sprintf("%s (%s)", c.Persona, c.Surface))
		}
	}
	return out
}

func firstInState(ms []v1alpha1.SurfaceMeasurement, rev Revocation, s State) (v1alpha1.Surface, bool) {
	for i := range ms {
		if Classify(&ms[i], rev) == s {
			return ms[i].Surface, true
		}
	}
	return "", false
}

// erredAfterSighting is the first undetermined surface whose probes failed
// after its last sighting.
func erredAfterSighting(ms []v1alpha1.SurfaceMeasurement, rev Revocation) (*v1alpha1.SurfaceMeasurement, bool) {
	for i := range ms {
		if Classify(&ms[i], rev) == Undetermined && ErrorsAfterSighting(&ms[i]) {
			return &ms[i], true
		}
	}
	return nil, false
}

// Amend revises a verdict already decided by the isolation violations
// counted since (a control sighting in a probe loop's last rounds): a
// control persona's sighting outranks every other verdict. The run's
// steps decide with Verdict and amend with this, and nowhere else.
func Amend(verdict v1alpha1.Verdict, message string, violations int32) (v1alpha1.Verdict, string) {
	if violations > 0 && verdict != v1alpha1.VerdictIsolationViolation {
		return Verdict(RunOutcome{IsolationViolations: violations})
	}
	return verdict, message
}
