package measure

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// Content-freshness measurement (revocation method UpdateContent). The run
// replaces the canary document's body with a second payload and every probe
// after that reports two things per surface: whether the old payload is
// still served and whether the new one is. The old payload's disappearance
// is measured exactly like an exclusion (the SurfaceMeasurement fields); the
// new payload's appearance is its mirror image, interval-censored the same
// way: it appeared after the start of the last probe that did not show it
// and no later than the end of the first probe that did.
//
// The old payload served after the new one was seen is a reappearance, like
// revoked content coming back: some replica or cache still holds the old
// version while another already serves the new one.

// RecordContent applies one content probe, observed between start and end,
// to m: old is what it saw of the old payload, fresh of the new one.
func RecordContent(m *v1alpha1.SurfaceMeasurement, old, fresh Outcome, start, end time.Time, confirmations int32) {
	if m.NewContent == nil {
		m.NewContent = &v1alpha1.ContentMeasurement{}
	}
	recordNew(m.NewContent, fresh, start, end)
	// Record counts a sighting after a negative itself; one after the new
	// content was seen, with no negative in between, is counted here.
	staleAfterNew := old == Present && m.NewContent.Visible && m.NegativeStreak == 0 && m.FirstNegativeEnd == nil
	Record(m, old, start, end, confirmations)
	if staleAfterNew {
		m.Reappearances++
	}
}

func recordNew(c *v1alpha1.ContentMeasurement, o Outcome, start, end time.Time) {
	switch o {
	case Present:
		c.Probes.Positive++
		if !c.Visible {
			c.Visible = true
			c.FirstSeenEnd = CeilMicro(end)
		}
	case Absent:
		c.Probes.Negative++
		if c.Visible {
			return
		}
		if s := FloorMicro(start); c.LastUnseenStart == nil || s.After(c.LastUnseenStart.Time) {
			c.LastUnseenStart = s
		}
	default:
		// Never an absence, never a sighting.
		c.Probes.Errors++
	}
}

// ContentState classifies the new content of one surface.
type ContentState int

const (
	// ContentSeen: a probe showed the new content.
	ContentSeen ContentState = iota
	// ContentNotSeen: valid replies came back, none showed the new content.
	ContentNotSeen
	// ContentUnknown: no probe got a valid reply about the new content.
	ContentUnknown
)

// ClassifyContent reports the new content's state on a surface.
func ClassifyContent(c *v1alpha1.ContentMeasurement) ContentState {
	switch {
	case c == nil:
		return ContentUnknown
	case c.Visible:
		return ContentSeen
	case c.LastUnseenStart != nil:
		return ContentNotSeen
	default:
		return ContentUnknown
	}
}

// FinalizeContent sets the new content's bounds when the wait ends. Seen:
// both bounds. Not seen: right-censored at the start of the last probe that
// did not show it (what was observed, not the timeout). Unknown: no bounds.
func FinalizeContent(m *v1alpha1.SurfaceMeasurement, rev Revocation) {
	c := m.NewContent
	if c == nil {
		return
	}
	switch ClassifyContent(c) {
	case ContentSeen:
		if c.FirstSeenEnd == nil || c.FirstSeenEnd.Time.Before(rev.Acknowledged) {
			// Every probe after the update starts after its acknowledgement.
			c.Bounds = nil
			return
		}
		c.Bounds = &v1alpha1.ExclusionBounds{
			Lower: &metav1.Duration{Duration: unseenLower(c, rev)},
			Upper: &metav1.Duration{Duration: c.FirstSeenEnd.Sub(rev.Requested)},
		}
	case ContentNotSeen:
		c.Bounds = &v1alpha1.ExclusionBounds{Lower: &metav1.Duration{Duration: unseenLower(c, rev)}}
	default:
		c.Bounds = nil
	}
}

// unseenLower is lastUnseenStart − revokeAcknowledged, floored at 0.
func unseenLower(c *v1alpha1.ContentMeasurement, rev Revocation) time.Duration {
	if c.LastUnseenStart == nil {
		return 0
	}
	return nonNegative(c.LastUnseenStart.Sub(rev.Acknowledged))
}

// Settled reports whether a surface needs no more probes: exclusion is
// confirmed and, for a content update, the new content was seen.
func Settled(m *v1alpha1.SurfaceMeasurement) bool {
	return m.Excluded && (m.NewContent == nil || m.NewContent.Visible)
}

// AllSettled reports whether every surface is settled.
func AllSettled(ms []v1alpha1.SurfaceMeasurement) bool {
	if len(ms) == 0 {
		return false
	}
	for i := range ms {
		if !Settled(&ms[i]) {
			return false
		}
	}
	return true
}

// Freshness is a finalized surface's time until it served only the new
// content: the later of the new content appearing and the old going. The
// later of two interval-censored times lies between the larger lower bound
// and the larger upper bound; without both upper bounds it is right-censored
// at the larger lower bound. Nil when either side has no bounds.
func Freshness(m *v1alpha1.SurfaceMeasurement) *v1alpha1.ExclusionBounds {
	if m.NewContent == nil {
		return nil
	}
	return Later(m.Bounds, m.NewContent.Bounds)
}

