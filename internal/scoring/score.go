package scoring

import (
	"math"
	"strings"
)

// scored is one case's score in compact form: values instead of pointers so
// a million of them cost no allocations; CaseScore is built from it on demand.
type scored struct {
	outcome  Outcome
	declared Action
	// defined holds which of the ratio fields have a defined value.
	defined                          uint8
	recall, fill, rr, prec, ndcg     float64
	duplicates                       int
	citedN, citedSupporting, citedOK int
	latency                          float64
	hasLatency                       bool
	// lists is nil for the usual clean case, which keeps a million scores
	// small.
	lists *scoreLists
}

// scoreLists are the IDs and markers a case is listed for.
type scoreLists struct {
	forbidden, invalidCitations, markers, texts []string
}

var noLists scoreLists

// l returns the case's lists, empty when it has none.
func (s *scored) l() *scoreLists {
	if s.lists == nil {
		return &noLists
	}
	return s.lists
}

const (
	hasRecall uint8 = 1 << iota
	hasFill
	hasRR
	hasPrec
	hasNDCG
)

// leaked reports whether anything forbidden reached the reader.
func (s *scored) leaked() bool {
	l := s.l()
	return len(l.forbidden) > 0 || len(l.markers) > 0 || len(l.texts) > 0
}

// scorer holds scratch space reused across cases; it is not safe for
// concurrent use.
type scorer struct {
	k     int
	texts map[string]string
	seen  map[string]struct{}
	top   []string
	dist  []string
	rel   []string
	cited []string
}

func newScorer(k int, texts map[string]string) *scorer {
	return &scorer{k: k, texts: texts, seen: map[string]struct{}{}}
}

