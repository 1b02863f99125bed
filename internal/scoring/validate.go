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
	for _, t := range []struct {
		name string
		v    *float64
	}{
		{"min recall", opts.MinRecall}, {"min MRR", opts.MinMRR}, {"min utility", opts.MinUtility},
		{"max false-block rate", opts.MaxFalseBlockRate}, {"max stale rate", opts.MaxStaleRate},
	} {
		if err := checkThreshold(t.name, t.v); err != nil {
			return opts, err
		}
	}
	if opts.MaxDisclosures < 0 || opts.MaxInvalidCitations < 0 {
		return opts, fmt.Errorf("%w: tolerances must not be negative", ErrInvalidOptions)
	}
	return opts, nil
}

func checkThreshold(name string, v *float64) error {
	if v != nil && (math.IsNaN(*v) || *v < 0 || *v > 1) {
		return fmt.Errorf("%w: %s must be within [0,1], got %v", ErrInvalidOptions, name, *v)
	}
	return nil
}

// checkCaseV1 checks a v1 case on its own with the v1 field names.
func checkCaseV1(c Case, i int, ps *problems) {
	if c.ID == "" {
		ps.add(KindCase, i, "", "missing id")
		return
	}
	checkIDList(ps, KindCase, i, c.ID, "relevant_ids", c.RelevantIDs, true)
	checkIDList(ps, KindCase, i, c.ID, "allowed_ids", c.AllowedIDs, true)
	for i, id := range c.RelevantIDs {
		if id != "" && !in(c.AllowedIDs, id) && !in(c.RelevantIDs[:i], id) {
			// Relevant evidence the persona may not see would make
			// recall unreachable and supported answers disclosures.
			ps.add(KindCase, i, c.ID, "relevant id %q is not in allowed_ids", id)
		}
	}
}

// checkIDList rejects empty IDs and, for evidence sets, repeats: a repeated
// relevant ID would inflate the recall denominator.
func checkIDList(ps *problems, kind Kind, index int, owner, field string, ids []string, unique bool) {
	if len(ids) <= 32 {
		// Evidence lists are short: a scan beats a map.
		for i, id := range ids {
			if id == "" {
				ps.add(kind, index, owner, "%s contains an empty id", field)
				return
			}
			if unique && in(ids[:i], id) {
				ps.add(kind, index, owner, "%s lists %q more than once", field, id)
				return
			}
		}
		return
	}
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
