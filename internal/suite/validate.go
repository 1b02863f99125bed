package suite

import (
	"fmt"
	"strings"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// Bounds that ConfigMap cases must meet, as the CRD enforces for inline
// cases. ConfigMap contents bypass the API server's schema, so they are
// checked here with the same numbers.
const (
	maxCaseIDLength      = 128
	maxExpectations      = 32
	maxRelevantIDs       = 100
	maxAllowedIDs        = 500
	maxEvidenceIDLength  = 256
	maxPersonaNameLength = 253
)

// Validate checks what the API server cannot: relevant ⊆ allowed, case IDs
// unique across inline cases and every ConfigMap, and the CRD's own rules
// for cases that came from a ConfigMap. origins[i] names where cases[i]
// came from, for the message. A failure is a *Problem naming the case.
func Validate(cases []v1alpha1.EvalCase, origins []string) error {
	if len(cases) == 0 {
		// An empty suite would pass every gate vacuously.
		return problem(ReasonInvalidCases, "the suite has no cases: add spec.cases or caseSources with at least one case")
	}
	seen := make(map[string]string, len(cases))
	var msgs []string
	for i, c := range cases {
		if where, dup := seen[c.ID]; dup && c.ID != "" {
			msgs = append(msgs, fmt.Sprintf("case %q in %s duplicates the case in %s", c.ID, origins[i], where))
			continue
		}
		seen[c.ID] = origins[i]
		if msg := checkCase(c); msg != "" {
			msgs = append(msgs, fmt.Sprintf("case %q in %s: %s", c.ID, origins[i], msg))
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	if len(msgs) > maxProblemsInMessage {
		msgs = append(msgs[:maxProblemsInMessage], fmt.Sprintf("and %d more", len(msgs)-maxProblemsInMessage))
	}
	return problem(ReasonInvalidCases, "%s", strings.Join(msgs, "; "))
}

// checkCase returns what is wrong with one case, or "".
func checkCase(c v1alpha1.EvalCase) string {
	switch {
	case c.ID == "" || len(c.ID) > maxCaseIDLength:
		return fmt.Sprintf("id must be 1 to %d characters", maxCaseIDLength)
	case strings.TrimSpace(c.Question) == "":
		return "question is empty"
	case len(c.Expectations) == 0 || len(c.Expectations) > maxExpectations:
		return fmt.Sprintf("needs 1 to %d expectations", maxExpectations)
	}
	personas := map[string]bool{}
	for _, e := range c.Expectations {
		if personas[e.Persona] {
			return fmt.Sprintf("persona %q has two expectations", e.Persona)
		}
		personas[e.Persona] = true
		if msg := checkExpectation(e); msg != "" {
			return fmt.Sprintf("persona %q: %s", e.Persona, msg)
		}
	}
	return ""
}

// checkExpectation enforces the evidence-set rules the scoring engine
// relies on; failing them here keeps a run from failing mid-way.
func checkExpectation(e v1alpha1.Expectation) string {
	if e.Persona == "" || len(e.Persona) > maxPersonaNameLength {
		return "persona name is empty or too long"
	}
	if len(e.RelevantIDs) > maxRelevantIDs || len(e.AllowedIDs) > maxAllowedIDs {
		return fmt.Sprintf("at most %d relevantIDs and %d allowedIDs", maxRelevantIDs, maxAllowedIDs)
	}
	if msg := checkIDs("allowedIDs", e.AllowedIDs); msg != "" {
		return msg
	}
	if msg := checkIDs("relevantIDs", e.RelevantIDs); msg != "" {
		return msg
	}
	allowed := make(map[string]bool, len(e.AllowedIDs))
	for _, id := range e.AllowedIDs {
		allowed[id] = true
	}
	for _, id := range e.RelevantIDs {
		if !allowed[id] {
			// Relevant evidence the persona may not see would make recall
			// unreachable and a supported answer a disclosure.
			return fmt.Sprintf("relevant ID %q is not in allowedIDs", id)
		}
	}
	return ""
}

func checkIDs(field string, ids []string) string {
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		switch {
		case id == "" || len(id) > maxEvidenceIDLength:
			return fmt.Sprintf("%s holds an empty or overlong ID", field)
		case seen[id]:
			return fmt.Sprintf("%s lists %q twice", field, id)
		}
		seen[id] = true
	}
	return ""
}
