package scoring

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

// answerCase is an answerable v2 case: doc-<id> is required and allowed.
func answerCase(id, persona string) CaseV2 {
	return CaseV2{ID: id, Question: "?", Persona: persona, Expected: Expected{
		Action: ActionAnswer, AllowedEvidence: []string{"doc-" + id, "faq"}, RequiredEvidence: []string{"doc-" + id}}}
}

// blockCase is a required-block v2 case: secret-<id> is forbidden.
func blockCase(id, persona string) CaseV2 {
	return CaseV2{ID: id, Question: "?", Persona: persona, Expected: Expected{
		Action: ActionBlock, AllowedEvidence: []string{"faq"}, ForbiddenEvidence: []string{"secret-" + id}}}
}

func supportedResult(id string) ResultV2 {
	return ResultV2{ID: id, RetrievedIDs: []string{"doc-" + id}, CitedIDs: []string{"doc-" + id}, Response: ActionAnswer}
}

func declared(id string, a Action) ResultV2 {
	return ResultV2{ID: id, RetrievedIDs: []string{}, CitedIDs: []string{}, Response: a}
}

func leakResult(id string) ResultV2 {
	return ResultV2{ID: id, RetrievedIDs: []string{"secret-" + id}, CitedIDs: []string{}, Response: ActionBlock}
}

// TestTable3 reproduces the protocol's Table 3 arithmetic: 40 answerable
// cases (public 20, internal 20) and 20 required-block cases (public 12,
// internal 8). Public: 14 supported, 6 false blocks, 2 disclosures.
// Internal: 16 supported, 4 false blocks, no disclosure.
func TestTable3(t *testing.T) {
	var cases []CaseV2
	var results []ResultV2
	add := func(persona string, answerable, supported, required, disclosures int) {
		for i := range answerable {
			id := fmt.Sprintf("%s-a%02d", persona, i)
			cases = append(cases, answerCase(id, persona))
			if i < supported {
				results = append(results, supportedResult(id))
			} else {
				results = append(results, declared(id, ActionBlock))
			}
		}
		for i := range required {
			id := fmt.Sprintf("%s-b%02d", persona, i)
			cases = append(cases, blockCase(id, persona))
			if i < disclosures {
				results = append(results, leakResult(id))
			} else {
				results = append(results, declared(id, ActionBlock))
			}
		}
	}
	add("public", 20, 14, 12, 2)
	add("internal", 20, 16, 8, 0)
	rep, err := EvaluateV2(cases, results, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name string
		got  Ratio
		want wantRatio
	}{
		{"overall utility", rep.Summary.Overall.Utility, frac(30, 40)},
		{"overall false-block rate", rep.Summary.Overall.FalseBlockRate, frac(10, 40)},
		{"overall disclosure rate", rep.Summary.Overall.DisclosureRate, frac(2, 20)},
		{"public utility", rep.Summary.Personas["public"].Utility, frac(14, 20)},
		{"public disclosure rate", rep.Summary.Personas["public"].DisclosureRate, frac(2, 12)},
		{"public false-block rate", rep.Summary.Personas["public"].FalseBlockRate, frac(6, 20)},
		{"internal utility", rep.Summary.Personas["internal"].Utility, frac(16, 20)},
		{"internal disclosure rate", rep.Summary.Personas["internal"].DisclosureRate, frac(0, 8)},
		{"internal false-block rate", rep.Summary.Personas["internal"].FalseBlockRate, frac(4, 20)},
	}
	for _, c := range checks {
		checkRatio(t, c.name, c.got, c.want)
	}
	if v := *rep.Summary.Overall.Utility.Value; v != 0.75 {
		t.Errorf("utility = %v, want 75%%", v)
	}
	if v := *rep.Summary.Overall.DisclosureRate.Value; v != 0.1 {
		t.Errorf("disclosure rate = %v, want 10%%", v)
	}
	// The disclosures fail the zero-tolerance gate, named for the public
	// persona only.
	g := rep.Gates[0]
	if g.Name != GateNoForbidden || g.Passed || len(g.Failures) != 1 || g.Failures[0].Persona != "public" || *g.Failures[0].Value != 2 {
		t.Errorf("no_forbidden gate = %+v", g)
	}
}

