package scoring

import (
	"reflect"
	"testing"
)

func ptr(v float64) *float64 { return &v }

// eqFloat compares optional metrics; nil (undefined) only equals nil.
func eqFloat(a, b *float64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	const eps = 1e-12
	return *a-*b < eps && *b-*a < eps
}

func show(v *float64) any {
	if v == nil {
		return "null"
	}
	return *v
}

func TestScoreCase(t *testing.T) {
	tests := []struct {
		name string
		// c is the case under test.
		c Case
		// r is the system's result for it.
		r Result
		// k is the rank cutoff.
		k int
		// forbidden is the expected forbidden_ids, in order.
		forbidden []string
		// invalidCites is the expected citations outside retrieved ∩ allowed.
		invalidCites []string
		// dups is the expected duplicate_count.
		dups int
		// recall, fill and rr are the expected metrics; nil means null.
		recall, fill, rr *float64
		// outcome is the expected classification.
		outcome Outcome
	}{
		{
			name:      "perfect supported answer",
			c:         Case{ID: "a", RelevantIDs: []string{"d1"}, AllowedIDs: []string{"d1", "d2"}},
			r:         Result{ID: "a", RetrievedIDs: []string{"d1", "d2"}, CitedIDs: []string{"d1"}},
			k:         10,
			forbidden: []string{}, invalidCites: []string{},
			recall: ptr(1), fill: ptr(1), rr: ptr(1),
			outcome: OutcomeSupported,
		},
		{
			// [d2 d2 d1]: the duplicate d2 earns no second credit and does
			// not push d1 to rank 3; it is rank 2 among distinct IDs.
			name:      "duplicates not double-credited",
			c:         Case{ID: "a", RelevantIDs: []string{"d1", "d2"}, AllowedIDs: []string{"d1", "d2", "d3", "d4"}},
			r:         Result{ID: "a", RetrievedIDs: []string{"d2", "d2", "d2", "d1"}, CitedIDs: []string{"d1", "d2"}},
			k:         10,
			forbidden: []string{}, invalidCites: []string{},
			dups:   2,
			recall: ptr(1), fill: ptr(0.5), rr: ptr(1),
			outcome: OutcomeSupported,
		},
		{
			// A duplicate of an irrelevant ID still occupies a slot of the
			// k window, so with k=2 the relevant d1 at position 3 is missed.
			name:      "duplicate wastes a slot inside k",
			c:         Case{ID: "a", RelevantIDs: []string{"d1"}, AllowedIDs: []string{"d1", "d2"}},
			r:         Result{ID: "a", RetrievedIDs: []string{"d2", "d2", "d1"}, CitedIDs: []string{"d1"}},
			k:         2,
			forbidden: []string{}, invalidCites: []string{},
			dups:   1,
			recall: ptr(0), fill: ptr(0.5), rr: ptr(0),
			outcome: OutcomeSupported,
		},
		{
			// The first relevant hit is the 3rd distinct ID although it is
			// the 4th entry: RR = 1/3, not 1/4.
			name:      "rank counted over distinct ids",
			c:         Case{ID: "a", RelevantIDs: []string{"d9"}, AllowedIDs: []string{"d1", "d2", "d9"}},
			r:         Result{ID: "a", RetrievedIDs: []string{"d1", "d1", "d2", "d9"}, CitedIDs: []string{"d9"}},
			k:         10,
			forbidden: []string{}, invalidCites: []string{},
			dups:   1,
			recall: ptr(1), fill: ptr(1), rr: ptr(1.0 / 3),
			outcome: OutcomeSupported,
		},
		{
			// x is at rank 4 with k=2: outside the scored window, but a
			// leak is a leak at any rank.
			name:      "forbidden id beyond k still caught",
			c:         Case{ID: "a", RelevantIDs: []string{"d1"}, AllowedIDs: []string{"d1", "d2", "d3"}},
			r:         Result{ID: "a", RetrievedIDs: []string{"d1", "d2", "d3", "x"}, CitedIDs: []string{"d1"}},
			k:         2,
			forbidden: []string{"x"}, invalidCites: []string{},
			recall: ptr(1), fill: ptr(1), rr: ptr(1),
			outcome: OutcomeUnsupported,
		},
		{
			// Forbidden IDs are distinct, retrieved order first, then cited.
			name:      "forbidden from retrieval and citation",
			c:         Case{ID: "a", RelevantIDs: []string{"d1"}, AllowedIDs: []string{"d1"}},
			r:         Result{ID: "a", RetrievedIDs: []string{"y", "d1", "x", "y"}, CitedIDs: []string{"z", "x"}},
			k:         10,
			forbidden: []string{"y", "x", "z"}, invalidCites: []string{"z", "x"},
			dups:   1,
			recall: ptr(1), fill: ptr(1), rr: ptr(0.5),
			outcome: OutcomeUnsupported,
		},
		{
			name:      "empty relevant gives null recall and rr",
			c:         Case{ID: "a", RelevantIDs: []string{}, AllowedIDs: []string{"d1", "d2", "d3"}},
			r:         Result{ID: "a", RetrievedIDs: []string{"d1"}, CitedIDs: []string{}},
			k:         10,
			forbidden: []string{}, invalidCites: []string{},
			recall: nil, fill: ptr(1.0 / 3), rr: nil,
			outcome: OutcomeUnsupported,
		},
		{
			// Nothing may be shown, so nothing can fill: fill is null, and
			// abstaining on a required-block case is justified.
			name:      "empty allowed gives null fill",
			c:         Case{ID: "a", RelevantIDs: []string{}, AllowedIDs: []string{}, MustAbstain: true},
			r:         Result{ID: "a", RetrievedIDs: []string{}, CitedIDs: []string{}, Abstained: true},
			k:         10,
			forbidden: []string{}, invalidCites: []string{},
			recall: nil, fill: nil, rr: nil,
			outcome: OutcomeJustifiedBlock,
		},
		{
			// fill divides by min(k, |allowed|) = 2, so 1 of 2 slots filled.
			name:      "fill capped by k",
			c:         Case{ID: "a", RelevantIDs: []string{"d1"}, AllowedIDs: []string{"d1", "d2", "d3", "d4"}},
			r:         Result{ID: "a", RetrievedIDs: []string{"n1", "d1"}, CitedIDs: []string{"d1"}},
			k:         2,
			forbidden: []string{"n1"}, invalidCites: []string{},
			recall: ptr(1), fill: ptr(0.5), rr: ptr(0.5),
			outcome: OutcomeUnsupported,
		},
		{
			name:      "answerable but abstained is a false block",
			c:         Case{ID: "a", RelevantIDs: []string{"d1"}, AllowedIDs: []string{"d1"}},
			r:         Result{ID: "a", RetrievedIDs: []string{"d1"}, CitedIDs: []string{}, Abstained: true},
			k:         10,
			forbidden: []string{}, invalidCites: []string{},
			recall: ptr(1), fill: ptr(1), rr: ptr(1),
			outcome: OutcomeFalseBlock,
		},
		{
			name:      "answer without citation is unsupported",
			c:         Case{ID: "a", RelevantIDs: []string{"d1"}, AllowedIDs: []string{"d1"}},
			r:         Result{ID: "a", RetrievedIDs: []string{"d1"}, CitedIDs: []string{}},
			k:         10,
			forbidden: []string{}, invalidCites: []string{},
			recall: ptr(1), fill: ptr(1), rr: ptr(1),
			outcome: OutcomeUnsupported,
		},
		{
			// d2 is allowed and retrieved, so the citation is valid, but it
			// is not relevant evidence.
			name:      "citing an irrelevant allowed doc is unsupported",
			c:         Case{ID: "a", RelevantIDs: []string{"d1"}, AllowedIDs: []string{"d1", "d2"}},
			r:         Result{ID: "a", RetrievedIDs: []string{"d1", "d2"}, CitedIDs: []string{"d1", "d2"}},
			k:         10,
			forbidden: []string{}, invalidCites: []string{},
			recall: ptr(1), fill: ptr(1), rr: ptr(1),
			outcome: OutcomeUnsupported,
		},
		{
			// d2 is allowed but was not retrieved: an invalid citation.
			name:      "citation not retrieved",
			c:         Case{ID: "a", RelevantIDs: []string{"d1", "d2"}, AllowedIDs: []string{"d1", "d2"}},
			r:         Result{ID: "a", RetrievedIDs: []string{"d1"}, CitedIDs: []string{"d2"}},
			k:         10,
			forbidden: []string{}, invalidCites: []string{"d2"},
			recall: ptr(0.5), fill: ptr(0.5), rr: ptr(1),
			outcome: OutcomeSupported,
		},
		{
			// Abstaining does not undo a leak: a forbidden retrieval on a
			// required-block case is a disclosure.
			name:      "required block with forbidden retrieval is a disclosure",
			c:         Case{ID: "a", RelevantIDs: []string{}, AllowedIDs: []string{"pub"}, MustAbstain: true},
			r:         Result{ID: "a", RetrievedIDs: []string{"pub", "secret"}, CitedIDs: []string{}, Abstained: true},
			k:         10,
			forbidden: []string{"secret"}, invalidCites: []string{},
			recall: nil, fill: ptr(1), rr: nil,
			outcome: OutcomeDisclosure,
		},
		{
			name:      "required block answered without leak",
			c:         Case{ID: "a", RelevantIDs: []string{}, AllowedIDs: []string{"pub"}, MustAbstain: true},
			r:         Result{ID: "a", RetrievedIDs: []string{"pub"}, CitedIDs: []string{"pub"}},
			k:         10,
			forbidden: []string{}, invalidCites: []string{},
			recall: nil, fill: ptr(1), rr: nil,
			outcome: OutcomeFailedToAbstain,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := scoreCase(tt.c, tt.r, tt.k)
			if !reflect.DeepEqual(got.ForbiddenIDs, tt.forbidden) {
				t.Errorf("forbidden_ids = %q, want %q", got.ForbiddenIDs, tt.forbidden)
			}
			if !reflect.DeepEqual(got.InvalidCitations, tt.invalidCites) {
				t.Errorf("invalid citations = %q, want %q", got.InvalidCitations, tt.invalidCites)
			}
			if got.DuplicateCount != tt.dups {
				t.Errorf("duplicate_count = %d, want %d", got.DuplicateCount, tt.dups)
			}
			if !eqFloat(got.RecallAtK, tt.recall) {
				t.Errorf("recall_at_k = %v, want %v", show(got.RecallAtK), show(tt.recall))
			}
			if !eqFloat(got.FillAtK, tt.fill) {
				t.Errorf("fill_at_k = %v, want %v", show(got.FillAtK), show(tt.fill))
			}
			if !eqFloat(got.ReciprocalRank, tt.rr) {
				t.Errorf("reciprocal_rank = %v, want %v", show(got.ReciprocalRank), show(tt.rr))
			}
			if got.Outcome != tt.outcome {
				t.Errorf("outcome = %q, want %q", got.Outcome, tt.outcome)
			}
		})
	}
}

// scoreCase scores one v1 case through the v2 engine, as Evaluate does.
func scoreCase(c Case, r Result, k int) CaseScore {
	c2, r2 := c.V2(), r.V2()
	s := newScorer(k, nil).score(&c2.Expected, &r2)
	return s.caseScore(&caseRec{id: c2.ID, persona: c2.Persona, stratum: c2.Stratum, action: c2.Expected.Action})
}
