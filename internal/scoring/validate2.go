package scoring

import (
	"strings"
	"time"
)

// ValidateCase checks one v2 case on its own — action, reason code, as_of,
// the evidence sets and how they relate — and returns a *ValidationError
// naming the case and the field, or nil. With fixtureDerived, allowed and
// superseded evidence may still be missing (nil): a fixture fills them
// before scoring (FillEvidence). Cross-case checks (duplicate IDs, missing
// results) are the engine's.
func ValidateCase(c *CaseV2, fixtureDerived bool) error {
	var ps problems
	checkCaseV2(c, -1, fixtureDerived, &ps)
	return ps.err()
}

// checkCaseV2 records every problem of one v2 case.
func checkCaseV2(c *CaseV2, index int, fixtureDerived bool, ps *problems) {
	add := func(format string, args ...any) { ps.add(KindCase, index, c.ID, format, args...) }
	if c.ID == "" {
		add("missing id")
	}
	e := &c.Expected
	if !e.Action.Valid() {
		add("expected.action %q is not one of answer, block, not_found, not_applicable, clarify, conflict", e.Action)
	}
	if e.InternalReason != "" && !e.InternalReason.Valid() {
		add("expected.internal_reason %q is not one of NO_EVIDENCE, OUT_OF_SCOPE, UNAUTHORIZED, STALE_ONLY, CONFLICTING_EVIDENCE, INSUFFICIENT_CONFIDENCE", e.InternalReason)
	}
	if c.AsOf != "" {
		if _, err := time.Parse(time.RFC3339, c.AsOf); err != nil {
			add("as_of %q is not an RFC 3339 time (e.g. 2026-10-01T00:00:00+09:00)", c.AsOf)
		}
	}
	if e.AllowedEvidence == nil && !fixtureDerived {
		// Without an allowed set everything would be forbidden; [] must be
		// written to say "this persona may see nothing".
		add("expected.allowed_evidence is required (only a fixture case may leave it out); write [] for none")
	}
	lists := []struct {
		field string
		ids   []string
	}{
		{"expected.allowed_evidence", e.AllowedEvidence},
		{"expected.required_evidence", e.RequiredEvidence},
		{"expected.forbidden_evidence", e.ForbiddenEvidence},
		{"expected.superseded_evidence", e.SupersededEvidence},
		{"expected.expected_citations", e.ExpectedCitations},
	}
	for _, l := range lists {
		checkIDList(ps, KindCase, index, c.ID, l.field, l.ids, true)
	}
	for i, alt := range e.RequiredAnyOf {
		if len(alt) == 0 {
			add("expected.required_any_of[%d] is empty; an empty set would make any answer supported", i)
		}
		checkIDList(ps, KindCase, index, c.ID, "expected.required_any_of", alt, true)
	}
	for i, m := range e.ForbiddenMarkers {
		if strings.TrimSpace(m) == "" {
			add("expected.forbidden_markers[%d] is empty; it would match every answer", i)
		}
	}
	if e.AllowedEvidence == nil {
		// The subset checks need the allowed set; they run again once the
		// fixture has filled it in.
		return
	}
	allowed := func(id string) bool { return in(e.AllowedEvidence, id) }
	mustBeAllowed := func(field string, ids []string) {
		for _, id := range ids {
			if id != "" && !allowed(id) {
				add("%s %q is not in expected.allowed_evidence", field, id)
			}
		}
	}
	mustBeAllowed("expected.required_evidence", e.RequiredEvidence)
	for i, alt := range e.RequiredAnyOf {
		for _, id := range alt {
			if id != "" && !allowed(id) {
				add("expected.required_any_of[%d] %q is not in expected.allowed_evidence", i, id)
			}
		}
	}
	mustBeAllowed("expected.expected_citations", e.ExpectedCitations)
	for _, id := range e.SupersededEvidence {
		if allowed(id) {
			add("expected.superseded_evidence %q is also in expected.allowed_evidence; a version is either valid at as_of or superseded", id)
		}
	}
	for _, id := range e.ForbiddenEvidence {
		if allowed(id) || in(e.SupersededEvidence, id) {
			add("expected.forbidden_evidence %q is also allowed or superseded", id)
		}
	}
}

// checkResultV2 records every problem of one v2 result on its own.
func checkResultV2(r *ResultV2, index int, ps *problems) {
	if r.ID == "" {
		ps.add(KindResult, index, "", "missing id")
		return
	}
	if r.Response != "" && !r.Response.Valid() {
		ps.add(KindResult, index, r.ID, "response %q is not one of answer, block, not_found, not_applicable, clarify, conflict", r.Response)
	}
	if r.LatencyMS != nil && !(*r.LatencyMS >= 0) {
		ps.add(KindResult, index, r.ID, "latency_ms must be a number >= 0")
	}
	// Repeats are allowed: retrieved duplicates are scored, and a repeated
	// citation cites nothing new.
	checkIDList(ps, KindResult, index, r.ID, "retrieved_ids", r.RetrievedIDs, false)
	checkIDList(ps, KindResult, index, r.ID, "cited_ids", r.CitedIDs, false)
}

// Interval is a half-open validity interval [From, To); a zero From or To is
// unbounded on that side.
type Interval struct {
	From, To time.Time
}

// Contains reports whether t is inside the interval.
func (i Interval) Contains(t time.Time) bool {
	return (i.From.IsZero() || !t.Before(i.From)) && (i.To.IsZero() || t.Before(i.To))
}

// Empty reports whether the interval holds no instant (To ≤ From).
func (i Interval) Empty() bool {
	return !i.From.IsZero() && !i.To.IsZero() && !i.To.After(i.From)
}

// Overlaps reports whether two half-open intervals share an instant; [a, b)
// and [b, c) do not.
func (i Interval) Overlaps(j Interval) bool {
	startsBeforeJEnds := i.From.IsZero() || j.To.IsZero() || i.From.Before(j.To)
	jStartsBeforeIEnds := j.From.IsZero() || i.To.IsZero() || j.From.Before(i.To)
	return startsBeforeJEnds && jStartsBeforeIEnds && !i.Empty() && !j.Empty()
}

// FirstOverlap returns the indexes of the first two overlapping intervals,
// for fixtures that give one document several versions: at any instant at
// most one version may be valid. ok is false when none overlap.
func FirstOverlap(ivs []Interval) (a, b int, ok bool) {
	for i := range ivs {
		for j := i + 1; j < len(ivs); j++ {
			if ivs[i].Overlaps(ivs[j]) {
				return i, j, true
			}
		}
	}
	return 0, 0, false
}
