package scoring

// Session scores one evaluation case by case, so a caller can stream cases
// and then results through it without holding either file as a tree: add
// every case (AddCase, AddCaseV1, ReadCases), then every result (AddResult,
// ReadResults) — each is scored the moment it arrives — then Finish. Only
// a compact score per case is kept for the report. Not safe for concurrent
// use.
type Session struct {
	opts  Options
	cases []caseRec
	// pending holds the expectations of cases not yet scored, in chunks
	// so neither a copy on growth nor an allocation per case is paid.
	pending []Expected
	index   map[string]int
	scores  []scored
	// done marks the cases whose result has been scored.
	done   []bool
	groups groups
	sc     *scorer
	ps     problems
	nRes   int
	// next is the case after the last one matched: exports usually list
	// results in case order, and checking it first skips a map lookup.
	next int
}

// NewSession checks the options; bad ones are an error wrapping
// ErrInvalidOptions.
func NewSession(opts Options) (*Session, error) {
	opts, err := resolveOptions(opts)
	if err != nil {
		return nil, err
	}
	return &Session{opts: opts, index: map[string]int{}, groups: groups{},
		sc: newScorer(opts.K, opts.DocumentTexts)}, nil
}

// caseRec is what a session keeps of a case: its identity for the report,
// and its expectations until its result is scored.
type caseRec struct {
	id, persona, stratum string
	action               Action
	exp                  *Expected
}

const pendingChunk = 4096

// AddCase validates one v2 case and keeps it for its result.
func (s *Session) AddCase(c CaseV2) { s.addCase(&c) }

func (s *Session) addCase(c *CaseV2) {
	i := len(s.cases)
	checkCaseV2(c, i, false, &s.ps)
	s.keep(c, i)
}

// AddCaseV1 validates one v1 case with the v1 rules and messages, then keeps
// it mapped onto the v2 model.
func (s *Session) AddCaseV1(c Case) {
	i := len(s.cases)
	checkCaseV1(c, i, &s.ps)
	c2 := c.V2()
	s.keep(&c2, i)
}

func (s *Session) keep(c *CaseV2, i int) {
	if c.ID != "" {
		if _, dup := s.index[c.ID]; dup {
			s.ps.add(KindCase, i, c.ID, "duplicate case id")
		} else {
			s.index[c.ID] = i
		}
	}
	if s.done != nil {
		// A case after the first result: keep the per-case slices aligned.
		s.done = append(s.done, false)
		s.scores = append(s.scores, scored{})
	}
	if len(s.pending) == cap(s.pending) {
		s.pending = make([]Expected, 0, pendingChunk)
	}
	s.pending = append(s.pending, c.Expected)
	s.cases = append(s.cases, caseRec{id: c.ID, persona: c.Persona, stratum: c.Stratum,
		action: c.Expected.Action, exp: &s.pending[len(s.pending)-1]})
}

// AddResult validates one result, matches it to its case by ID and scores
// it. Results must come after every case.
func (s *Session) AddResult(r ResultV2) {
	i := s.nRes
	s.nRes++
	checkResultV2(&r, i, &s.ps)
	if r.ID == "" {
		return
	}
	// With duplicate case IDs the input is already invalid, so matching
	// the next case by ID alone cannot change a report.
	ci := s.next
	if ci >= len(s.cases) || s.cases[ci].id != r.ID {
		var ok bool
		if ci, ok = s.index[r.ID]; !ok {
			s.ps.add(KindResult, i, r.ID, "no case with this id")
			return
		}
	}
	s.next = ci + 1
	if s.done == nil {
		s.done = make([]bool, len(s.cases))
		s.scores = make([]scored, len(s.cases))
	}
	if s.done[ci] {
		s.ps.add(KindResult, i, r.ID, "duplicate result id")
		return
	}
	s.done[ci] = true
	if len(s.ps) > 0 {
		// Invalid input yields no report; only the checks go on.
		return
	}
	c := &s.cases[ci]
	sc := s.sc.score(c.exp, &r)
	s.scores[ci] = sc
	s.groups.add(c, &sc)
	// The report needs only the case's identity from here on.
	*c.exp = Expected{}
	c.exp = nil
}

// Finish checks that every case got a result and builds the report. With
// withCases, Report.Cases holds every case's score; without, it is nil and
// EachCase or WriteJSON walk the scores instead. Invalid input is a
// *ValidationError listing every problem.
func (s *Session) Finish(withCases bool) (Report, error) {
	if len(s.cases) == 0 {
		// An empty suite would pass every gate vacuously.
		s.ps.add(KindInput, -1, "", "no cases to evaluate")
	}
	for i, c := range s.cases {
		if c.id != "" && (s.done == nil || !s.done[i]) {
			// A missing result is an error, never a skip: otherwise a
			// truncated export could only raise the averages.
			s.ps.add(KindCase, i, c.id, "has no result")
		}
	}
	if err := s.ps.err(); err != nil {
		return Report{}, err
	}
	gs := gates(s.groups, s.opts)
	rep := Report{K: s.opts.K, Passed: allPassed(gs), Gates: gs, Summary: s.groups.summary()}
	if withCases {
		rep.Cases = make([]CaseScore, 0, len(s.cases))
		s.EachCase(func(cs CaseScore) { rep.Cases = append(rep.Cases, cs) })
	}
	return rep, nil
}

// EachCase calls fn with every case's score in input order. Valid after a
// successful Finish.
func (s *Session) EachCase(fn func(CaseScore)) {
	for i := range s.cases {
		fn(s.scores[i].caseScore(&s.cases[i]))
	}
}

// Evaluate validates v1 cases and results, scores every case and applies the
// gates; it is EvaluateV2 after mapping both onto the v2 model, with the v1
// validation messages. The inputs are not modified, and the Report depends
// only on them (cases in input order, personas sorted when marshalled).
func Evaluate(cases []Case, results []Result, opts Options) (Report, error) {
	s, err := NewSession(opts)
	if err != nil {
		return Report{}, err
	}
	for _, c := range cases {
		s.AddCaseV1(c)
	}
	for _, r := range results {
		s.AddResult(r.V2())
	}
	return s.Finish(true)
}

// EvaluateV2 validates v2 cases and results, scores every case × persona and
// applies the gates. Invalid input yields a *ValidationError naming every
// offending case and field; bad options an error wrapping ErrInvalidOptions.
func EvaluateV2(cases []CaseV2, results []ResultV2, opts Options) (Report, error) {
	s, err := NewSession(opts)
	if err != nil {
		return Report{}, err
	}
	for _, c := range cases {
		s.AddCase(c)
	}
	for _, r := range results {
		s.AddResult(r)
	}
	return s.Finish(true)
}

// Failing reports whether a case needs attention: it leaked, cited outside
// its evidence, or ended in any outcome other than a supported answer, a
// justified block or a correct status. Used to pick the cases a human should
// look at.
func (s CaseScore) Failing() bool {
	return s.Leaked() || len(s.InvalidCitations) > 0 ||
		(s.Outcome != OutcomeSupported && s.Outcome != OutcomeJustifiedBlock && s.Outcome != OutcomeCorrectStatus)
}

// Leaked reports whether the case exposed anything forbidden. The lists are
// read as well as Disclosed because a report stored before the flag existed
// carries only the lists.
func (s CaseScore) Leaked() bool {
	return s.Disclosed || len(s.ForbiddenIDs) > 0 || len(s.LeakedMarkers) > 0 || len(s.LeakedTexts) > 0
}