// TestOutcomesV2 pins one outcome per case × persona for every kind.
func TestOutcomesV2(t *testing.T) {
	travel := CaseV2{ID: "t", Question: "?", Persona: "employee", AsOf: "2026-10-01T00:00:00+09:00", Expected: Expected{
		Action:             ActionAnswer,
		AllowedEvidence:    []string{"travel-v3", "faq", "b-approval", "c-approval"},
		RequiredEvidence:   []string{"travel-v3"},
		SupersededEvidence: []string{"travel-v1", "travel-v2"},
		ForbiddenEvidence:  []string{"exec-travel-v3"},
		ExpectedCitations:  []string{"travel-v3"},
		ForbiddenMarkers:   []string{"Project Falcon"},
	}}
	alt := CaseV2{ID: "t", Question: "?", Expected: Expected{
		Action: ActionAnswer, AllowedEvidence: []string{"b-approval", "c-approval", "faq"},
		RequiredAnyOf: [][]string{{"b-approval"}, {"c-approval"}}}}
	block := CaseV2{ID: "t", Question: "?", Expected: Expected{
		Action: ActionBlock, AllowedEvidence: []string{}, ForbiddenEvidence: []string{"ma-project"},
		InternalReason: ReasonUnauthorized, ForbiddenMarkers: []string{"Falcon"}}}
	status := func(a Action) CaseV2 {
		return CaseV2{ID: "t", Question: "?", Expected: Expected{Action: a, AllowedEvidence: []string{"faq"}}}
	}
	r := func(resp Action, retrieved, cited []string, text string) ResultV2 {
		return ResultV2{ID: "t", RetrievedIDs: retrieved, CitedIDs: cited, Response: resp, AnswerText: text}
	}
	ids := func(s ...string) []string { return append([]string{}, s...) }
	tests := []struct {
		name  string
		c     CaseV2
		r     ResultV2
		texts map[string]string
		want  Outcome
		// leak is whether the case counts for the no_forbidden gate, is
		// flagged disclosed and counts as an affected answer.
		leak bool
	}{
		{"answer citing the valid version", travel, r(ActionAnswer, ids("travel-v3", "faq"), ids("travel-v3"), "90,000 yen"), nil, OutcomeSupported, false},
		{"answer citing only a superseded version is stale", travel, r(ActionAnswer, ids("travel-v2"), ids("travel-v2"), "80,000 yen"), nil, OutcomeStale, false},
		{"stale and valid cited together is unsupported, not stale", travel, r(ActionAnswer, ids("travel-v2", "travel-v3"), ids("travel-v2", "travel-v3"), ""), nil, OutcomeUnsupported, false},
		{"answer citing a non-supporting allowed document", travel, r(ActionAnswer, ids("faq"), ids("faq"), ""), nil, OutcomeUnsupported, false},
		{"answer without citations", travel, r(ActionAnswer, ids("travel-v3"), ids(), "90,000 yen"), nil, OutcomeUnsupported, false},
		{"forbidden id below k still leaks", travel, r(ActionAnswer, ids("travel-v3", "exec-travel-v3"), ids("travel-v3"), ""), nil, OutcomeUnsupported, true},
		{"forbidden marker in the answer leaks", travel, r(ActionAnswer, ids("travel-v3"), ids("travel-v3"), "see project falcon"), nil, OutcomeUnsupported, true},
		{"citing a forbidden id leaks", travel, r(ActionAnswer, ids("travel-v3"), ids("travel-v3", "exec-travel-v3"), ""), nil, OutcomeUnsupported, true},
		{"a false block that retrieved a forbidden id stays a false block", travel, r(ActionBlock, ids("exec-travel-v3"), ids(), ""), nil, OutcomeFalseBlock, true},
		{"declared block on an answerable case", travel, r(ActionBlock, ids(), ids(), ""), nil, OutcomeFalseBlock, false},
		{"declared not_found is kept apart from false blocks", travel, r(ActionNotFound, ids(), ids(), ""), nil, OutcomeMistakenNotFound, false},
		{"declared clarify on an answerable case", travel, r(ActionClarify, ids(), ids(), ""), nil, OutcomeWrongStatus, false},
		{"omitted response without citations is not_found", travel, r("", ids("faq"), ids(), ""), nil, OutcomeMistakenNotFound, false},
		{"omitted response with citations is an answer", travel, r("", ids("travel-v3"), ids("travel-v3"), ""), nil, OutcomeSupported, false},
		{"one alternative sufficient set", alt, r(ActionAnswer, ids("c-approval"), ids("c-approval"), ""), nil, OutcomeSupported, false},
		{"required block, declared block", block, r(ActionBlock, ids(), ids(), ""), nil, OutcomeJustifiedBlock, false},
		{"required block, neutral not_found", block, r(ActionNotFound, ids(), ids(), ""), nil, OutcomeJustifiedBlock, false},
		{"required block answered", block, r(ActionAnswer, ids(), ids(), "I think so"), nil, OutcomeFailedToAbstain, false},
		{"required block, forbidden id retrieved", block, r(ActionBlock, ids("ma-project"), ids(), ""), nil, OutcomeDisclosure, true},
		{"required block, id outside allowed retrieved", block, r(ActionBlock, ids("other"), ids(), ""), nil, OutcomeDisclosure, true},
		{"required block, marker in a refusal", block, r(ActionBlock, ids(), ids(), "I cannot discuss Falcon"), nil, OutcomeDisclosure, true},
		{"required block, forbidden document text", block, r(ActionBlock, ids(), ids(), "It says: acquire Acme."),
			map[string]string{"ma-project": "acquire Acme", "faq": "hello"}, OutcomeDisclosure, true},
		{"not_found declared", status(ActionNotFound), r(ActionNotFound, ids(), ids(), ""), nil, OutcomeCorrectStatus, false},
		{"not_found answered", status(ActionNotFound), r(ActionAnswer, ids("faq"), ids("faq"), ""), nil, OutcomeWrongStatus, false},
		{"not_applicable declared", status(ActionNotApplicable), r(ActionNotApplicable, ids(), ids(), ""), nil, OutcomeCorrectStatus, false},
		{"clarify declared as not_found", status(ActionClarify), r(ActionNotFound, ids(), ids(), ""), nil, OutcomeWrongStatus, false},
		{"conflict declared", status(ActionConflict), r(ActionConflict, ids("faq"), ids(), ""), nil, OutcomeCorrectStatus, false},
		{"not_found declared after retrieving outside allowed", status(ActionNotFound), r(ActionNotFound, ids("hr-secret"), ids(), ""), nil, OutcomeCorrectStatus, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := EvaluateV2([]CaseV2{tt.c}, []ResultV2{tt.r}, Options{DocumentTexts: tt.texts})
			if err != nil {
				t.Fatal(err)
			}
			if got := rep.Cases[0].Outcome; got != tt.want {
				t.Errorf("outcome = %q, want %q", got, tt.want)
			}
			if got := rep.Summary.Overall.Leaks == 1; got != tt.leak {
				t.Errorf("leak = %v, want %v (case %+v)", got, tt.leak, rep.Cases[0])
			}
			if got := rep.Cases[0].Disclosed; got != tt.leak {
				t.Errorf("disclosed = %v, want %v beside outcome %q", got, tt.leak, rep.Cases[0].Outcome)
			}
			if got := rep.Summary.Overall.AffectedAnswers == 1; got != tt.leak {
				t.Errorf("affected_answers = %d, want a count of %v", rep.Summary.Overall.AffectedAnswers, tt.leak)
			}
			if rep.Gates[0].Passed == tt.leak {
				t.Errorf("no_forbidden passed = %v with leak %v", rep.Gates[0].Passed, tt.leak)
			}
		})
	}
}

