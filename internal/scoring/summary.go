package scoring

// tally is the running sums behind one Stats.
type tally struct {
	answerable, requiredBlock         int
	supported, falseBlocks, disclosed int
	failedToAbstain                   int
	recallSum, rrSum                  float64
	recallN, rrN                      int
}

// add folds one scored case into the tally. Recall and MRR averages only use
// answerable cases with a defined value: a required-block case has no
// evidence to find, and an undefined value is not a zero.
func (t *tally) add(s CaseScore, mustAbstain bool) {
	if mustAbstain {
		t.requiredBlock++
		switch s.Outcome {
		case OutcomeDisclosure:
			t.disclosed++
		case OutcomeFailedToAbstain:
			t.failedToAbstain++
		}
		return
	}
	t.answerable++
	switch s.Outcome {
	case OutcomeSupported:
		t.supported++
	case OutcomeFalseBlock:
		t.falseBlocks++
	}
	if s.RecallAtK != nil {
		t.recallSum += *s.RecallAtK
		t.recallN++
	}
	if s.ReciprocalRank != nil {
		t.rrSum += *s.ReciprocalRank
		t.rrN++
	}
}

// stats turns the tally into Stats; every zero denominator becomes null.
func (t tally) stats() Stats {
	return Stats{
		Answerable:          t.answerable,
		RequiredBlock:       t.requiredBlock,
		Supported:           t.supported,
		FalseBlocks:         t.falseBlocks,
		Disclosures:         t.disclosed,
		FailedToAbstain:     t.failedToAbstain,
		Utility:             newRatio(float64(t.supported), t.answerable),
		FalseBlockRate:      newRatio(float64(t.falseBlocks), t.answerable),
		DisclosureRate:      newRatio(float64(t.disclosed), t.requiredBlock),
		FailedToAbstainRate: newRatio(float64(t.failedToAbstain), t.requiredBlock),
		RecallAtK:           newRatio(t.recallSum, t.recallN),
		MRRAtK:              newRatio(t.rrSum, t.rrN),
	}
}

// summarize aggregates scores overall and per persona. scores[i] belongs to
// cases[i].
func summarize(cases []Case, scores []CaseScore) Summary {
	var overall tally
	personas := map[string]*tally{}
	for i, s := range scores {
		overall.add(s, cases[i].MustAbstain)
		p := personas[s.Persona]
		if p == nil {
			p = &tally{}
			personas[s.Persona] = p
		}
		p.add(s, cases[i].MustAbstain)
	}
	out := Summary{Overall: overall.stats(), Personas: make(map[string]Stats, len(personas))}
	for name, t := range personas {
		out.Personas[name] = t.stats()
	}
	return out
}
