package scoring

import (
	"maps"
	"math"
	"slices"
)

// tally is the running sums behind one Stats. Tallies add up, so the summary
// of a persona is the sum of its strata.
type tally struct {
	// counts are by Figure slot.
	counts []int
	// sums and ns are each measure's numerator and denominator.
	sums                       [numMeasures]float64
	ns                         [numMeasures]int
	statusCases, statusCorrect [4]int
	latencies                  []float64
}

func newTally() *tally { return &tally{counts: make([]int, len(countFigures))} }

// statusIndex maps a status action to its slot in the per-status arrays.
func statusIndex(a Action) int {
	for i, s := range StatusActions {
		if s == a {
			return i
		}
	}
	return -1
}

// add folds one scored case into the tally: every count row that counts it,
// then the measures. Rank metrics only average answerable cases with a
// defined value: a required-block case has no evidence to find, and an
// undefined value is not a zero.
func (t *tally) add(action Action, s *scored) {
	bit := actionBit(action)
	for i, f := range countFigures {
		if f.counts(bit, s) {
			t.counts[i]++
		}
	}
	t.measure(measureCitedValid, float64(s.citedOK), s.citedN)
	if s.hasLatency {
		t.latencies = append(t.latencies, s.latency)
	}
	if action.IsStatus() {
		i := statusIndex(action)
		t.statusCases[i]++
		if s.outcome == OutcomeCorrectStatus {
			t.statusCorrect[i]++
		}
	}
	if action != ActionAnswer {
		return
	}
	t.measure(measureCitedSupporting, float64(s.citedSupporting), s.citedN)
	for _, m := range []struct {
		m   measure
		bit uint8
		v   float64
	}{{measureRecall, hasRecall, s.recall}, {measureRR, hasRR, s.rr}, {measurePrecision, hasPrec, s.prec}, {measureNDCG, hasNDCG, s.ndcg}} {
		if s.defined&m.bit != 0 {
			t.measure(m.m, m.v, 1)
		}
	}
}

// measure adds v over n to one measure.
func (t *tally) measure(m measure, v float64, n int) {
	t.sums[m] += v
	t.ns[m] += n
}

// merge adds o into t.
func (t *tally) merge(o *tally) {
	for i := range t.counts {
		t.counts[i] += o.counts[i]
	}
	for m := range t.sums {
		t.sums[m] += o.sums[m]
		t.ns[m] += o.ns[m]
	}
	for i := range t.statusCases {
		t.statusCases[i] += o.statusCases[i]
		t.statusCorrect[i] += o.statusCorrect[i]
	}
	t.latencies = append(t.latencies, o.latencies...)
}

// count is the tally of the count row named name.
func (t *tally) count(name string) int {
	f, ok := FigureNamed(name)
	if !ok || f.Kind != KindCount {
		// The engine names only rows of its own table.
		panic("scoring: no count named " + name)
	}
	return t.counts[f.slot]
}

// ratio is a rate's or a mean's value; a zero denominator leaves it null.
func (t *tally) ratio(f *Figure) Ratio {
	if f.measure != noMeasure {
		return newRatio(t.sums[f.measure], t.ns[f.measure])
	}
	return newRatio(float64(t.counts[f.num]), t.counts[f.den])
}

// stats turns the tally into Stats, row by row of Figures.
func (t *tally) stats() Stats {
	var st Stats
	for i := range Figures {
		f := &Figures[i]
		if f.Kind == KindCount {
			*f.count(&st) = t.counts[f.slot]
		} else {
			*f.ratio(&st) = t.ratio(f)
		}
	}
	// Leaks is affected_answers under the key reports had before it.
	st.Leaks = st.AffectedAnswers
	st.CorrectAbstention = make(map[Action]Ratio, len(StatusActions))
	for i, a := range StatusActions {
		st.CorrectAbstention[a] = newRatio(float64(t.statusCorrect[i]), t.statusCases[i])
	}
	st.LatencyMS = latency(t.latencies)
	return st
}

// latency computes nearest-rank percentiles; it sorts ls in place.
func latency(ls []float64) Latency {
	out := Latency{Count: len(ls)}
	if len(ls) == 0 {
		return out
	}
	slices.Sort(ls)
	pick := func(p float64) *float64 {
		i := int(math.Ceil(p/100*float64(len(ls)))) - 1
		v := ls[max(i, 0)]
		return &v
	}
	out.P50, out.P95, out.P99 = pick(50), pick(95), pick(99)
	return out
}

// groupKey is one persona within one stratum; the finest slice tallied.
type groupKey struct{ persona, stratum string }

// groups holds a tally per persona × stratum.
type groups map[groupKey]*tally

func (g groups) add(c *caseRec, s *scored) {
	k := groupKey{c.persona, c.stratum}
	t := g[k]
	if t == nil {
		t = newTally()
		g[k] = t
	}
	t.add(c.action, s)
}

// personaTallies sums the groups of each persona over all strata; with
// stratum set, over that stratum only. Groups are added in sorted order:
// floating-point sums depend on the order of their terms, and the report
// must not change from one run to the next.
func (g groups) personaTallies(stratum *string) map[string]*tally {
	out := map[string]*tally{}
	for _, k := range sortedKeys(g) {
		if stratum != nil && k.stratum != *stratum {
			continue
		}
		t := g[k]
		p := out[k.persona]
		if p == nil {
			p = newTally()
			out[k.persona] = p
		}
		p.merge(t)
	}
	return out
}

// strata lists the non-empty strata, sorted.
func (g groups) strata() []string {
	seen := map[string]bool{}
	for k := range g {
		if k.stratum != "" {
			seen[k.stratum] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// summary builds overall and per-persona stats, and the same per stratum.
func (g groups) summary() Summary {
	out := summaryOf(g.personaTallies(nil))
	for _, s := range g.strata() {
		if out.Strata == nil {
			out.Strata = map[string]Summary{}
		}
		out.Strata[s] = summaryOf(g.personaTallies(&s))
	}
	return out
}

func summaryOf(personas map[string]*tally) Summary {
	overall := newTally()
	out := Summary{Personas: make(map[string]Stats, len(personas))}
	for _, name := range slices.Sorted(maps.Keys(personas)) {
		t := personas[name]
		overall.merge(t)
		out.Personas[name] = t.stats()
	}
	out.Overall = overall.stats()
	return out
}
