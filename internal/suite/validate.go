package suite

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
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
		return problem(v1alpha1.ReasonInvalidCases, "the suite has no cases: add spec.cases or caseSources with at least one case")
	}
	if len(cases) > MaxSuiteCases {
		return problem(v1alpha1.ReasonInvalidCases, "the suite has %d cases across spec.cases and caseSources, more than the %d allowed",
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
	return problem(v1alpha1.ReasonInvalidCases, "%s", strings.Join(msgs, "; "))
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
	if c.AsOf != "" {
		if _, err := time.Parse(time.RFC3339, c.AsOf); err != nil {
			return fmt.Sprintf("asOf %q is not an RFC 3339 time (for example 2026-10-01T00:00:00+09:00)", clip(c.AsOf, 64))
		}
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
	if IsV2(e) {
		return checkV2(e)
	}
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

// IsV2 reports whether an expectation uses the v2 fields (an action).
func IsV2(e v1alpha1.Expectation) bool { return e.Action != "" }

// v2 bounds, the CRD's MaxItems on the v2 expectation fields.
const (
	maxRequiredAnyOf    = 16
	maxForbiddenMarkers = 32
	maxMarkerLength     = 256
	maxPublicClass      = 63
)

var (
	validActions = []v1alpha1.ExpectedAction{v1alpha1.ActionAnswer, v1alpha1.ActionBlock, v1alpha1.ActionNotFound,
		v1alpha1.ActionNotApplicable, v1alpha1.ActionClarify, v1alpha1.ActionConflict}
	validReasons = []v1alpha1.InternalReason{"NO_EVIDENCE", "OUT_OF_SCOPE", "UNAUTHORIZED", "STALE_ONLY",
		"CONFLICTING_EVIDENCE", "INSUFFICIENT_CONFIDENCE"}
	publicClass = regexp.MustCompile(`^[a-z0-9_]*$`)
)

// checkV2 enforces the CRD's rules on a v2 expectation (ConfigMap cases
// bypass them) and the evidence-set rules that need no fixture: required,
// alternative and expected-citation evidence inside allowedEvidence when
// it is given. With a fixture deriving allowedEvidence, CheckDerived
// checks the same after derivation.
func checkV2(e v1alpha1.Expectation) string {
	if !slices.Contains(validActions, e.Action) {
		return fmt.Sprintf("action %q is unknown: use answer, block, not_found, not_applicable, clarify or conflict", clip(string(e.Action), 32))
	}
	if e.InternalReason != "" && !slices.Contains(validReasons, e.InternalReason) {
		return fmt.Sprintf("internalReason %q is unknown: use NO_EVIDENCE, OUT_OF_SCOPE, UNAUTHORIZED, STALE_ONLY, CONFLICTING_EVIDENCE or INSUFFICIENT_CONFIDENCE",
			clip(string(e.InternalReason), 32))
	}
	if len(e.RelevantIDs) > 0 || len(e.AllowedIDs) > 0 || e.MustAbstain {
		return "action (v2) must not be combined with relevantIDs, allowedIDs or mustAbstain (v1): use allowedEvidence and requiredEvidence"
	}
	for _, l := range []struct {
		field string
		ids   []string
		max   int
	}{
		{"allowedEvidence", e.AllowedEvidence, maxAllowedIDs},
		{"requiredEvidence", e.RequiredEvidence, maxRelevantIDs},
		{"forbiddenEvidence", e.ForbiddenEvidence, maxAllowedIDs},
		{"supersededEvidence", e.SupersededEvidence, maxRelevantIDs},
		{"expectedCitations", e.ExpectedCitations, maxRelevantIDs},
	} {
		if len(l.ids) > l.max {
			return fmt.Sprintf("%s holds %d IDs, more than %d", l.field, len(l.ids), l.max)
		}
		if msg := checkIDs(l.field, l.ids); msg != "" {
			return msg
		}
	}
	if len(e.RequiredAnyOf) > maxRequiredAnyOf {
		return fmt.Sprintf("requiredAnyOf holds %d sets, more than %d", len(e.RequiredAnyOf), maxRequiredAnyOf)
	}
	for i, set := range e.RequiredAnyOf {
		if len(set) == 0 || len(set) > maxRequiredAnyOf {
			return fmt.Sprintf("requiredAnyOf[%d] must hold 1 to %d IDs", i, maxRequiredAnyOf)
		}
		if msg := checkIDs(fmt.Sprintf("requiredAnyOf[%d]", i), set); msg != "" {
			return msg
		}
	}
	if len(e.ForbiddenMarkers) > maxForbiddenMarkers {
		return fmt.Sprintf("forbiddenMarkers holds %d markers, more than %d", len(e.ForbiddenMarkers), maxForbiddenMarkers)
	}
	for i, m := range e.ForbiddenMarkers {
		if msg := checkLength(fmt.Sprintf("forbiddenMarkers[%d]", i), m, maxMarkerLength); msg != "" {
			return msg
		}
	}
	if n := utf8.RuneCountInString(e.PublicResponseClass); n > maxPublicClass || !publicClass.MatchString(e.PublicResponseClass) {
		return fmt.Sprintf("publicResponseClass %q must be at most %d characters of a-z, 0-9 and '_'", clip(e.PublicResponseClass, 63), maxPublicClass)
	}
	if e.AllowedEvidence != nil {
		return CheckDerived(e, e.AllowedEvidence)
	}
	return ""
}

// CheckDerived checks that required, alternative and expected-citation
// evidence lie inside allowed (given or derived from a fixture), naming the
// field and the ID: evidence the persona may not see can never support an
// answer, so such a case could only fail.
func CheckDerived(e v1alpha1.Expectation, allowed []string) string {
	in := make(map[string]bool, len(allowed))
	for _, id := range allowed {
		in[id] = true
	}
	for _, id := range e.RequiredEvidence {
		if !in[id] {
			return fmt.Sprintf("requiredEvidence %q is not in allowedEvidence", id)
		}
	}
	for i, set := range e.RequiredAnyOf {
		for _, id := range set {
			if !in[id] {
				return fmt.Sprintf("requiredAnyOf[%d] %q is not in allowedEvidence", i, id)
			}
		}
	}
	for _, id := range e.ExpectedCitations {
		if !in[id] {
			return fmt.Sprintf("expectedCitations %q is not in allowedEvidence", id)
		}
	}
	return ""
}