// TestRatesV2 pins the rates' numerators and denominators.
func TestRatesV2(t *testing.T) {
	lat := func(v float64) *float64 { return &v }
	cases := []CaseV2{
		answerCase("a1", "p"),
		answerCase("a2", "p"),
		{ID: "n1", Question: "?", Persona: "p", Stratum: "absence", Expected: Expected{Action: ActionNotFound, AllowedEvidence: []string{}}},
		{ID: "n2", Question: "?", Persona: "p", Stratum: "absence", Expected: Expected{Action: ActionNotFound, AllowedEvidence: []string{}}},
		{ID: "c1", Question: "?", Persona: "p", Stratum: "ambiguous", Expected: Expected{Action: ActionClarify, AllowedEvidence: []string{}}},
	}
	cases[1].Stratum = "temporal"
	results := []ResultV2{
		// Rank 2 hit, plus a citation of faq (allowed, not supporting) and
		// of doc-a1 which was retrieved: precision 1/2, validity 2/2.
		{ID: "a1", RetrievedIDs: []string{"faq", "doc-a1"}, CitedIDs: []string{"doc-a1", "faq"}, Response: ActionAnswer, LatencyMS: lat(100)},
		// Cites doc-a2 without retrieving it: invalid citation.
		{ID: "a2", RetrievedIDs: []string{"doc-a2"}, CitedIDs: []string{"doc-a2", "faq"}, Response: ActionAnswer, LatencyMS: lat(300)},
		{ID: "n1", RetrievedIDs: []string{}, CitedIDs: []string{}, Response: ActionNotFound, LatencyMS: lat(200)},
		{ID: "n2", RetrievedIDs: []string{}, CitedIDs: []string{}, Response: ActionBlock},
		{ID: "c1", RetrievedIDs: []string{}, CitedIDs: []string{}, Response: ActionClarify},
	}
	rep, err := EvaluateV2(cases, results, Options{K: 2})
	if err != nil {
		t.Fatal(err)
	}
	o := rep.Summary.Overall
	checkRatio(t, "citation precision", o.CitationPrecision, frac(2, 4))
	checkRatio(t, "citation validity", o.CitationValidity, frac(3, 4))
	checkRatio(t, "not_found", o.CorrectAbstention[ActionNotFound], frac(1, 2))
	checkRatio(t, "clarify", o.CorrectAbstention[ActionClarify], frac(1, 1))
	if r := o.CorrectAbstention[ActionConflict]; r.Value != nil || r.Denominator != 0 {
		t.Errorf("conflict = %+v, want null over 0", r)
	}
	if o.Answerable != 2 || o.Supported != 0 || o.Unsupported != 2 || o.InvalidCitationCases != 1 {
		t.Errorf("counts = %+v", o)
	}
	// Precision@2: a1 1 hit in 2 slots, a2 1 hit in 1 slot: mean 0.75.
	if got := o.PrecisionAtK; got.Denominator != 2 || *got.Value != 0.75 {
		t.Errorf("precision@k = %+v", got)
	}
	// nDCG@2: a1 hit at rank 2 → (1/log2 3)/1; a2 hit at rank 1 → 1.
	if got := o.NDCGAtK; got.Denominator != 2 || !close(*got.Value, (1/1.5849625007211563+1)/2) {
		t.Errorf("ndcg@k = %v", *got.Value)
	}
	if o.LatencyMS.Count != 3 || *o.LatencyMS.P50 != 200 || *o.LatencyMS.P95 != 300 || *o.LatencyMS.P99 != 300 {
		t.Errorf("latency = %+v", o.LatencyMS)
	}
	// Strata: each with its own per-persona summary; no-stratum cases are
	// only in the overall summary.
	if got := len(rep.Summary.Strata); got != 3 {
		t.Fatalf("strata = %d, want 3 (absence, ambiguous, temporal)", got)
	}
	checkRatio(t, "absence not_found", rep.Summary.Strata["absence"].Personas["p"].CorrectAbstention[ActionNotFound], frac(1, 2))
	if got := rep.Summary.Strata["temporal"].Overall.Answerable; got != 1 {
		t.Errorf("temporal answerable = %d", got)
	}
	if rep.Gates[1].Passed || rep.Gates[1].Failures[0].Stratum != "temporal" {
		t.Errorf("citation_validity gate = %+v, want a failure in stratum temporal", rep.Gates[1])
	}
}

