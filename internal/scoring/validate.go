package scoring

import (
	"fmt"
	"math"
)

// resolveOptions checks opts and fills in defaults. It is separate from input
// validation because a bad option is the caller's bug, not the export's.
func resolveOptions(opts Options) (Options, error) {
	if opts.K < 0 {
		return opts, fmt.Errorf("%w: k must be at least 1, got %d", ErrInvalidOptions, opts.K)
	}
	if opts.K == 0 {
		opts.K = DefaultK
	}
	if err := checkThreshold("min recall", opts.MinRecall); err != nil {
		return opts, err
	}
	if err := checkThreshold("min MRR", opts.MinMRR); err != nil {
		return opts, err
	}
	return opts, nil
}

func checkThreshold(name string, v *float64) error {
	if v != nil && (math.IsNaN(*v) || *v < 0 || *v > 1) {
		return fmt.Errorf("%w: %s must be within [0,1], got %v", ErrInvalidOptions, name, *v)
	}
	return nil
}

// validateInput checks cases and results against each other and returns the
// results indexed by case ID. Every problem is collected so one run shows
// everything that is wrong with an export.
func validateInput(cases []Case, results []Result) (map[string]Result, error) {
	var ps problems
	if len(cases) == 0 {
		// An empty suite would pass every gate vacuously.
		ps.add(KindInput, -1, "", "no cases to evaluate")
	}
	caseIDs := validateCases(cases, &ps)
	byID := validateResults(results, caseIDs, &ps)
	for i, c := range cases {
		if _, ok := byID[c.ID]; c.ID != "" && !ok {
			// A missing result is an error, never a skip: otherwise a
			// truncated export could only raise the averages.
			ps.add(KindCase, i, c.ID, "has no result")
		}
	}
	return byID, ps.err()
}

// validateCases checks each case on its own and for duplicate IDs, returning
// the set of usable case IDs.
func validateCases(cases []Case, ps *problems) map[string]bool {
	ids := make(map[string]bool, len(cases))
	for i, c := range cases {
		if c.ID == "" {
			ps.add(KindCase, i, "", "missing id")
			continue
		}
		if ids[c.ID] {
			ps.add(KindCase, i, c.ID, "duplicate case id")
		}
		ids[c.ID] = true
		checkIDList(ps, KindCase, i, c.ID, "relevant_ids", c.RelevantIDs, true)
		checkIDList(ps, KindCase, i, c.ID, "allowed_ids", c.AllowedIDs, true)
		allowed := set(c.AllowedIDs)
		for _, id := range distinct(c.RelevantIDs) {
			if id != "" && !allowed[id] {
				// Relevant evidence the persona may not see would make
				// recall unreachable and supported answers disclosures.
				ps.add(KindCase, i, c.ID, "relevant id %q is not in allowed_ids", id)
			}
		}
	}
	return ids
}

// validateResults checks each result and indexes them by ID.
func validateResults(results []Result, caseIDs map[string]bool, ps *problems) map[string]Result {
	byID := make(map[string]Result, len(results))
	for i, r := range results {
		if r.ID == "" {
			ps.add(KindResult, i, "", "missing id")
			continue
		}
		if _, dup := byID[r.ID]; dup {
			ps.add(KindResult, i, r.ID, "duplicate result id")
			continue
		}
		byID[r.ID] = r
		if !caseIDs[r.ID] {
			ps.add(KindResult, i, r.ID, "no case with this id")
		}
		// Repeats are allowed here: retrieved duplicates are scored, and a
		// repeated citation cites nothing new.
		checkIDList(ps, KindResult, i, r.ID, "retrieved_ids", r.RetrievedIDs, false)
		checkIDList(ps, KindResult, i, r.ID, "cited_ids", r.CitedIDs, false)
	}
	return byID
}

// checkIDList rejects empty IDs and, for evidence sets, repeats: a repeated
// relevant ID would inflate the recall denominator.
func checkIDList(ps *problems, kind Kind, index int, owner, field string, ids []string, unique bool) {
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if id == "" {
			ps.add(kind, index, owner, "%s contains an empty id", field)
			return
		}
		if unique && seen[id] {
			ps.add(kind, index, owner, "%s lists %q more than once", field, id)
			return
		}
		seen[id] = true
	}
}
