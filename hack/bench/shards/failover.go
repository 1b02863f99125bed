package main

import (
	"math"
	"slices"
	"sort"
	"time"
)

// probe is one search attributed to a canary ("namespace/name") and the
// replica that sent it.
type probe struct {
	canary, replica string
	start           time.Time
}

// stream is one replica's probes of one canary: the starts of its first
// and last probe.
type stream struct {
	first, last time.Time
	n           int
}

// streams groups probes by canary and replica.
func streams(probes []probe) map[string]map[string]*stream {
	out := map[string]map[string]*stream{}
	for _, p := range probes {
		byReplica := out[p.canary]
		if byReplica == nil {
			byReplica = map[string]*stream{}
			out[p.canary] = byReplica
		}
		s := byReplica[p.replica]
		if s == nil {
			byReplica[p.replica] = &stream{first: p.start, last: p.start, n: 1}
			continue
		}
		if p.start.Before(s.first) {
			s.first = p.start
		}
		if p.start.After(s.last) {
			s.last = p.start
		}
		s.n++
	}
	return out
}

// doubleProbe is a canary two replicas probed in interleaved streams.
type doubleProbe struct {
	canary   string
	replicas [2]string
	// overlap is how long both streams ran at once.
	overlap time.Duration
}

// doubleProbes finds the canaries probed by a replica X after another
// replica Y had started probing them and before Y's last probe of them:
// two streams whose spans [first, last] overlap. A hand-over (one stream
// ends, then the other begins) is not a double probe.
func doubleProbes(probes []probe) []doubleProbe {
	var out []doubleProbe
	for canary, byReplica := range streams(probes) {
		names := make([]string, 0, len(byReplica))
		for r := range byReplica {
			names = append(names, r)
		}
		slices.Sort(names)
	pairs:
		for i, x := range names {
			for _, y := range names[i+1:] {
				a, b := byReplica[x], byReplica[y]
				if a.first.Before(b.last) && b.first.Before(a.last) {
					overlap := minTime(a.last, b.last).Sub(maxTime(a.first, b.first))
					out = append(out, doubleProbe{canary: canary, replicas: [2]string{x, y}, overlap: overlap})
					break pairs
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].canary < out[j].canary })
	return out
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// reprobe is how long the killed replica's canaries went unprobed.
type reprobe struct {
	// canaries is how many the killed replica owned.
	canaries int
	// sinceKill holds, per canary probed again by another replica, the
	// time from the kill to that replica's first probe.
	sinceKill []time.Duration
	// gap is, per canary probed again, the time from the killed replica's
	// last probe of it to the other replica's first.
	gap []time.Duration
	// never are the canaries no other replica probed by the window's end.
	never []string
}

// reprobes measures, for each canary the victim owned at the kill, when
// another replica probed it first after the kill.
func reprobes(probes []probe, victim string, owned []string, kill time.Time) reprobe {
	firstAfter := map[string]time.Time{}
	victimLast := map[string]time.Time{}
	for _, p := range probes {
		if p.replica == victim {
			if p.start.After(victimLast[p.canary]) {
				victimLast[p.canary] = p.start
			}
			continue
		}
		if !p.start.After(kill) {
			continue
		}
		if t, ok := firstAfter[p.canary]; !ok || p.start.Before(t) {
			firstAfter[p.canary] = p.start
		}
	}
	out := reprobe{canaries: len(owned)}
	for _, c := range owned {
		t, ok := firstAfter[c]
		if !ok {
			out.never = append(out.never, c)
			continue
		}
		out.sinceKill = append(out.sinceKill, t.Sub(kill))
		if last, ok := victimLast[c]; ok {
			out.gap = append(out.gap, t.Sub(last))
		}
	}
	slices.Sort(out.sinceKill)
	slices.Sort(out.gap)
	slices.Sort(out.never)
	return out
}

// quantile is the nearest-rank quantile of sorted durations; NaN-like -1
// when there are none, which the report prints as n/a.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return -1
	}
	rank := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(rank, len(sorted)-1))]
}

// runRef is one CanaryRun as the run check compares them.
type runRef struct {
	canary, name, uid string
	// slot is the schedule slot the run fills: its scheduled time, or
	// "run-now" for a run a run-now request made (every benchmark canary
	// asks for exactly one).
	slot string
}

// runCheck compares the runs before the kill with the runs after the window.
type runCheck struct {
	before, after int
	// lost are runs before that no longer exist with the same UID.
	lost []string
	// duplicated are runs after, not there before, for a canary and slot
	// that already had a run before.
	duplicated []string
	// added are runs after, not there before, for a new slot.
	added []string
}

func checkRuns(before, after []runRef) runCheck {
	out := runCheck{before: len(before), after: len(after)}
	afterUID := map[string]bool{}
	for _, r := range after {
		afterUID[r.uid] = true
	}
	beforeUID := map[string]bool{}
	slots := map[[2]string]bool{}
	for _, r := range before {
		beforeUID[r.uid] = true
		slots[[2]string{r.canary, r.slot}] = true
		if !afterUID[r.uid] {
			out.lost = append(out.lost, r.name)
		}
	}
	for _, r := range after {
		if beforeUID[r.uid] {
			continue
		}
		key := [2]string{r.canary, r.slot}
		if slots[key] {
			out.duplicated = append(out.duplicated, r.name)
		} else {
			out.added = append(out.added, r.name)
		}
		slots[key] = true
	}
	slices.Sort(out.lost)
	slices.Sort(out.duplicated)
	slices.Sort(out.added)
	return out
}

// boundState is one moved run's exclusion measurement at a moment.
type boundState struct {
	run   string
	phase string
	// lower is lastPositiveStart − revokeAcknowledged; hasUpper says an
	// upper bound (a confirmed exclusion) exists.
	lower    time.Duration
	hasLower bool
	hasUpper bool
	// knownLag is the time since the revocation was requested, at the
	// moment read: the target never applies it, so the true exclusion
	// time is longer.
	knownLag time.Duration
}

// boundCheck judges the moved runs' measurements after the window against
// those at the kill.
type boundCheck struct {
	runs int
	// notAwaiting left AwaitingExclusion; withUpper claim an exclusion the
	// target never made; beyondLag have a lower bound above the known lag;
	// shrank have a lower bound below the one at the kill; missing have no
	// lower bound or vanished.
	notAwaiting, withUpper, beyondLag, shrank, missing []string
	// grew have a lower bound above the one at the kill: only observable
	// when a status checkpoint fell in the window.
	grew int
}

func checkBounds(atKill, atEnd map[string]boundState) boundCheck {
	out := boundCheck{runs: len(atKill)}
	for name, k := range atKill {
		e, ok := atEnd[name]
		switch {
		case !ok || !e.hasLower:
			out.missing = append(out.missing, name)
			continue
		case e.phase != "AwaitingExclusion":
			out.notAwaiting = append(out.notAwaiting, name)
		}
		if e.hasUpper {
			out.withUpper = append(out.withUpper, name)
		}
		if e.lower > e.knownLag {
			out.beyondLag = append(out.beyondLag, name)
		}
		switch {
		case k.hasLower && e.lower < k.lower:
			out.shrank = append(out.shrank, name)
		case k.hasLower && e.lower > k.lower:
			out.grew++
		}
	}
	for _, l := range [][]string{out.notAwaiting, out.withUpper, out.beyondLag, out.shrank, out.missing} {
		slices.Sort(l)
	}
	return out
}

func (b boundCheck) ok() bool {
	return len(b.notAwaiting)+len(b.withUpper)+len(b.beyondLag)+len(b.shrank)+len(b.missing) == 0
}
