package scoring

// scoreCase computes every per-case metric. c and r are assumed validated.
func scoreCase(c Case, r Result, k int) CaseScore {
	allowed := set(c.AllowedIDs)
	relevant := set(c.RelevantIDs)
	forbidden := forbiddenIDs(r, allowed)
	top := distinct(r.RetrievedIDs[:min(k, len(r.RetrievedIDs))])
	return CaseScore{
		ID:               c.ID,
		Persona:          c.Persona,
		ForbiddenIDs:     forbidden,
		DuplicateCount:   len(r.RetrievedIDs) - len(distinct(r.RetrievedIDs)),
		RecallAtK:        recallAtK(top, relevant),
		FillAtK:          fillAtK(top, allowed, k),
		ReciprocalRank:   reciprocalRank(top, relevant),
		Outcome:          outcome(c, r, relevant, len(forbidden) > 0),
		InvalidCitations: invalidCitations(r, allowed),
	}
}

// forbiddenIDs lists retrieved (at any rank, not just within k) and cited IDs
// outside the allowed set, distinct, retrieved order first.
func forbiddenIDs(r Result, allowed map[string]bool) []string {
	out := []string{}
	for _, id := range distinct(append(append([]string{}, r.RetrievedIDs...), r.CitedIDs...)) {
		if !allowed[id] {
			out = append(out, id)
		}
	}
	return out
}

// invalidCitations lists cited IDs outside retrieved ∩ allowed. The whole
// retrieved list counts, not just the top k: k is a scoring cutoff, not what
// the answer surface was given.
func invalidCitations(r Result, allowed map[string]bool) []string {
	retrieved := set(r.RetrievedIDs)
	out := []string{}
	for _, id := range distinct(r.CitedIDs) {
		if !retrieved[id] || !allowed[id] {
			out = append(out, id)
		}
	}
	return out
}

// countIn counts how many of ids are in s; ids must already be distinct so a
// duplicate cannot be credited twice.
func countIn(ids []string, s map[string]bool) int {
	n := 0
	for _, id := range ids {
		if s[id] {
			n++
		}
	}
	return n
}

// recallAtK = |distinct(top k) ∩ relevant| / |relevant|; nil without relevant IDs.
func recallAtK(top []string, relevant map[string]bool) *float64 {
	if len(relevant) == 0 {
		return nil
	}
	v := float64(countIn(top, relevant)) / float64(len(relevant))
	return &v
}

// fillAtK = |distinct(top k) ∩ allowed| / min(k, |allowed|); nil without
// allowed IDs. The min keeps a small allowed set from capping fill below 1.
func fillAtK(top []string, allowed map[string]bool, k int) *float64 {
	if len(allowed) == 0 {
		return nil
	}
	v := float64(countIn(top, allowed)) / float64(min(k, len(allowed)))
	return &v
}

// reciprocalRank is 1/rank of the first relevant ID in top, where top holds
// the distinct IDs of the first k entries, so rank is counted over distinct
// IDs: a duplicate neither pushes a later hit down nor earns a rank itself.
// nil without relevant IDs, 0 when none was found.
func reciprocalRank(top []string, relevant map[string]bool) *float64 {
	if len(relevant) == 0 {
		return nil
	}
	v := 0.0
	for i, id := range top {
		if relevant[id] {
			v = 1 / float64(i+1)
			break
		}
	}
	return &v
}

// outcome classifies the case; see the Outcome constants.
func outcome(c Case, r Result, relevant map[string]bool, anyForbidden bool) Outcome {
	if c.MustAbstain {
		switch {
		case anyForbidden:
			return OutcomeDisclosure
		case r.Abstained:
			return OutcomeJustifiedBlock
		default:
			return OutcomeFailedToAbstain
		}
	}
	switch {
	case r.Abstained:
		return OutcomeFalseBlock
	case !anyForbidden && len(r.CitedIDs) > 0 && allIn(r.CitedIDs, relevant):
		return OutcomeSupported
	default:
		return OutcomeUnsupported
	}
}

func allIn(ids []string, s map[string]bool) bool {
	return countIn(ids, s) == len(ids)
}
