package probe

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/measure"
)

// DefaultPrecision is the CRD default of spec.probing.precision ("10%").
const DefaultPrecision = 0.1

// edgeMargin is added to the expected probe duration when a probe must end
// before a deadline, so a probe a little slower than the last still does.
const edgeMargin = 10 * time.Millisecond

// Schedule says how a loop spaces its rounds beyond the fixed interval. The
// zero value is Fixed: a round every jittered interval, as always.
type Schedule struct {
	// Adaptive spaces rounds geometrically; false is Fixed.
	Adaptive bool
	// Precision is the fraction of the time elapsed in the stage a gap aims
	// for (0.1 for "10%"): the width of the bound the gap can produce.
	Precision float64
	// MaxInterval caps a gap.
	MaxInterval time.Duration
	// Start is when the stage began: the share request (visibility) or the
	// revocation request (exclusion), the instants the bounds count from.
	Start time.Time
	// Deadlines are instants a probe should end just before, so a verdict
	// compared against them is decided by an observation: each surface's
	// SLO deadline and the stage timeout.
	Deadlines []time.Time
}

// ScheduleInput is everything NextDue looks at after a round.
type ScheduleInput struct {
	Schedule
	// Interval is the shortest gap, and the spacing of confirmations.
	Interval time.Duration
	// Due is when the round just finished was due.
	Due time.Time
	// Outcome summarises the persona's probes of the round on the surfaces
	// still being measured: Error if any failed, else Absent if any is in an
	// unconfirmed negative streak, else Present.
	Outcome measure.Outcome
	// Streak is the longest unconfirmed negative streak after the round.
	Streak int32
	// ProbeDuration is how long the round's slowest probe took; the next
	// round is expected to take about as long.
	ProbeDuration time.Duration
	// Jitter, in [0, 1), spreads rounds of many runs: a fixed gap moves by
	// up to ±jitterFraction, a geometric gap only shrinks by up to it.
	Jitter float64
}

// NextDue is when the next round is due.
//
// Fixed: one jittered interval after the last round was due.
//
// Adaptive: a gap of about Precision × the time elapsed since Start, minus
// the expected probe duration (the bound's width is the gap plus one
// probe), never below Interval and never above MaxInterval. Exclusion is
// then bracketed to within about Precision of its lag, at a cost that
// grows with the logarithm of the lag. Three things keep Interval spacing:
// a negative streak being confirmed (a replica that flaps back is still
// caught between confirmations), and a failed probe (it observed nothing,
// so the gap it was to close is still open). A positive after a negative
// resets the streak and with it the geometric spacing. A round is moved
// earlier so it ends just before the next deadline: a negative probe there
// proves the SLO was met, a positive one that it was not.
func NextDue(in ScheduleInput) time.Time {
	fixed := in.Due.Add(jitterFixed(in.Interval, in.Jitter))
	if !in.Adaptive || in.Streak > 0 || in.Outcome == measure.Error {
		return fixed
	}
	return in.towardDeadline(in.Due.Add(in.geometricGap()))
}

// jitterFixed moves interval by up to ±jitterFraction.
func jitterFixed(interval time.Duration, jitter float64) time.Duration {
	return interval + time.Duration(float64(interval)*jitterFraction*(2*jitter-1))
}

func (in ScheduleInput) geometricGap() time.Duration {
	elapsed := in.Due.Sub(in.Start)
	gap := time.Duration(in.Precision*float64(elapsed)) - in.ProbeDuration
	gap -= time.Duration(float64(gap) * jitterFraction * in.Jitter)
	return min(max(gap, in.Interval), max(in.MaxInterval, in.Interval))
}

// towardDeadline places next relative to the first deadline still ahead. A
// round due past the deadline's latest start is pulled back onto it. A round
// due so shortly before it that the following one could not land on it
// without a gap below Interval is pulled back by one Interval, so the one
// after lands on it.
func (in ScheduleInput) towardDeadline(next time.Time) time.Time {
	edge, ok := in.nextEdge()
	if !ok {
		return next
	}
	earliest := in.Due.Add(in.Interval)
	switch {
	case !next.Before(edge):
		// Too close to reach without a gap below Interval: missed, and the
		// earliest round is the nearest observation to it there is.
		return laterOf(edge, earliest)
	case edge.Sub(next) >= in.Interval:
		return next
	case !edge.Add(-in.Interval).Before(earliest):
		return edge.Add(-in.Interval)
	case edge.Sub(in.Due) <= max(in.MaxInterval, in.Interval):
		return edge
	default:
		return next
	}
}

// nextEdge is the latest start of a probe that must end before the first
// deadline still ahead of the last round.
func (in ScheduleInput) nextEdge() (time.Time, bool) {
	lead := 2*in.ProbeDuration + edgeMargin
	deadlines := slices.Clone(in.Deadlines)
	slices.SortFunc(deadlines, time.Time.Compare)
	for _, d := range deadlines {
		if e := d.Add(-lead); e.After(in.Due) {
			return e, true
		}
	}
	return time.Time{}, false
}

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// ParsePrecision reads spec.probing.precision, a percentage such as "10%"
// or "2.5%", as a fraction. Empty is the default.
func ParsePrecision(s string) (float64, error) {
	if s == "" {
		return DefaultPrecision, nil
	}
	num, ok := strings.CutSuffix(s, "%")
	v, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || v <= 0 || v > 100 {
		return 0, fmt.Errorf("precision %q must be a percentage above 0%% and at most 100%%, such as \"10%%\"", s)
	}
	return v / 100, nil
}

// roundSummary is what the schedule needs to know about a finished round.
type roundSummary struct {
	outcome measure.Outcome
	streak  int32
	slowest time.Duration
}

// summarize condenses a round for NextDue. Only surfaces still being
// measured count: a surface whose exclusion is confirmed (or, while waiting
// for visibility, that was seen) has nothing left for a probe to narrow.
// Control personas' probes count towards the duration only, except while
// watching a sentinel, which only they probe.
func (s *State) summarize(results []result) roundSummary {
	s.mu.Lock()
	defer s.mu.Unlock()
	settled := map[v1alpha1.Surface]bool{}
	sum := roundSummary{outcome: measure.Present}
	for _, m := range s.surfaces {
		// A content-freshness surface is settled only once the new content
		// was seen too (measure.Settled); otherwise it equals Excluded.
		if measure.Settled(&m) {
			settled[m.Surface] = true
		} else if m.NegativeStreak > sum.streak {
			sum.streak = m.NegativeStreak
		}
	}
	if s.stage == StageVisibility {
		for surface, seen := range s.seen {
			settled[surface] = seen
		}
	}
	if sum.streak > 0 {
		sum.outcome = measure.Absent
	}
	for _, r := range results {
		sum.slowest = max(sum.slowest, r.end.Sub(r.start))
		if r.control == "" && r.outcome == measure.Error && !settled[r.surface] {
			sum.outcome = measure.Error
		}
		// A sentinel is watched by its controls alone: a failed control
		// probe left its gap open, so the next one comes at Interval.
		if s.stage == StageWatch && r.outcome == measure.Error {
			sum.outcome = measure.Error
		}
	}
	return sum
}