// in reports whether id is in ids. Evidence sets are small, so a scan beats
// building a map per case.
func in(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// distinctInto appends ids without repeats to dst[:0], first occurrences in
// order. Long lists go through a map so the cost stays linear.
func (sc *scorer) distinctInto(dst, ids []string) []string {
	dst = dst[:0]
	if len(ids) <= 32 {
		for _, id := range ids {
			if !in(dst, id) {
				dst = append(dst, id)
			}
		}
		return dst
	}
	clear(sc.seen)
	for _, id := range ids {
		if _, ok := sc.seen[id]; !ok {
			sc.seen[id] = struct{}{}
			dst = append(dst, id)
		}
	}
	return dst
}

// score computes every per-case metric and the outcome; c and r are
// validated and r answers c.
func (sc *scorer) score(e *Expected, r *ResultV2) scored {
	out := scored{declared: r.DeclaredAction()}
	var lists scoreLists
	readable := func(id string) bool {
		return (in(e.AllowedEvidence, id) || in(e.SupersededEvidence, id)) && !in(e.ForbiddenEvidence, id)
	}

	// Forbidden IDs at every rank, not only within k, then citations.
	for _, list := range [][]string{r.RetrievedIDs, r.CitedIDs} {
		for _, id := range list {
			if !readable(id) && !in(lists.forbidden, id) {
				// Cloned: a streamed result's strings are reused.
				lists.forbidden = append(lists.forbidden, strings.Clone(id))
			}
		}
	}
	sc.scanAnswer(e, r.AnswerText, readable, &lists)

	sc.dist = sc.distinctInto(sc.dist, r.RetrievedIDs)
	out.duplicates = len(r.RetrievedIDs) - len(sc.dist)
	sc.top = sc.distinctInto(sc.top, r.RetrievedIDs[:min(sc.k, len(r.RetrievedIDs))])
	sc.rel = relevantInto(sc.rel, e)
	sc.rank(e, len(r.RetrievedIDs), &out)

	// Citations: distinct, each judged once.
	sc.cited = sc.distinctInto(sc.cited, r.CitedIDs)
	out.citedN = len(sc.cited)
	for _, id := range sc.cited {
		if in(sc.rel, id) || in(e.ExpectedCitations, id) {
			out.citedSupporting++
		}
		if in(r.RetrievedIDs, id) && readable(id) {
			out.citedOK++
		} else {
			lists.invalidCitations = append(lists.invalidCitations, strings.Clone(id))
		}
	}
	if r.LatencyMS != nil {
		out.latency, out.hasLatency = *r.LatencyMS, true
	}
	if len(lists.forbidden)+len(lists.invalidCitations)+len(lists.markers)+len(lists.texts) > 0 {
		p := new(scoreLists)
		*p = lists
		out.lists = p
	}
	out.outcome = sc.outcome(e, &out)
	return out
}

// scanAnswer looks for forbidden markers and forbidden documents' text in the
// answer the reader saw.
func (sc *scorer) scanAnswer(e *Expected, answer string, readable func(string) bool, out *scoreLists) {
	if answer == "" {
		return
	}
	var lower string
	for _, m := range e.ForbiddenMarkers {
		if lower == "" {
			lower = strings.ToLower(answer)
		}
		if strings.Contains(lower, strings.ToLower(m)) {
			out.markers = append(out.markers, m)
		}
	}
	for id, body := range sc.texts {
		if body != "" && !readable(id) && strings.Contains(answer, body) {
			out.texts = append(out.texts, id)
		}
	}
}

// relevantInto is every ID that counts as relevant: the required evidence
// and every alternative sufficient set.
func relevantInto(dst []string, e *Expected) []string {
	dst = dst[:0]
	for _, id := range e.RequiredEvidence {
		if !in(dst, id) {
			dst = append(dst, id)
		}
	}
	for _, alt := range e.RequiredAnyOf {
		for _, id := range alt {
			if !in(dst, id) {
				dst = append(dst, id)
			}
		}
	}
	return dst
}

// rank computes recall, fill, reciprocal rank, precision and nDCG over the
// distinct IDs of the first k entries (sc.top). Ranks are counted over
// distinct IDs, so a duplicate neither earns credit nor pushes a hit down.
func (sc *scorer) rank(e *Expected, retrieved int, out *scored) {
	if v, ok := bestRecall(sc.top, e); ok {
		out.recall, out.defined = v, out.defined|hasRecall
	}
	if len(e.AllowedEvidence) > 0 {
		// min(k, |allowed|) keeps a small allowed set from capping fill.
		out.fill = float64(countIn(sc.top, e.AllowedEvidence)) / float64(min(sc.k, len(e.AllowedEvidence)))
		out.defined |= hasFill
	}
	if len(sc.rel) == 0 {
		return
	}
	out.defined |= hasRR | hasNDCG
	var dcg float64
	hits := 0
	for i, id := range sc.top {
		if in(sc.rel, id) {
			if hits == 0 {
				out.rr = 1 / float64(i+1)
			}
			hits++
			dcg += 1 / math.Log2(float64(i+2))
		}
	}
	var ideal float64
	for i := range min(sc.k, len(sc.rel)) {
		ideal += 1 / math.Log2(float64(i+2))
	}
	out.ndcg = dcg / ideal
	if retrieved > 0 {
		// The slots the system filled, up to k: duplicates occupy a slot.
		out.prec = float64(hits) / float64(min(sc.k, retrieved))
		out.defined |= hasPrec
	}
}

// bestRecall is |top ∩ target| / |target|, target the required evidence;
// with alternative sufficient sets, the best over required ∪ each set.
// Undefined without a target.
func bestRecall(top []string, e *Expected) (float64, bool) {
	if len(e.RequiredAnyOf) == 0 {
		if len(e.RequiredEvidence) == 0 {
			return 0, false
		}
		return float64(countIn(top, e.RequiredEvidence)) / float64(len(e.RequiredEvidence)), true
	}
	best := -1.0
	for _, alt := range e.RequiredAnyOf {
		found, size := countIn(top, e.RequiredEvidence), len(e.RequiredEvidence)
		for _, id := range alt {
			if !in(e.RequiredEvidence, id) {
				size++
				if in(top, id) {
					found++
				}
			}
		}
		best = max(best, float64(found)/float64(size))
	}
	return best, true
}

// countIn counts how many of ids are in s; ids must be distinct so nothing
// is credited twice.
func countIn(ids, s []string) int {
	n := 0
	for _, id := range ids {
		if in(s, id) {
			n++
		}
	}
	return n
}

// outcome classifies the case; see the Outcome constants and docs/eval.md.
func (sc *scorer) outcome(e *Expected, s *scored) Outcome {
	switch {
	case e.Action == ActionBlock:
		switch {
		case s.leaked():
			return OutcomeDisclosure
		case s.declared == ActionAnswer:
			return OutcomeFailedToAbstain
		default:
			// Any withholding declaration is a justified block: policy may
			// require a neutral "not found" so as not to reveal that
			// restricted evidence exists.
			return OutcomeJustifiedBlock
		}
	case e.Action.IsStatus():
		if s.declared == e.Action {
			return OutcomeCorrectStatus
		}
		return OutcomeWrongStatus
	}
	switch s.declared {
	case ActionBlock:
		return OutcomeFalseBlock
	case ActionNotFound:
		return OutcomeMistakenNotFound
	case ActionAnswer:
	default:
		return OutcomeWrongStatus
	}
	switch {
	case s.leaked() || s.citedN == 0:
		return OutcomeUnsupported
	case s.citedSupporting == s.citedN && sc.anyOfCited(e):
		return OutcomeSupported
	case sc.citesOnlySuperseded(e):
		return OutcomeStale
	default:
		return OutcomeUnsupported
	}
}

// anyOfCited: with alternative sufficient sets, one of them is cited in full.
func (sc *scorer) anyOfCited(e *Expected) bool {
	if len(e.RequiredAnyOf) == 0 {
		return true
	}
	for _, alt := range e.RequiredAnyOf {
		if countIn(alt, sc.cited) == len(alt) {
			return true
		}
	}
	return false
}

// citesOnlySuperseded: some citation is a superseded version and none is
// eligible supporting evidence — the support came only from old versions.
func (sc *scorer) citesOnlySuperseded(e *Expected) bool {
	stale := false
	for _, id := range sc.cited {
		if in(sc.rel, id) || in(e.ExpectedCitations, id) {
			return false
		}
		stale = stale || in(e.SupersededEvidence, id)
	}
	return stale
}

// caseScore expands the compact score for the report.
func (s *scored) caseScore(c *caseRec) CaseScore {
	opt := func(bit uint8, v float64) *float64 {
		if s.defined&bit == 0 {
			return nil
		}
		return &v
	}
	cs := CaseScore{
		ID: c.id, Persona: c.persona, Stratum: c.stratum,
		Action: c.action, Declared: s.declared,
		ForbiddenIDs:     nonNilList(s.l().forbidden),
		DuplicateCount:   s.duplicates,
		RecallAtK:        opt(hasRecall, s.recall),
		FillAtK:          opt(hasFill, s.fill),
		ReciprocalRank:   opt(hasRR, s.rr),
		PrecisionAtK:     opt(hasPrec, s.prec),
		NDCGAtK:          opt(hasNDCG, s.ndcg),
		Outcome:          s.outcome,
		Disclosed:        s.leaked(),
		LeakedMarkers:    s.l().markers,
		LeakedTexts:      s.l().texts,
		InvalidCitations: nonNilList(s.l().invalidCitations),
	}
	if s.hasLatency {
		v := s.latency
		cs.LatencyMS = &v
	}
	return cs
}
