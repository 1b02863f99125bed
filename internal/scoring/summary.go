package scoring

import (
	"maps"
	"math"
	"slices"
)

// tally is the running sums behind one Stats. Tallies add up, so the summary
// of a persona is the sum of its strata.
type tally struct {
	answerable, requiredBlock                       int
	supported, unsupported, stale                   int
	falseBlocks, mistakenNotFound, wrongStatus      int
	disclosed, justified, failedToAbstain           int
	leaks, invalidCitationCases                     int
	statusCases, statusCorrect                      [4]int
	citedAnswer, citedSupporting, citedAll, citedOK int
	recallSum, rrSum, precSum, ndcgSum              float64
	recallN, rrN, precN, ndcgN                      int
	latencies                                       []float64
}

// statusIndex maps a status action to its slot in the per-status arrays.
func statusIndex(a Action) int {
	for i, s := range StatusActions {
		if s == a {
			return i
		}
	}
	return -1
}

// add folds one scored case into the tally. Rank metrics only average
// answerable cases with a defined value: a required-block case has no
// evidence to find, and an undefined value is not a zero.
func (t *tally) add(action Action, s *scored) {
	if s.leaked() {
		t.leaks++
	}
	if len(s.l().invalidCitations) > 0 {
		t.invalidCitationCases++
	}
	t.citedAll += s.citedN
	t.citedOK += s.citedOK
	if s.hasLatency {
		t.latencies = append(t.latencies, s.latency)
	}
	switch {
	case action == ActionBlock:
		t.requiredBlock++
		switch s.outcome {
		case OutcomeDisclosure:
			t.disclosed++
		case OutcomeFailedToAbstain:
			t.failedToAbstain++
		case OutcomeJustifiedBlock:
			t.justified++
		}
		return
	case action.IsStatus():
		i := statusIndex(action)
		t.statusCases[i]++
		if s.outcome == OutcomeCorrectStatus {
			t.statusCorrect[i]++
		}
		return
	}
	t.answerable++
	switch s.outcome {
	case OutcomeSupported:
		t.supported++
	case OutcomeUnsupported:
		t.unsupported++
	case OutcomeStale:
		t.stale++
	case OutcomeFalseBlock:
		t.falseBlocks++
	case OutcomeMistakenNotFound:
		t.mistakenNotFound++
	case OutcomeWrongStatus:
		t.wrongStatus++
	}
	t.citedAnswer += s.citedN
	t.citedSupporting += s.citedSupporting
	if s.defined&hasRecall != 0 {
		t.recallSum += s.recall
		t.recallN++
	}
	if s.defined&hasRR != 0 {
		t.rrSum += s.rr
		t.rrN++
	}
	if s.defined&hasPrec != 0 {
		t.precSum += s.prec
		t.precN++
	}
	if s.defined&hasNDCG != 0 {
		t.ndcgSum += s.ndcg
		t.ndcgN++
	}
}

// merge adds o into t.
func (t *tally) merge(o *tally) {
	t.answerable += o.answerable
	t.requiredBlock += o.requiredBlock
	t.supported += o.supported
	t.unsupported += o.unsupported
	t.stale += o.stale
	t.falseBlocks += o.falseBlocks
	t.mistakenNotFound += o.mistakenNotFound
	t.wrongStatus += o.wrongStatus
	t.disclosed += o.disclosed
	t.justified += o.justified
	t.failedToAbstain += o.failedToAbstain
	t.leaks += o.leaks
	t.invalidCitationCases += o.invalidCitationCases
	for i := range t.statusCases {
		t.statusCases[i] += o.statusCases[i]
		t.statusCorrect[i] += o.statusCorrect[i]
	}
	t.citedAnswer += o.citedAnswer
	t.citedSupporting += o.citedSupporting
	t.citedAll += o.citedAll
	t.citedOK += o.citedOK
	t.recallSum += o.recallSum
	t.rrSum += o.rrSum
	t.precSum += o.precSum
	t.ndcgSum += o.ndcgSum
	t.recallN += o.recallN
	t.rrN += o.rrN
	t.precN += o.precN
	t.ndcgN += o.ndcgN
	t.latencies = append(t.latencies, o.latencies...)
}

// stats turns the tally into Stats; every zero denominator becomes null.
func (t *tally) stats() Stats {
	st := Stats{
		Answerable:           t.answerable,
		RequiredBlock:        t.requiredBlock,
		Supported:            t.supported,
		FalseBlocks:          t.falseBlocks,
		Disclosures:          t.disclosed,
		AffectedAnswers:      t.leaks,
		FailedToAbstain:      t.failedToAbstain,
		Utility:              newRatio(float64(t.supported), t.answerable),
		FalseBlockRate:       newRatio(float64(t.falseBlocks), t.answerable),
		DisclosureRate:       newRatio(float64(t.disclosed), t.requiredBlock),
		FailedToAbstainRate:  newRatio(float64(t.failedToAbstain), t.requiredBlock),
		RecallAtK:            newRatio(t.recallSum, t.recallN),
		MRRAtK:               newRatio(t.rrSum, t.rrN),
		Unsupported:          t.unsupported,
		Stale:                t.stale,
		MistakenNotFound:     t.mistakenNotFound,
		WrongStatus:          t.wrongStatus,
		JustifiedBlocks:      t.justified,
		Leaks:                t.leaks,
		InvalidCitationCases: t.invalidCitationCases,
		MistakenNotFoundRate: newRatio(float64(t.mistakenNotFound), t.answerable),
		StaleRate:            newRatio(float64(t.stale), t.answerable),
		CorrectAbstention:    make(map[Action]Ratio, len(StatusActions)),
		CitationPrecision:    newRatio(float64(t.citedSupporting), t.citedAnswer),
		CitationValidity:     newRatio(float64(t.citedOK), t.citedAll),
		PrecisionAtK:         newRatio(t.precSum, t.precN),
		NDCGAtK:              newRatio(t.ndcgSum, t.ndcgN),
		LatencyMS:            latency(t.latencies),
	}
	for i, a := range StatusActions {
		st.CorrectAbstention[a] = newRatio(float64(t.statusCorrect[i]), t.statusCases[i])
	}
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
		t = &tally{}
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
			p = &tally{}
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
	var overall tally
	out := Summary{Personas: make(map[string]Stats, len(personas))}
	for _, name := range slices.Sorted(maps.Keys(personas)) {
		t := personas[name]
		overall.merge(t)
		out.Personas[name] = t.stats()
	}
	out.Overall = overall.stats()
	return out
}
