package suite

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// The EvalSuite CRD's bounds on cases (the markers in
// api/v1alpha1/evalsuite_types.go). ConfigMap cases bypass the API server's
// schema, so they are checked here with the same numbers; a case the CRD
// would reject would otherwise surface later as a SuiteRun status the API
// server refuses, and the run would execute again and again.
// TestBoundsMatchCRD compares each one with the generated CRD.
const (
	// maxCasesPerList is spec.cases' MaxItems; each ConfigMap key is held
	// to it too, as it is a list of the same kind.
	maxCasesPerList = 200
	// maxCaseSources is spec.caseSources' MaxItems.
	maxCaseSources       = 16
	maxCaseIDLength      = 128
	maxQuestionLength    = 4096
	maxStratumLength     = 63
	maxExpectations      = 32
	maxPersonaNameLength = 253
	maxRelevantIDs       = 100
	maxAllowedIDs        = 500
	maxEvidenceIDLength  = 256
)

// personaNamePattern is Expectation.persona's CRD pattern: a DNS subdomain,
// like every object name.
const personaNamePattern = `^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`

var personaName = regexp.MustCompile(personaNamePattern)

// MaxSuiteCases is the most cases one suite may hold across spec.cases and
// every case source: a full inline list plus a full list per source. It
// bounds a run's executions (each case runs once per persona, at most
// maxExpectations times) and the memory a run holds.
const MaxSuiteCases = maxCasesPerList * (1 + maxCaseSources)

// Validate checks what the API server cannot: relevant ⊆ allowed, case IDs
// unique across inline cases and every ConfigMap, and the CRD's own rules
// for cases that came from a ConfigMap (lengths count characters, as the
// API server does). origins[i] names where cases[i] came from, for the
// message. A failure is an InvalidCases *Problem naming the case and field.
func Validate(cases []v1alpha1.EvalCase, origins []string) error {
	if len(cases) == 0 {
		// An empty suite would pass every gate vacuously.
		return problem(ReasonInvalidCases, "the suite has no cases: add spec.cases or caseSources with at least one case")
	}
	if len(cases) > MaxSuiteCases {
		return problem(ReasonInvalidCases, "the suite has %d cases across spec.cases and caseSources, more than the %d allowed",
			len(cases), MaxSuiteCases)
	}
	msgs := checkListSizes(origins)
	seen := make(map[string]string, len(cases))
	for i, c := range cases {
		if where, dup := seen[c.ID]; dup && c.ID != "" {
			msgs = append(msgs, fmt.Sprintf("case %q in %s duplicates the case in %s", c.ID, origins[i], where))
			continue
		}
		seen[c.ID] = origins[i]
		if msg := checkCase(c); msg != "" {
			msgs = append(msgs, fmt.Sprintf("%s in %s: %s", caseName(c.ID, i), origins[i], msg))
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

// checkListSizes holds every origin (spec.cases, each ConfigMap key) to
// spec.cases' MaxItems, in order of first appearance.
func checkListSizes(origins []string) []string {
	var order []string
	counts := map[string]int{}
	for _, o := range origins {
		if counts[o] == 0 {
			order = append(order, o)
		}
		counts[o]++
	}
	var msgs []string
	for _, o := range order {
		if n := counts[o]; n > maxCasesPerList {
			msgs = append(msgs, fmt.Sprintf("%s holds %d cases, more than the %d a case list may hold (as spec.cases): split it across more ConfigMap keys",
				o, n, maxCasesPerList))
		}
	}
	return msgs
}

// caseName names a case in a message: by ID, clipped so an overlong ID does
// not flood the condition, or by position when it has none.
func caseName(id string, index int) string {
	if id == "" {
		return fmt.Sprintf("case #%d", index+1)
	}
	return fmt.Sprintf("case %q", clip(id, maxCaseIDLength))
}

// checkCase returns what is wrong with one case, naming the field, or "".
func checkCase(c v1alpha1.EvalCase) string {
	if msg := checkLength("id", c.ID, maxCaseIDLength); msg != "" {
		return msg
	}
	if strings.TrimSpace(c.Question) == "" {
		return "question must not be empty"
	}
	if msg := checkLength("question", c.Question, maxQuestionLength); msg != "" {
		return msg
	}
	if n := utf8.RuneCountInString(c.Stratum); n > maxStratumLength {
		return fmt.Sprintf("stratum is %d characters, more than %d", n, maxStratumLength)
	}
	if n := len(c.Expectations); n == 0 || n > maxExpectations {
		return fmt.Sprintf("expectations must list 1 to %d personas, got %d", maxExpectations, n)
	}
	personas := map[string]bool{}
	for i, e := range c.Expectations {
		if msg := checkPersonaName(fmt.Sprintf("expectations[%d].persona", i), e.Persona); msg != "" {
			return msg
		}
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

// checkLength rejects an empty or overlong required string.
func checkLength(field, s string, maxLen int) string {
	switch n := utf8.RuneCountInString(s); {
	case n == 0:
		return field + " must not be empty"
	case n > maxLen:
		return fmt.Sprintf("%s is %d characters, more than %d", field, n, maxLen)
	}
	return ""
}

func checkPersonaName(field, name string) string {
	if msg := checkLength(field, name, maxPersonaNameLength); msg != "" {
		return msg
	}
	if !personaName.MatchString(name) {
		return fmt.Sprintf("%s %q must be a lowercase DNS subdomain name (a-z, 0-9, '-' and '.')", field, clip(name, 63))
	}
	return ""
}

// checkExpectation enforces the CRD's list bounds and the evidence-set rules
// the scoring engine relies on; failing them here keeps a run from failing
// mid-way.
func checkExpectation(e v1alpha1.Expectation) string {
	if n := len(e.RelevantIDs); n > maxRelevantIDs {
		return fmt.Sprintf("relevantIDs holds %d IDs, more than %d", n, maxRelevantIDs)
	}
	if n := len(e.AllowedIDs); n > maxAllowedIDs {
		return fmt.Sprintf("allowedIDs holds %d IDs, more than %d", n, maxAllowedIDs)
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

// checkIDs enforces the item length and set semantics of an evidence list.
// An empty ID is rejected although the CRD allows it: the scoring engine
// cannot score one.
func checkIDs(field string, ids []string) string {
	seen := make(map[string]bool, len(ids))
	for i, id := range ids {
		if msg := checkLength(fmt.Sprintf("%s[%d]", field, i), id, maxEvidenceIDLength); msg != "" {
			return msg
		}
		if seen[id] {
			return fmt.Sprintf("%s lists %q twice", field, id)
		}
		seen[id] = true
	}
	return ""
}

// clip shortens s to at most n characters for a message.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
