package probe

import (
	"sync"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/measure"
)

// Stage is what a probe loop is waiting for.
type Stage int

const (
	// StageVisibility waits until the persona sees the token on every surface.
	StageVisibility Stage = iota + 1
	// StageExclusion measures exclusion after the revocation.
	StageExclusion
	// StageWatch watches a sentinel: only the control personas probe, and
	// each sighting is kept with its carriers (see Sightings).
	StageWatch
)

// State accumulates one run's probe results in memory. The probe loop
// writes it; the controller reads a Snapshot and persists it.
type State struct {
	mu              sync.Mutex
	stage           Stage
	confirmations   int32
	seen            map[v1alpha1.Surface]bool
	firstVisibleEnd time.Time
	surfaces        []v1alpha1.SurfaceMeasurement
	violations      int32
	rounds          int64
	// controls counts each control persona's probe outcomes, in plan order.
	controls []v1alpha1.ControlProbeCounts
	// replies counts the persona's valid replies per surface and
	// visibilityErrors its failed probes, while waiting for visibility.
	replies          map[v1alpha1.Surface]int64
	visibilityErrors int64
	// planned are the plan's surfaces, in order.
	planned []v1alpha1.Surface
	// sightings (watch stage) are the first control sightings and
	// sightingTotal counts all of them; target holds the secrets a carrier
	// ID is checked against before it is kept.
	sightings     []v1alpha1.SentinelSighting
	sightingTotal int32
	target        Target
	keepEvidence  bool
}

// Snapshot is a copy of a State at one moment.
type Snapshot struct {
	Stage Stage
	// AllVisible is true once every surface has shown the token (visibility stage).
	AllVisible bool
	// FirstVisibleEnd is the end of the first probe that saw the token; zero before.
	FirstVisibleEnd time.Time
	// Surfaces are the exclusion measurements (exclusion stage), in plan order.
	Surfaces []v1alpha1.SurfaceMeasurement
	// IsolationViolations counts control sightings, including those resumed from status.
	IsolationViolations int32
	// Controls are each control persona's probe counts, including those
	// resumed from status.
	Controls []v1alpha1.ControlProbeCounts
	// Rounds counts completed probe rounds since the loop started.
	Rounds int64
	// Replies counts the persona's valid replies per surface and
	// VisibilityErrors its failed probes (visibility stage).
	Replies          map[v1alpha1.Surface]int64
	VisibilityErrors int64
	// Sightings are the first control sightings of a sentinel with their
	// carriers, and SightingTotal counts all of them, including those
	// resumed from status (watch stage).
	Sightings     []v1alpha1.SentinelSighting
	SightingTotal int32
	surfaces      []v1alpha1.Surface
}

// SurfaceWithoutReply is the first surface on which no visibility probe of
// the persona got a valid reply: there, "not seen" means "not known".
func (s Snapshot) SurfaceWithoutReply() (v1alpha1.Surface, bool) {
	if s.Stage != StageVisibility {
		return "", false
	}
	for _, surface := range s.surfaces {
		if s.Replies[surface] == 0 {
			return surface, true
		}
	}
	return "", false
}

// newState seeds a state from the plan. For the exclusion stage the
// measurements come from status (after a restart) and each is resumed, so
// an unconfirmed streak starts again.
func newState(p Plan) *State {
	s := &State{stage: p.Stage, confirmations: p.Confirmations, seen: map[v1alpha1.Surface]bool{},
		violations: p.ResumeViolations, replies: map[v1alpha1.Surface]int64{}, planned: p.Surfaces,
		target: p.Target, sightingTotal: p.ResumeSightingTotal, keepEvidence: p.Sentinel || p.Stage == StageWatch}
	for _, r := range p.ResumeSightings {
		s.sightings = append(s.sightings, *r.DeepCopy())
	}
	for _, c := range p.Controls {
		for _, surface := range p.Surfaces {
			counts := v1alpha1.ControlProbeCounts{Persona: c.Name, Surface: surface}
			for _, r := range p.ResumeControls {
				if r.Persona == c.Name && r.Surface == surface {
					counts = r
				}
			}
			s.controls = append(s.controls, counts)
		}
	}
	if p.Stage != StageExclusion {
		return s
	}
	for _, surface := range p.Surfaces {
		m := v1alpha1.SurfaceMeasurement{Surface: surface}
		for _, r := range p.Resume {
			if r.Surface == surface {
				m = *r.DeepCopy()
			}
		}
		measure.Resume(&m)
		s.surfaces = append(s.surfaces, m)
	}
	return s
}

