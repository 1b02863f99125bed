package scoring

// Action is what a case expects the system to do, and — in a result's
// Response — what the system declared it did. The same vocabulary is used by
// the driver contract's AnswerResult.status.
type Action string

// Actions. Blocked is a policy status, not found a bounded search result,
// not applicable a scope rule, clarify an ambiguous request, conflict
// disagreeing eligible sources: each is scored on its own, never pooled.
const (
	ActionAnswer        Action = "answer"
	ActionBlock         Action = "block"
	ActionNotFound      Action = "not_found"
	ActionNotApplicable Action = "not_applicable"
	ActionClarify       Action = "clarify"
	ActionConflict      Action = "conflict"
)

// Actions lists every valid Action in a fixed order.
var Actions = []Action{ActionAnswer, ActionBlock, ActionNotFound, ActionNotApplicable, ActionClarify, ActionConflict}

// StatusActions are the expected actions scored as correct_status or
// wrong_status, each with its own correct-abstention rate.
var StatusActions = []Action{ActionNotFound, ActionNotApplicable, ActionClarify, ActionConflict}

// Valid reports whether a is in the vocabulary.
func (a Action) Valid() bool {
	for _, v := range Actions {
		if a == v {
			return true
		}
	}
	return false
}

// IsStatus reports whether a is one of StatusActions.
func (a Action) IsStatus() bool {
	for _, v := range StatusActions {
		if a == v {
			return true
		}
	}
	return false
}

// ReasonCode is an internal reason for not answering. It is an annotation
// for evaluators; a system should not show it verbatim to the reader.
type ReasonCode string

// Reason codes.
const (
	ReasonNoEvidence             ReasonCode = "NO_EVIDENCE"
	ReasonOutOfScope             ReasonCode = "OUT_OF_SCOPE"
	ReasonUnauthorized           ReasonCode = "UNAUTHORIZED"
	ReasonStaleOnly              ReasonCode = "STALE_ONLY"
	ReasonConflictingEvidence    ReasonCode = "CONFLICTING_EVIDENCE"
	ReasonInsufficientConfidence ReasonCode = "INSUFFICIENT_CONFIDENCE"
)

// ReasonCodes lists every valid ReasonCode.
var ReasonCodes = []ReasonCode{ReasonNoEvidence, ReasonOutOfScope, ReasonUnauthorized,
	ReasonStaleOnly, ReasonConflictingEvidence, ReasonInsufficientConfidence}

// Valid reports whether r is in the vocabulary.
func (r ReasonCode) Valid() bool {
	for _, v := range ReasonCodes {
		if r == v {
			return true
		}
	}
	return false
}

// CaseV2 is one evaluation question for one persona in the v2 case format.
// JSON names are the file format (docs/eval.md). A v1 case is mapped onto
// this model by Case.V2, so there is one engine for both formats.
type CaseV2 struct {
	// ID identifies the case; a result is matched to its case by this ID.
	ID string `json:"id"`
	// Question is carried for humans and drivers; scoring does not read it.
	Question string `json:"question"`
	// Persona is who asks; empty means no persona (see NoPersona).
	Persona string `json:"persona,omitempty"`
	// Stratum is an optional reporting slice.
	Stratum string `json:"stratum,omitempty"`
	// AsOf, when set, is the RFC 3339 time the question is about. It is kept
	// as written; ValidateCase parses it.
	AsOf string `json:"as_of,omitempty"`
	// Expected is what a defensible system does for this persona.
	Expected Expected `json:"expected"`
}

// Expected holds a case's expected action and its evidence sets.
type Expected struct {
	// Action is the defensible action for this persona.
	Action Action `json:"action"`
	// AllowedEvidence is what the persona may see at AsOf. nil means "not
	// given": a fixture derives it (see FillEvidence); scoring refuses a
	// case whose allowed set is still nil. [] means "nothing".
	AllowedEvidence []string `json:"allowed_evidence"`
	// RequiredEvidence is the recall target; a subset of AllowedEvidence.
	RequiredEvidence []string `json:"required_evidence,omitempty"`
	// RequiredAnyOf are alternative sufficient sets: citing every ID of any
	// one of them supports the answer. Each set ⊆ AllowedEvidence.
	RequiredAnyOf [][]string `json:"required_any_of,omitempty"`
	// ForbiddenEvidence is explicitly forbidden; anything outside
	// AllowedEvidence ∪ SupersededEvidence is forbidden too.
	ForbiddenEvidence []string `json:"forbidden_evidence,omitempty"`
	// SupersededEvidence are versions the persona may read but that are not
	// valid at AsOf: support only from them is "stale", not a disclosure.
	// nil means "not given" (a fixture may derive it), like AllowedEvidence.
	SupersededEvidence []string `json:"superseded_evidence,omitempty"`
	// ExpectedCitations are the citations a supported answer should carry;
	// citing them counts as supporting. Each ⊆ AllowedEvidence.
	ExpectedCitations []string `json:"expected_citations,omitempty"`
	// InternalReason is an optional annotation of why the action is not
	// "answer"; never scored against what the system shows the reader.
	InternalReason ReasonCode `json:"internal_reason,omitempty"`
	// PublicResponseClass is an optional annotation of the permitted public
	// explanation (e.g. insufficient_available_information).
	PublicResponseClass string `json:"public_response_class,omitempty"`
	// ForbiddenMarkers is text that must never appear in this persona's
	// answer (compared case-insensitively).
	ForbiddenMarkers []string `json:"forbidden_markers,omitempty"`
}

// ResultV2 is what the system under test did for one case, v2 format.
type ResultV2 struct {
	// ID is the ID of the case this result answers.
	ID string `json:"id"`
	// RetrievedIDs is the ranked retrieval list, best first.
	RetrievedIDs []string `json:"retrieved_ids"`
	// CitedIDs are the documents the answer cites.
	CitedIDs []string `json:"cited_ids"`
	// Response is the action the system declared. Empty means "answer" when
	// it cites something, else "not_found" (see DeclaredAction).
	Response Action `json:"response,omitempty"`
	// AnswerText is the answer as the reader saw it; searched for forbidden
	// markers and forbidden documents' text.
	AnswerText string `json:"answer_text,omitempty"`
	// LatencyMS is how long the system took, in milliseconds; nil when not
	// measured (it is then left out of the latency percentiles).
	LatencyMS *float64 `json:"latency_ms,omitempty"`
}

// DeclaredAction is the result's response with the documented default.
func (r *ResultV2) DeclaredAction() Action {
	if r.Response != "" {
		return r.Response
	}
	if len(r.CitedIDs) > 0 {
		return ActionAnswer
	}
	return ActionNotFound
}

// V2 maps a v1 case onto the v2 model: must_abstain is a block, otherwise an
// answer whose required evidence is relevant_ids.
func (c Case) V2() CaseV2 {
	out := CaseV2{ID: c.ID, Question: c.Question, Persona: c.Persona,
		Expected: Expected{Action: ActionAnswer, AllowedEvidence: c.AllowedIDs, RequiredEvidence: c.RelevantIDs}}
	if out.Expected.AllowedEvidence == nil {
		out.Expected.AllowedEvidence = []string{}
	}
	if c.MustAbstain {
		out.Expected.Action = ActionBlock
	}
	return out
}

// V2 maps a v1 result onto the v2 model: an abstention is a declared block.
func (r Result) V2() ResultV2 {
	out := ResultV2{ID: r.ID, RetrievedIDs: r.RetrievedIDs, CitedIDs: r.CitedIDs, Response: ActionAnswer}
	if r.Abstained {
		out.Response = ActionBlock
	}
	return out
}