// Later is the interval of the later of several interval-censored times;
// nil when any of them has no bounds at all.
func Later(bs ...*v1alpha1.ExclusionBounds) *v1alpha1.ExclusionBounds {
	if len(bs) == 0 {
		return nil
	}
	var lower, upper time.Duration
	censored := false
	for _, b := range bs {
		if b == nil || (b.Lower == nil && b.Upper == nil) {
			return nil
		}
		if b.Lower != nil {
			lower = max(lower, b.Lower.Duration)
		}
		if b.Upper == nil {
			censored = true
		} else {
			upper = max(upper, b.Upper.Duration)
		}
	}
	out := &v1alpha1.ExclusionBounds{Lower: &metav1.Duration{Duration: lower}}
	if !censored {
		out.Upper = &metav1.Duration{Duration: upper}
	}
	return out
}

// ContentFreshnessSLO is the objective an UpdateContent run's surface is
// judged by: the corpus's freshness.contentFreshnessSLO, else its
// deprecated freshness.visibilitySLO, else the surface's exclusion SLO
// (SurfaceSLO). source says which field decided.
func ContentFreshnessSLO(spec *v1alpha1.CanarySpec, corpus *v1alpha1.Corpus, s v1alpha1.Surface) (slo time.Duration, source string) {
	if corpus != nil {
		if d := corpus.Spec.Freshness.ContentFreshnessSLO; d != nil {
			return d.Duration, "corpus freshness.contentFreshnessSLO"
		}
		if d := corpus.Spec.Freshness.VisibilitySLO; d != nil {
			return d.Duration, "corpus freshness.visibilitySLO (deprecated name of contentFreshnessSLO)"
		}
	}
	slo, source = SurfaceSLO(spec, corpus, s)
	return slo, source + ", no contentFreshnessSLO set"
}

// JudgedSLO is the objective a run of spec is judged by on surface s: the
// content-freshness SLO for an UpdateContent run, else the exclusion SLO
// (SurfaceSLO). The controllers, the collector, the kubectl plugin and the
// report all use this one rule.
func JudgedSLO(spec *v1alpha1.CanarySpec, corpus *v1alpha1.Corpus, s v1alpha1.Surface) (time.Duration, string) {
	if spec.Revocation.Method == v1alpha1.RevokeUpdateContent {
		return ContentFreshnessSLO(spec, corpus, s)
	}
	return SurfaceSLO(spec, corpus, s)
}

// contentVerdict decides an UpdateContent run once isolation, setup and
// clock have been checked (see Verdict). The order mirrors Verdict's: old
// content still served at the timeout, then what errors or time left
// open, then the SLO against the surface's freshness (the later of the new
// content appearing and the old going).
func contentVerdict(o RunOutcome) (v1alpha1.Verdict, string) {
	if s, ok := firstInState(o.Surfaces, o.Revocation, StillVisible); ok {
		return v1alpha1.VerdictNotExcluded,
			fmt.Sprintf("the %s surface still served the old content at the exclusion timeout", s)
	}
	if len(o.Surfaces) == 0 {
		return v1alpha1.VerdictInconclusive, "no surface was measured after the content update"
	}
	if s, ok := firstInState(o.Surfaces, o.Revocation, Undetermined); ok {
		return v1alpha1.VerdictInconclusive,
			fmt.Sprintf("probe errors prevented confirming the old content was gone on the %s surface", s)
	}
	for i := range o.Surfaces {
		m := &o.Surfaces[i]
		switch ClassifyContent(m.NewContent) {
		case ContentUnknown:
			return v1alpha1.VerdictInconclusive,
				fmt.Sprintf("no probe of the %s surface got a valid reply about the new content", m.Surface)
		case ContentNotSeen:
			if !breached(Freshness(m), o.SLO(m.Surface)) {
				return v1alpha1.VerdictInconclusive,
					fmt.Sprintf("the new content was not seen on the %s surface before the exclusion timeout, which ended within the content-freshness SLO of %s", m.Surface, o.SLO(m.Surface))
			}
		}
	}
	if names := unanswered(o.Controls); len(names) > 0 {
		return v1alpha1.VerdictInconclusive,
			fmt.Sprintf("control persona(s) %s never got a valid reply, so isolation was not tested", strings.Join(names, ", "))
	}
	for i := range o.Surfaces {
		m := &o.Surfaces[i]
		if f := Freshness(m); breached(f, o.SLO(m.Surface)) {
			return v1alpha1.VerdictSLOBreached,
				fmt.Sprintf("the %s surface served only the new content later than the content-freshness SLO of %s", m.Surface, o.SLO(m.Surface))
		}
	}
	return v1alpha1.VerdictSLOMet, "every surface served only the new content within the content-freshness SLO"
}