func close(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }

// TestThresholdGatesPerPersona: thresholds judge each persona, name the one
// that failed and its failing strata, and fail closed when nothing is
// measurable.
func TestThresholdGatesPerPersona(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	good, bad := answerCase("g", "good"), answerCase("b", "bad")
	bad.Stratum = "revoked"
	stale := answerCase("s", "bad")
	stale.Expected.SupersededEvidence = []string{"old"}
	cases := []CaseV2{good, bad, stale}
	results := []ResultV2{supportedResult("g"), declared("b", ActionBlock),
		{ID: "s", RetrievedIDs: []string{"old"}, CitedIDs: []string{"old"}, Response: ActionAnswer}}
	rep, err := EvaluateV2(cases, results, Options{MinUtility: f(0.9), MaxFalseBlockRate: f(0.1), MaxStaleRate: f(0.1), MinRecall: f(0.5)})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Gate{}
	for _, g := range rep.Gates {
		byName[g.Name] = g
	}
	u := byName[GateMinUtility]
	if u.Passed || *u.Value != 0 || len(u.Failures) != 2 ||
		u.Failures[0] != (GateFailure{Persona: "bad", Value: u.Failures[0].Value}) || u.Failures[1].Stratum != "revoked" {
		t.Errorf("min_utility = %+v", u)
	}
	if g := byName[GateMaxFalseBlockRate]; g.Passed || *g.Value != 0.5 {
		t.Errorf("max_false_block_rate = %+v", g)
	}
	if g := byName[GateMaxStaleRate]; g.Passed || *g.Value != 0.5 || g.Failures[0].Persona != "bad" {
		t.Errorf("max_stale_rate = %+v", g)
	}
	// Recall: good 1, bad (0 + 0)/2 = 0 → fails for bad only.
	if g := byName[GateMinRecall]; g.Passed || g.Failures[0].Persona != "bad" {
		t.Errorf("min_recall = %+v", g)
	}
	// Only required blocks: recall is undefined for everyone → fail closed.
	rep, err = EvaluateV2([]CaseV2{blockCase("x", "p")}, []ResultV2{declared("x", ActionBlock)}, Options{MinRecall: f(0.5)})
	if err != nil {
		t.Fatal(err)
	}
	if g := rep.Gates[3]; g.Passed || g.Value != nil {
		t.Errorf("min_recall with nothing measurable = %+v, want failed with null value", g)
	}
}

