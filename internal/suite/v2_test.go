package suite

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

func v2Case(id string, e v1alpha1.Expectation) v1alpha1.EvalCase {
	if e.Persona == "" {
		e.Persona = "alice"
	}
	return v1alpha1.EvalCase{ID: id, Question: "q", Expectations: []v1alpha1.Expectation{e}}
}

// TestValidateV2 covers what the CRD cannot check for ConfigMap cases and
// what no CRD rule says: each message names the case, persona and field.
func TestValidateV2(t *testing.T) {
	asOf := func(c v1alpha1.EvalCase, s string) v1alpha1.EvalCase { c.AsOf = s; return c }
	for _, tc := range []struct {
		name string
		c    v1alpha1.EvalCase
		// want is a fragment of the InvalidCases message; "" means valid.
		want string
	}{
		{"valid answer", v2Case("ok", v1alpha1.Expectation{Action: "answer", AllowedEvidence: []string{"a"}, RequiredEvidence: []string{"a"}}), ""},
		{"unknown action", v2Case("c1", v1alpha1.Expectation{Action: "refuse"}), `case "c1" in spec.cases: persona "alice": action "refuse" is unknown`},
		{"unknown reason", v2Case("c2", v1alpha1.Expectation{Action: "block", InternalReason: "NOPE"}), `internalReason "NOPE" is unknown`},
		{"required outside allowed", v2Case("c3", v1alpha1.Expectation{Action: "answer", AllowedEvidence: []string{"a"}, RequiredEvidence: []string{"b"}}),
			`case "c3" in spec.cases: persona "alice": requiredEvidence "b" is not in allowedEvidence`},
		{"alternative outside allowed", v2Case("c4", v1alpha1.Expectation{Action: "answer", AllowedEvidence: []string{"a"}, RequiredAnyOf: [][]string{{"a"}, {"z"}}}),
			`requiredAnyOf[1] "z" is not in allowedEvidence`},
		{"unparsable asOf", asOf(v2Case("c5", v1alpha1.Expectation{Action: "answer"}), "next tuesday"), `case "c5" in spec.cases: asOf "next tuesday" is not an RFC 3339 time`},
		{"v1 and v2 mixed", v2Case("c6", v1alpha1.Expectation{Action: "block", MustAbstain: true}), "must not be combined with relevantIDs, allowedIDs or mustAbstain"},
		{"empty alternative set", v2Case("c7", v1alpha1.Expectation{Action: "answer", RequiredAnyOf: [][]string{{}}}), "requiredAnyOf[0] must hold 1 to 16 IDs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate([]v1alpha1.EvalCase{tc.c}, []string{"spec.cases"})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			var p *Problem
			if !errors.As(err, &p) || p.Reason != v1alpha1.ReasonInvalidCases || !strings.Contains(p.Message, tc.want) {
				t.Fatalf("Validate = %v, want InvalidCases containing %q", err, tc.want)
			}
		})
	}
}

