package scoring

import (
	"maps"
	"slices"
)

// gates evaluates the zero-tolerance gates and the configured thresholds,
// each per persona, naming every persona and stratum that failed.
func gates(g groups, opts Options) []Gate {
	out := []Gate{
		perPersonaCount(g, GateNoForbidden, opts.MaxDisclosures, FigureAffectedAnswers),
		perPersonaCount(g, GateCitationValidity, opts.MaxInvalidCitations, FigureInvalidCitationCases),
		// An answer where policy requires a refusal is a policy breach even
		// when it leaks nothing forbidden, so it is zero tolerance too.
		perPersonaCount(g, GateNoFailedToAbstain, 0, FigureFailedToAbstain),
	}
	thresholds := []struct {
		name  string
		limit *float64
		floor bool
		value func(Stats) Ratio
	}{
		{GateMinRecall, opts.MinRecall, true, func(s Stats) Ratio { return s.RecallAtK }},
		{GateMinMRR, opts.MinMRR, true, func(s Stats) Ratio { return s.MRRAtK }},
		{GateMinUtility, opts.MinUtility, true, func(s Stats) Ratio { return s.Utility }},
		{GateMaxFalseBlockRate, opts.MaxFalseBlockRate, false, func(s Stats) Ratio { return s.FalseBlockRate }},
		{GateMaxStaleRate, opts.MaxStaleRate, false, func(s Stats) Ratio { return s.StaleRate }},
	}
	for _, th := range thresholds {
		if th.limit != nil {
			out = append(out, perPersonaThreshold(g, th.name, *th.limit, th.floor, th.value))
		}
	}
	return out
}

// perPersonaCount passes when no persona has more than allowed offending
// cases, counted by the count row named figure. Value is the total over all
// personas; each persona × stratum with offending cases is listed when the
// persona failed.
func perPersonaCount(g groups, name string, allowed int, figure string) Gate {
	count := func(t *tally) int { return t.count(figure) }
	total := 0
	failedPersona := map[string]bool{}
	for p, t := range g.personaTallies(nil) {
		n := count(t)
		total += n
		if n > allowed {
			failedPersona[p] = true
		}
	}
	gate := countGate(name, total)
	gate.Threshold = float64(allowed)
	gate.Passed = len(failedPersona) == 0
	for _, k := range sortedKeys(g) {
		if n := count(g[k]); failedPersona[k.persona] && n > 0 {
			v := float64(n)
			gate.Failures = append(gate.Failures, GateFailure{Persona: k.persona, Stratum: k.stratum, Value: &v})
		}
	}
	return gate
}

// perPersonaThreshold checks each persona's value against a floor (or a
// ceiling). A persona whose value is undefined is not judged on it; when no
// persona has a defined value the gate fails closed, because a suite with
// nothing measurable must not satisfy a quality bar. Value is the worst
// persona's. A failing persona's strata that also miss are listed too.
func perPersonaThreshold(g groups, name string, limit float64, floor bool, value func(Stats) Ratio) Gate {
	gate := Gate{Name: name, Threshold: limit, Passed: true}
	misses := func(v float64) bool {
		if floor {
			return v < limit
		}
		return v > limit
	}
	personas := g.personaTallies(nil)
	for _, p := range slices.Sorted(maps.Keys(personas)) {
		v := value(personas[p].stats()).Value
		if v == nil {
			continue
		}
		if gate.Value == nil || (floor && *v < *gate.Value) || (!floor && *v > *gate.Value) {
			w := *v
			gate.Value = &w
		}
		if !misses(*v) {
			continue
		}
		gate.Passed = false
		gate.Failures = append(gate.Failures, GateFailure{Persona: p, Value: v})
		for _, s := range g.strata() {
			t := g[groupKey{p, s}]
			if t == nil {
				continue
			}
			if sv := value(t.stats()).Value; sv != nil && misses(*sv) {
				gate.Failures = append(gate.Failures, GateFailure{Persona: p, Stratum: s, Value: sv})
			}
		}
	}
	if gate.Value == nil {
		gate.Passed = false
	}
	return gate
}

func sortedKeys(g groups) []groupKey {
	keys := slices.Collect(maps.Keys(g))
	slices.SortFunc(keys, func(a, b groupKey) int {
		if a.persona != b.persona {
			if a.persona < b.persona {
				return -1
			}
			return 1
		}
		if a.stratum < b.stratum {
			return -1
		}
		if a.stratum > b.stratum {
			return 1
		}
		return 0
	})
	return keys
}

// countGate passes only when no case offended.
func countGate(name string, offending int) Gate {
	v := float64(offending)
	return Gate{Name: name, Passed: offending == 0, Value: &v, Threshold: 0}
}

func allPassed(gs []Gate) bool {
	for _, g := range gs {
		if !g.Passed {
			return false
		}
	}
	return true
}