// TestValidateCaseV2: every semantic error names the case and the field.
func TestValidateCaseV2(t *testing.T) {
	base := func() CaseV2 { return answerCase("q", "p") }
	tests := []struct {
		name    string
		mutate  func(*CaseV2)
		fixture bool
		// msg must appear; empty means valid.
		msg string
	}{
		{"valid", func(*CaseV2) {}, false, ""},
		{"unknown action", func(c *CaseV2) { c.Expected.Action = "abstain" }, false, `case "q": expected.action "abstain" is not one of`},
		{"required outside allowed", func(c *CaseV2) { c.Expected.RequiredEvidence = []string{"x"} }, false,
			`case "q": expected.required_evidence "x" is not in expected.allowed_evidence`},
		{"any-of outside allowed", func(c *CaseV2) { c.Expected.RequiredAnyOf = [][]string{{"faq"}, {"y"}} }, false,
			`expected.required_any_of[1] "y" is not in expected.allowed_evidence`},
		{"empty any-of set", func(c *CaseV2) { c.Expected.RequiredAnyOf = [][]string{{}} }, false, "expected.required_any_of[0] is empty"},
		{"citation outside allowed", func(c *CaseV2) { c.Expected.ExpectedCitations = []string{"z"} }, false, `expected.expected_citations "z"`},
		{"as_of unparsable", func(c *CaseV2) { c.AsOf = "October 2026" }, false, `case "q": as_of "October 2026" is not an RFC 3339 time`},
		{"bad reason", func(c *CaseV2) { c.Expected.InternalReason = "SECRET" }, false, "expected.internal_reason"},
		{"forbidden also allowed", func(c *CaseV2) { c.Expected.ForbiddenEvidence = []string{"faq"} }, false, `expected.forbidden_evidence "faq" is also allowed`},
		{"superseded also allowed", func(c *CaseV2) { c.Expected.SupersededEvidence = []string{"faq"} }, false, "expected.superseded_evidence"},
		{"missing allowed", func(c *CaseV2) { c.Expected.AllowedEvidence = nil; c.Expected.RequiredEvidence = nil }, false, "expected.allowed_evidence is required"},
		{"fixture derives allowed", func(c *CaseV2) { c.Expected.AllowedEvidence = nil }, true, ""},
		{"empty marker", func(c *CaseV2) { c.Expected.ForbiddenMarkers = []string{" "} }, false, "expected.forbidden_markers[0] is empty"},
		{"repeated evidence", func(c *CaseV2) { c.Expected.AllowedEvidence = []string{"faq", "faq", "doc-q"} }, false, `lists "faq" more than once`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base()
			tt.mutate(&c)
			err := ValidateCase(&c, tt.fixture)
			if tt.msg == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var verr *ValidationError
			if !errors.As(err, &verr) || !strings.Contains(err.Error(), tt.msg) || !reflect.DeepEqual(verr.CaseIDs(), []string{"q"}) {
				t.Fatalf("error = %v, want a *ValidationError for case q containing %q", err, tt.msg)
			}
		})
	}
}

// TestFillEvidence: a fixture fills what the case left out, and scoring
// refuses a fixture case whose allowed set was never filled.
func TestFillEvidence(t *testing.T) {
	c := answerCase("q", "p")
	c.Expected.AllowedEvidence = nil
	if _, err := EvaluateV2([]CaseV2{c}, []ResultV2{supportedResult("q")}, Options{}); err == nil {
		t.Fatal("a case without allowed evidence was scored")
	}
	if err := FillEvidence(&c, []string{"doc-q"}, []string{"doc-q-old"}); err != nil {
		t.Fatal(err)
	}
	rep, err := EvaluateV2([]CaseV2{c}, []ResultV2{supportedResult("q")}, Options{})
	if err != nil || rep.Cases[0].Outcome != OutcomeSupported {
		t.Fatalf("after FillEvidence: %v, %+v", err, rep.Cases)
	}
	if err := FillEvidence(&c, []string{"other"}, nil); err == nil {
		t.Error("a case's own allowed set that differs from the fixture's was accepted")
	}
}