// Snapshot returns a deep copy.
func (s *State) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := Snapshot{Stage: s.stage, FirstVisibleEnd: s.firstVisibleEnd, IsolationViolations: s.violations, Rounds: s.rounds,
		Controls:         append([]v1alpha1.ControlProbeCounts(nil), s.controls...),
		Replies:          make(map[v1alpha1.Surface]int64, len(s.replies)),
		VisibilityErrors: s.visibilityErrors, surfaces: s.planned, SightingTotal: s.sightingTotal}
	for i := range s.sightings {
		out.Sightings = append(out.Sightings, *s.sightings[i].DeepCopy())
	}
	for k, v := range s.replies {
		out.Replies[k] = v
	}
	out.AllVisible = s.stage == StageVisibility && len(s.seen) > 0 && s.allSeen()
	for i := range s.surfaces {
		out.Surfaces = append(out.Surfaces, *s.surfaces[i].DeepCopy())
	}
	return out
}

func (s *State) allSeen() bool {
	for _, v := range s.seen {
		if !v {
			return false
		}
	}
	return true
}

// result is one finished probe.
type result struct {
	surface v1alpha1.Surface
	// control names the control persona; "" for the probed persona.
	control    string
	outcome    measure.Outcome
	start, end time.Time
	// content marks a content-freshness probe: outcome is what it saw of
	// the old payload, fresh of the new one.
	content bool
	fresh   measure.Outcome
	// carriers name what showed the canary in a sighting (Evidence).
	carriers []string
}

// change says what applying a round changed, for notifications and metrics.
type change struct {
	// transition is true when the controller should persist promptly:
	// all surfaces became visible, exclusion was confirmed or undone, the
	// last valid reply flipped, or a control persona saw the token.
	transition    bool
	violations    int
	reappearances []v1alpha1.Surface
	// sightings are this round's control sightings (watch stage).
	sightings []v1alpha1.SentinelSighting
}

// apply folds one round's results into the state. Results of one round
// hold at most one persona probe per surface, and rounds are sequential,
// so per-surface order is the probe order.
func (s *State) apply(surfaces []v1alpha1.Surface, results []result) change {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ch change
	for _, r := range results {
		if r.control != "" {
			s.countControl(r)
			if r.outcome == measure.Present {
				s.violations++
				ch.violations++
				ch.transition = true
				if s.keepEvidence {
					ch.sightings = append(ch.sightings, s.keepSighting(r))
				}
			}
			continue
		}
		if s.stage == StageVisibility {
			ch.transition = s.applyVisibility(surfaces, r) || ch.transition
			continue
		}
		ch = s.applyExclusion(r, ch)
	}
	s.rounds++
	return ch
}

// countControl counts a control probe: only a valid reply (with or without
// the canary) shows the control persona could be tested at all.
func (s *State) countControl(r result) {
	for i := range s.controls {
		if s.controls[i].Persona != r.control || s.controls[i].Surface != r.surface {
			continue
		}
		if r.outcome == measure.Error {
			s.controls[i].Errors++
		} else {
			s.controls[i].Answered++
		}
	}
}

func (s *State) applyVisibility(surfaces []v1alpha1.Surface, r result) bool {
	if len(s.seen) == 0 {
		for _, surface := range surfaces {
			s.seen[surface] = false
		}
	}
	if r.outcome == measure.Error {
		s.visibilityErrors++
		return false
	}
	s.replies[r.surface]++
	if r.outcome != measure.Present {
		return false
	}
	if s.firstVisibleEnd.IsZero() || r.end.Before(s.firstVisibleEnd) {
		s.firstVisibleEnd = r.end
	}
	before := s.allSeen()
	s.seen[r.surface] = true
	return !before && s.allSeen()
}

func (s *State) applyExclusion(r result, ch change) change {
	for i := range s.surfaces {
		m := &s.surfaces[i]
		if m.Surface != r.surface {
			continue
		}
		excluded, reappear, reply := m.Excluded, m.Reappearances, m.LastReply
		seenNew := m.NewContent != nil && m.NewContent.Visible
		if r.content {
			measure.RecordContent(m, r.outcome, r.fresh, r.start, r.end, s.confirmations)
		} else {
			measure.Record(m, r.outcome, r.start, r.end, s.confirmations)
		}
		if m.NewContent != nil && m.NewContent.Visible != seenNew {
			// The new content's first sighting cannot be observed again.
			ch.transition = true
		}
		if m.Reappearances > reappear {
			ch.reappearances = append(ch.reappearances, m.Surface)
		}
		// A flipped reply (the first sighting, the first negative of a
		// streak, a reappearance) is what the controller persists at once.
		if m.Excluded != excluded || m.Reappearances > reappear || m.LastReply != reply {
			ch.transition = true
		}
	}
	return ch
}