// TestDecodeCasesV2FileFormat: a ConfigMap may hold the file format
// `ragcanary eval` reads; cases sharing an ID become one case with one
// expectation per persona, and strictness is kept.
func TestDecodeCasesV2FileFormat(t *testing.T) {
	data := `
- id: hotel
  question: What is the hotel limit?
  persona: employee
  stratum: temporal
  as_of: "2026-10-01T00:00:00+09:00"
  expected:
    action: answer
    allowed_evidence: [policy-v3, faq]
    required_evidence: [policy-v3]
    superseded_evidence: [policy-v2]
    forbidden_markers: ["Project Falcon"]
- id: hotel
  question: What is the hotel limit?
  persona: contractor
  stratum: temporal
  as_of: "2026-10-01T00:00:00+09:00"
  expected: {action: block, allowed_evidence: [], internal_reason: UNAUTHORIZED}
`
	cases, err := DecodeCases([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 1 || len(cases[0].Expectations) != 2 || cases[0].AsOf != "2026-10-01T00:00:00+09:00" || !cases[0].AskAnswer {
		t.Fatalf("decoded %+v", cases)
	}
	e := cases[0].Expectations[0]
	if e.Action != "answer" || !slices.Equal(e.RequiredEvidence, []string{"policy-v3"}) || !slices.Equal(e.SupersededEvidence, []string{"policy-v2"}) ||
		!slices.Equal(e.ForbiddenMarkers, []string{"Project Falcon"}) {
		t.Errorf("first expectation %+v", e)
	}
	if c := cases[0].Expectations[1]; c.Persona != "contractor" || c.Action != "block" || c.InternalReason != "UNAUTHORIZED" {
		t.Errorf("second expectation %+v", c)
	}
	if err := Validate(cases, []string{"cm"}); err != nil {
		t.Errorf("decoded v2 cases do not validate: %v", err)
	}
	// A typo is an error in either format, never a silently dropped field.
	if _, err := DecodeCases([]byte(strings.Replace(data, "required_evidence", "required_evidense", 1))); err == nil {
		t.Error("unknown v2 field accepted")
	}
}

// TestFreezeDerivesAndChecks: fixture cases get allowed and superseded
// evidence from the policy at asOf, and required evidence the policy does
// not give the persona is InvalidCases naming case, persona and field.
func TestFreezeDerivesAndChecks(t *testing.T) {
	f, err := BuildFixture([]v1alpha1.FixtureDocument{
		{ID: "p-v1", VersionOf: "p", Body: "old", ValidTo: "2026-07-01T00:00:00Z", Principals: []string{"staff"}},
		{ID: "p-v2", VersionOf: "p", Body: "new", ValidFrom: "2026-07-01T00:00:00Z", Principals: []string{"staff"}},
		{ID: "secret", Body: "hidden", Principals: []string{"user:boss"}},
	}, []string{"x", "x", "x"}, []v1alpha1.FixtureGroup{{Name: "staff", Members: []string{"user:alice"}}}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	def := func(cases ...v1alpha1.EvalCase) *Definition {
		return &Definition{Cases: cases, Corpus: &v1alpha1.Corpus{}, Fixture: f,
			Personas: map[string]*v1alpha1.Persona{"alice": {Spec: v1alpha1.PersonaSpec{Subject: "user:alice"}}}}
	}
	good := v2Case("policy", v1alpha1.Expectation{Action: "answer", RequiredEvidence: []string{"p-v2"}})
	good.AsOf = "2026-10-01T00:00:00+09:00"
	plan, err := Freeze(def(good), &v1alpha1.EvalSuite{}, Gates{}, 5, time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	got := plan.Jobs[0].Case.Expected
	if !slices.Equal(got.AllowedEvidence, []string{"p-v2"}) || !slices.Equal(got.SupersededEvidence, []string{"p-v1"}) {
		t.Errorf("derived allowed %v superseded %v", got.AllowedEvidence, got.SupersededEvidence)
	}
	if plan.Fixture == nil || len(plan.Fixture.Documents) != 3 || plan.Personas[0].Subject != "user:alice" {
		t.Errorf("plan fixture %+v personas %+v", plan.Fixture, plan.Personas)
	}
	// Before July, only v1 is valid: requiring v2 then is not eligible.
	early := good
	early.AsOf = "2026-03-01T00:00:00Z"
	_, err = Freeze(def(early), &v1alpha1.EvalSuite{}, Gates{}, 5, time.Now())
	var p *Problem
	if !errors.As(err, &p) || p.Reason != v1alpha1.ReasonInvalidCases ||
		!strings.Contains(p.Message, `case "policy" persona "alice": requiredEvidence "p-v2" is not in allowedEvidence`) {
		t.Fatalf("Freeze = %v, want InvalidCases naming the case, persona and field", err)
	}
	// The plan hashes what it froze: a changed annotation changes the hash.
	other := good
	other.Expectations = []v1alpha1.Expectation{{Persona: "alice", Action: "answer", ExpectedCitations: []string{"p-v2"}}}
	plan2, err := Freeze(def(other), &v1alpha1.EvalSuite{}, Gates{}, 5, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if plan.CasesHash() == plan2.CasesHash() || !strings.HasPrefix(plan.CasesHash(), "sha256:") {
		t.Errorf("hashes %s and %s", plan.CasesHash(), plan2.CasesHash())
	}
}

// TestScoreCatchesForbiddenTextInAnswer: a fixture document the persona
// may not read, quoted in an answer that cites nothing forbidden, is a
// disclosure; the same answer for a reader of that document is not.
func TestScoreCatchesForbiddenTextInAnswer(t *testing.T) {
	f, err := BuildFixture([]v1alpha1.FixtureDocument{
		{ID: "falcon", Body: "Project Falcon launches the orbital courier in April.", Principals: []string{"user:boss"}},
		{ID: "faq", Body: "The canteen opens at noon.", Principals: []string{"user:alice", "user:boss"}},
	}, []string{"x", "x"}, nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c := v1alpha1.EvalCase{ID: "launch", Question: "When does the project launch?", AskAnswer: true, Expectations: []v1alpha1.Expectation{
		{Persona: "alice", Action: "block", InternalReason: "UNAUTHORIZED"},
		{Persona: "boss", Action: "answer", RequiredEvidence: []string{"falcon"}},
	}}
	def := &Definition{Cases: []v1alpha1.EvalCase{c}, Corpus: &v1alpha1.Corpus{}, Fixture: f, Personas: map[string]*v1alpha1.Persona{
		"alice": {Spec: v1alpha1.PersonaSpec{Subject: "user:alice"}}, "boss": {Spec: v1alpha1.PersonaSpec{Subject: "user:boss"}}}}
	plan, err := Freeze(def, &v1alpha1.EvalSuite{}, Gates{}, 5, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	leak := "Project Falcon launches the orbital courier in April. [faq#0]"
	execs := []Execution{
		{ID: "launch/alice", CaseID: "launch", Persona: "alice", Answered: true, Hits: []string{"faq"}, Citations: []string{"faq"}, Status: "answer", Text: leak},
		{ID: "launch/boss", CaseID: "launch", Persona: "boss", Answered: true, Hits: []string{"falcon"}, Citations: []string{"falcon"}, Status: "answer", Text: leak},
	}
	res, err := Score(plan, execs, nil)
	if err != nil {
		t.Fatal(err)
	}
	alice, boss := res.Report.Cases[0], res.Report.Cases[1]
	if !alice.Leaked() || !slices.Equal(alice.LeakedTexts, []string{"falcon"}) || alice.Outcome != "disclosure" {
		t.Errorf("alice: outcome %s, leaked texts %v; want a disclosure of falcon's text", alice.Outcome, alice.LeakedTexts)
	}
	if boss.Leaked() {
		t.Errorf("boss may read falcon, yet leaked texts %v", boss.LeakedTexts)
	}
	if res.Disclosures != 1 || res.Passed {
		t.Errorf("disclosures %d passed %v, want 1 and false", res.Disclosures, res.Passed)
	}
	// The frozen evidence carries the answer text and the document texts,
	// so a replay finds the same leak.
	if res.Evidence.Executions[0].AnswerText != leak || res.Evidence.DocumentTexts["falcon"] == "" {
		t.Errorf("evidence lacks the answer or document text: %+v", res.Evidence.Executions[0])
	}
}