func TestIntervals(t *testing.T) {
	at := func(s string) Interval {
		var iv Interval
		parts := strings.Split(s, "/")
		for i, p := range parts {
			if p == "" {
				continue
			}
			var tm = mustTime(t, p)
			if i == 0 {
				iv.From = tm
			} else {
				iv.To = tm
			}
		}
		return iv
	}
	v1, v2, v3 := at("/2025-01-01T00:00:00Z"), at("2025-01-01T00:00:00Z/2026-01-01T00:00:00Z"), at("2026-01-01T00:00:00Z/")
	if _, _, ok := FirstOverlap([]Interval{v1, v2, v3}); ok {
		t.Error("half-open intervals that touch were reported as overlapping")
	}
	bad := at("2025-06-01T00:00:00Z/")
	if a, b, ok := FirstOverlap([]Interval{v1, v2, bad}); !ok || a != 1 || b != 2 {
		t.Errorf("overlap = %d, %d, %v; want 1, 2", a, b, ok)
	}
	if !v2.Contains(mustTime(t, "2025-01-01T00:00:00Z")) || v2.Contains(mustTime(t, "2026-01-01T00:00:00Z")) {
		t.Error("an interval must include its start and exclude its end")
	}
}

// TestDecodeV2 reads v2 cases and results, each field with its file name.
func TestDecodeV2(t *testing.T) {
	cases := `[{"id":"travel","question":"Hotel limit?","persona":"employee","stratum":"temporal","as_of":"2026-10-01T00:00:00+09:00",
	  "expected":{"action":"answer","allowed_evidence":["v3","faq","b","c"],"required_evidence":["v3"],"required_any_of":[["b"],["c"]],
	  "forbidden_evidence":["exec"],"superseded_evidence":["v1","v2"],"expected_citations":["v3"],"internal_reason":"NO_EVIDENCE",
	  "public_response_class":"insufficient_available_information","forbidden_markers":["Falcon"]}},
	 {"id":"v1","question":"?","relevant_ids":[],"allowed_ids":[],"must_abstain":true}]`
	got, err := DecodeCasesV2(strings.NewReader(cases))
	if err != nil {
		t.Fatal(err)
	}
	want := CaseV2{ID: "travel", Question: "Hotel limit?", Persona: "employee", Stratum: "temporal", AsOf: "2026-10-01T00:00:00+09:00",
		Expected: Expected{Action: ActionAnswer, AllowedEvidence: []string{"v3", "faq", "b", "c"}, RequiredEvidence: []string{"v3"},
			RequiredAnyOf: [][]string{{"b"}, {"c"}}, ForbiddenEvidence: []string{"exec"}, SupersededEvidence: []string{"v1", "v2"},
			ExpectedCitations: []string{"v3"}, InternalReason: ReasonNoEvidence, PublicResponseClass: "insufficient_available_information",
			ForbiddenMarkers: []string{"Falcon"}}}
	if !reflect.DeepEqual(got[0], want) {
		t.Errorf("v2 case = %+v\nwant %+v", got[0], want)
	}
	if got[1].Expected.Action != ActionBlock {
		t.Errorf("v1 must_abstain case mapped to %q", got[1].Expected.Action)
	}

	bad := []struct{ name, in, msg string }{
		{"mixed v1 and v2", `[{"id":"q","question":"?","expected":{"action":"answer","allowed_evidence":[]},"must_abstain":false}]`,
			`case "q": unknown field "must_abstain" in a v2 case`},
		{"v2 field in a v1 case", `[{"id":"q","question":"?","relevant_ids":[],"allowed_ids":[],"must_abstain":false,"as_of":"x"}]`,
			`unknown field "as_of" in a v1 case`},
		{"duplicate key in expected", `[{"id":"q","question":"?","expected":{"action":"answer","action":"block","allowed_evidence":[]}}]`,
			`case "q": duplicate field "expected.action"`},
		{"unknown expected key", `[{"id":"q","question":"?","expected":{"action":"answer","allowed":[]}}]`, `unknown field "expected.allowed"`},
		{"missing action", `[{"id":"q","question":"?","expected":{"allowed_evidence":[]}}]`, `missing required field "expected.action"`},
		{"wrong type in any-of", `[{"id":"q","question":"?","expected":{"action":"answer","allowed_evidence":[],"required_any_of":["b"]}}]`,
			`field "expected.required_any_of[0]" must be an array of strings, got a string`},
		{"expected not an object", `[{"id":"q","question":"?","expected":[]}]`, `field "expected" must be an object, got an array`},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeCasesV2(strings.NewReader(tt.in))
			var verr *ValidationError
			if !errors.As(err, &verr) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("error = %v, want %q", err, tt.msg)
			}
		})
	}

	s, _ := NewSession(Options{})
	if err := s.ReadCases(strings.NewReader(cases)); err != nil {
		t.Fatal(err)
	}
	results := `[{"id":"travel","retrieved_ids":["v3"],"cited_ids":["v3"],"response":"answer","answer_text":"90,000 \u00a5","latency_ms":12.5},
	 {"id":"v1","retrieved_ids":[],"cited_ids":[],"abstained":true}]`
	if err := s.ReadResults(strings.NewReader(results)); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Finish(true)
	if err != nil {
		t.Fatal(err)
	}
	// b or c must be cited too: the any-of sets are required support.
	if rep.Cases[0].Outcome != OutcomeUnsupported || *rep.Cases[0].LatencyMS != 12.5 || rep.Cases[1].Outcome != OutcomeJustifiedBlock {
		t.Errorf("cases = %+v", rep.Cases)
	}
	for _, tt := range []struct{ in, msg string }{
		{`[{"id":"q","retrieved_ids":[],"cited_ids":[],"latency_ms":"12"}]`, `result "q": field "latency_ms" must be a number, got a string`},
		{`[{"id":"q","retrieved_ids":[],"cited_ids":[],"abstained":true,"response":"block"}]`, `unknown field "response" in a v1 result`},
		{`[{"id":"q","retrieved_ids":[],"cited_ids":[],"latency_ms":01}]`, `invalid number literal`},
	} {
		s, _ := NewSession(Options{})
		if err := s.ReadResults(strings.NewReader(tt.in)); err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("results %s: error = %v, want %q", tt.in, err, tt.msg)
		}
	}
	s, _ = NewSession(Options{})
	_ = s.ReadCases(strings.NewReader(`[{"id":"q","question":"?","expected":{"action":"answer","allowed_evidence":[]}}]`))
	_ = s.ReadResults(strings.NewReader(`[{"id":"q","retrieved_ids":[],"cited_ids":[],"response":"maybe"}]`))
	if _, err := s.Finish(false); err == nil || !strings.Contains(err.Error(), `result "q": response "maybe" is not one of`) {
		t.Errorf("unknown response: error = %v", err)
	}
}

// TestWriteJSONMatchesEncoder: the streamed report is byte for byte what
// encoding/json writes for the full report, for every kind of value a case
// score can hold. The case fields are written by hand, so the fixture must
// reach every field of CaseScore both set and, where JSON can tell, unset:
// a new field fails this test until a case here sets it.
func TestWriteJSONMatchesEncoder(t *testing.T) {
	lat := 0.0000001
	c := []CaseV2{
		answerCase("a<&>\u2028\"q\"", "p\x01"),
		blockCase("b", ""),
		{ID: "n", Question: "?", Stratum: "s", Expected: Expected{Action: ActionNotFound, AllowedEvidence: []string{}, ForbiddenMarkers: []string{"m"}}},
		{ID: "t", Question: "?", Persona: "p", Expected: Expected{Action: ActionAnswer, AllowedEvidence: []string{"doc-t"}, RequiredEvidence: []string{"doc-t"},
			ForbiddenEvidence: []string{"secret-t"}}},
		answerCase("s", "p"),
	}
	r := []ResultV2{
		{ID: c[0].ID, RetrievedIDs: []string{"faq", "doc-" + c[0].ID, "faq", "x\ty"}, CitedIDs: []string{"zz"}, LatencyMS: &lat},
		leakResult("b"),
		{ID: "n", RetrievedIDs: []string{}, CitedIDs: []string{}, AnswerText: "an M", Response: ActionNotFound},
		{ID: "t", RetrievedIDs: []string{"doc-t"}, CitedIDs: []string{"doc-t"}, Response: ActionAnswer,
			AnswerText: "quoting the secret document word for word"},
		// Nothing forbidden; no response, so its declared action is inferred.
		{ID: "s", RetrievedIDs: []string{"doc-s"}, CitedIDs: []string{"doc-s"}},
	}
	opts := Options{K: 3, DocumentTexts: map[string]string{"secret-t": "the secret document word for word"}}
	full, err := EvaluateV2(c, r, opts)
	if err != nil {
		t.Fatal(err)
	}
	assertEveryCaseField(t, full.Cases)
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetIndent("", "  ")
	if err := enc.Encode(full); err != nil {
		t.Fatal(err)
	}
	s, _ := NewSession(opts)
	for _, x := range c {
		s.AddCase(x)
	}
	for _, x := range r {
		s.AddResult(x)
	}
	rep, err := s.Finish(false)
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := s.WriteJSON(&got, rep); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("streamed JSON differs\n got: %s\nwant: %s", got.String(), want.String())
	}
}

// alwaysSet are the CaseScore fields no valid case leaves unset, and why.
var alwaysSet = map[string]string{
	"Action":   "expected.action is required in every case",
	"Declared": "every result declares or implies an action",
}

// assertEveryCaseField fails for each JSON field of CaseScore that no case
// sets, and for each one JSON writes differently when unset (omitempty,
// null, []) that every case sets.
func assertEveryCaseField(t *testing.T, cases []CaseScore) {
	t.Helper()
	typ := reflect.TypeFor[CaseScore]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		var set, unset bool
		for j := range cases {
			if v := reflect.ValueOf(cases[j]).Field(i); isUnset(v) {
				unset = true
			} else {
				set = true
			}
		}
		if !set {
			t.Errorf("no case sets CaseScore.%s: add one to the fixture", f.Name)
		}
		k := f.Type.Kind()
		if _, ok := alwaysSet[f.Name]; !ok && !unset && (strings.Contains(tag, ",omitempty") || k == reflect.Pointer || k == reflect.Slice) {
			t.Errorf("every case sets CaseScore.%s: add one that leaves it unset", f.Name)
		}
	}
}

// isUnset is whether v is its zero value, or an empty slice.
func isUnset(v reflect.Value) bool {
	if v.Kind() == reflect.Slice {
		return v.Len() == 0
	}
	return v.IsZero()
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// frac is the expectation num/den with its value, null for den 0.
func frac(num, den int) wantRatio {
	w := wantRatio{num: float64(num), den: den}
	if den > 0 {
		v := float64(num) / float64(den)
		w.value = &v
	}
	return w
}

// FuzzScannerString: the streaming scanner decodes every JSON string (and
// rejects every malformed one) exactly as encoding/json does, also when the
// string straddles a buffer refill.
func FuzzScannerString(f *testing.F) {
	for _, seed := range []string{`"plain"`, `"a\"b\\c\/d"`, `"\u00e9\ud83d\ude00"`, `"\ud800"`, `"\x"`, "\"tab\there\"",
		"\"\xff\xfe\"", `"\u12"`, `"unterminated`, `"<&>\u2028"`} {
		f.Add(seed, 1)
	}
	f.Fuzz(func(t *testing.T, in string, chunk int) {
		var want string
		// The scanner is asked for a string: any other JSON value is an error.
		trimmed := strings.TrimLeft(in, " \t\r\n")
		wantErr := json.Unmarshal([]byte(in), &want) != nil || len(trimmed) == 0 || trimmed[0] != '"'
		s := newScanner(&oneByteChunks{data: []byte(in), n: max(1, chunk%7)})
		s.buf = make([]byte, 4) // force refills inside the token
		got, err := s.str()
		if err == nil {
			// A string must be the whole input for encoding/json to agree.
			if _, perr := s.peek(); perr == nil {
				err = errors.New("trailing data")
			}
		}
		if (err != nil) != wantErr {
			t.Fatalf("%q: scanner error %v, encoding/json error %v", in, err, wantErr)
		}
		if err == nil && string(got) != want {
			t.Fatalf("%q: scanner %q, encoding/json %q", in, got, want)
		}
	})
}

// oneByteChunks reads its data n bytes at a time.
type oneByteChunks struct {
	data []byte
	n    int
}

func (r *oneByteChunks) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.data[:min(r.n, len(r.data))])
	r.data = r.data[n:]
	return n, nil
}

// TestWrongTypeIsOneProblem: an id of the wrong type is reported once, not
// also as empty.
func TestWrongTypeIsOneProblem(t *testing.T) {
	_, err := DecodeCasesV2(strings.NewReader(`[{"id":7,"question":"?","relevant_ids":[],"allowed_ids":[],"must_abstain":false}]`))
	if err == nil || err.Error() != `invalid input: case #1: field "id" must be a string, got a number` {
		t.Errorf("error = %v", err)
	}
}
