package suite

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/scoring"
)

func TestValidate(t *testing.T) {
	good := func(id string) v1alpha1.EvalCase {
		return v1alpha1.EvalCase{ID: id, Question: "q", Expectations: []v1alpha1.Expectation{
			{Persona: "alice", RelevantIDs: []string{"a#0"}, AllowedIDs: []string{"a#0", "b#0"}}}}
	}
	withExp := func(e v1alpha1.Expectation) v1alpha1.EvalCase {
		c := good("bad")
		c.Expectations = []v1alpha1.Expectation{e}
		return c
	}
	tests := []struct {
		name    string
		cases   []v1alpha1.EvalCase
		origins []string
		// want is a substring of the message; "" means valid.
		want string
	}{
		{name: "valid", cases: []v1alpha1.EvalCase{good("a"), good("b")}, origins: []string{"spec.cases", "spec.cases"}},
		{name: "empty suite", want: "no cases"},
		{name: "relevant not allowed", origins: []string{"spec.cases"},
			cases: []v1alpha1.EvalCase{withExp(v1alpha1.Expectation{Persona: "p", RelevantIDs: []string{"x"}})},
			want:  `case "bad" in spec.cases: persona "p": relevant ID "x" is not in allowedIDs`},
		{name: "duplicate across sources names both", origins: []string{"spec.cases", `ConfigMap "cm" key "k"`},
			cases: []v1alpha1.EvalCase{good("a"), good("a")},
			want:  `case "a" in ConfigMap "cm" key "k" duplicates the case in spec.cases`},
		{name: "repeated allowed ID", origins: []string{"x"},
			cases: []v1alpha1.EvalCase{withExp(v1alpha1.Expectation{Persona: "p", AllowedIDs: []string{"a", "a"}})},
			want:  `allowedIDs lists "a" twice`},
		{name: "persona twice in a case", origins: []string{"x"},
			cases: []v1alpha1.EvalCase{{ID: "c", Question: "q", Expectations: []v1alpha1.Expectation{{Persona: "p"}, {Persona: "p"}}}},
			want:  `persona "p" has two expectations`},
		{name: "no expectations (ConfigMap bypasses the CRD)", origins: []string{"x"},
			cases: []v1alpha1.EvalCase{{ID: "c", Question: "q"}}, want: "expectations"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.cases, tt.origins)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			var p *Problem
			if !errors.As(err, &p) || p.Reason != v1alpha1.ReasonInvalidCases || !strings.Contains(p.Message, tt.want) {
				t.Fatalf("Validate = %v, want InvalidCases containing %q", err, tt.want)
			}
		})
	}
}

func TestDecodeCasesIsStrict(t *testing.T) {
	if _, err := DecodeCases([]byte("- id: a\n  question: q\n  expectation: []\n")); err == nil {
		t.Error("a misspelled field was accepted")
	}
	cases, err := DecodeCases([]byte(`[{"id":"a","question":"q","expectations":[{"persona":"p"}]}]`))
	if err != nil || len(cases) != 1 || cases[0].Expectations[0].Persona != "p" {
		t.Errorf("JSON cases = %+v, %v", cases, err)
	}
}

func TestAbstainedAndCited(t *testing.T) {
	tests := []struct {
		name          string
		x             Execution
		relevant      []string
		wantAbstained bool
		wantCited     []string
	}{
		{name: "answer with citations", x: Execution{Answered: true, Hits: []string{"a"}, Citations: []string{"a"}},
			wantCited: []string{"a"}},
		{name: "answer without citations abstains even with hits", x: Execution{Answered: true, Hits: []string{"a"}},
			relevant: []string{"a"}, wantAbstained: true, wantCited: []string{}},
		{name: "search only, no hits abstains", x: Execution{}, relevant: []string{"a"}, wantAbstained: true, wantCited: []string{}},
		{name: "search only, relevant hits stand in as citations, once each",
			x: Execution{Hits: []string{"z", "a", "a", "b"}}, relevant: []string{"a", "b"}, wantCited: []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Abstained(tt.x); got != tt.wantAbstained {
				t.Errorf("Abstained = %v, want %v", got, tt.wantAbstained)
			}
			if got := Cited(tt.x, tt.relevant); strings.Join(got, ",") != strings.Join(tt.wantCited, ",") || got == nil {
				t.Errorf("Cited = %#v, want %#v", got, tt.wantCited)
			}
		})
	}
}

// twoPersonaCase is answerable for alice and a required block for mallory.
var twoPersonaCase = v1alpha1.EvalCase{ID: "c", Question: "q", Stratum: "hr", Expectations: []v1alpha1.Expectation{
	{Persona: "alice", RelevantIDs: []string{"a#0"}, AllowedIDs: []string{"a#0"}},
	{Persona: "mallory", MustAbstain: true},
}}

func TestScoreProbeErrorsAreNeverScored(t *testing.T) {
	execs := []Execution{
		{CaseID: "c", Persona: "alice", Stratum: "hr", Hits: []string{"a#0"}},
		// mallory's search failed: were it scored as "nothing retrieved", it
		// would be a justified block and the run would pass.
		{CaseID: "c", Persona: "mallory", Stratum: "hr", Err: driver.NewError(driver.Transient, "Search", 503, "unavailable", nil)},
	}
	res, err := scoreCases(t, []v1alpha1.EvalCase{twoPersonaCase}, execs, 5, Gates{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Passed || len(res.Errored) != 1 || res.Executions != 2 {
		t.Fatalf("passed=%v errored=%d executions=%d, want false/1/2", res.Passed, len(res.Errored), res.Executions)
	}
	if len(res.Report.Cases) != 1 || res.Report.Cases[0].ID != "c/alice" {
		t.Errorf("scored cases = %+v, want only c/alice", res.Report.Cases)
	}
	if _, ok := res.Report.Summary.Personas["mallory"]; ok {
		t.Error("mallory has a summary although none of her executions replied")
	}
	fc := FailingCases(res)
	if len(fc) != 1 || fc[0].Persona != "mallory" || fc[0].Outcome != v1alpha1.OutcomeProbeError {
		t.Errorf("failing cases = %+v, want mallory's probe error", fc)
	}
	data, err := ReportData(res, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(data[v1alpha1.ReportKeyProbeErrors], "status 503") || strings.Contains(data[v1alpha1.ReportKeyProbeErrors], "token") {
		t.Errorf("probe errors = %s, want the sanitized driver error", data[v1alpha1.ReportKeyProbeErrors])
	}
}

func TestScoreToleranceAndStrata(t *testing.T) {
	execs := []Execution{
		{CaseID: "c", Persona: "alice", Stratum: "hr", Hits: []string{"a#0"}},
		{CaseID: "c", Persona: "mallory", Stratum: "hr", Hits: []string{"a#0"}}, // a disclosure
	}
	strict, err := scoreCases(t, []v1alpha1.EvalCase{twoPersonaCase}, execs, 5, Gates{})
	if err != nil {
		t.Fatal(err)
	}
	if strict.Passed || strict.Disclosures != 1 {
		t.Errorf("zero tolerance: passed=%v disclosures=%d, want false/1", strict.Passed, strict.Disclosures)
	}
	lenient, err := scoreCases(t, []v1alpha1.EvalCase{twoPersonaCase}, execs, 5, Gates{MaxDisclosures: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !lenient.Passed || lenient.Report.Gates[0].Threshold != 1 {
		t.Errorf("one disclosure tolerated: passed=%v gates=%+v, want pass with threshold 1", lenient.Passed, lenient.Report.Gates)
	}
	rows := PersonaResults(strict)
	if len(rows) != 4 {
		t.Fatalf("rows = %+v, want alice and mallory overall and in hr", rows)
	}
	mallory := rows[3]
	utility, okU := mallory.Rate(scoring.FigureUtility)
	disclosure, okD := mallory.Rate(scoring.FigureDisclosureRate)
	if mallory.Persona != "mallory" || mallory.Stratum != "hr" || !okU || utility.Value != nil ||
		!okD || disclosure.Value == nil || *disclosure.Value != "1" {
		t.Errorf("mallory/hr = %+v, want undefined utility and disclosure rate 1", mallory)
	}
}

func TestDecimal(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 1: "1", 2.5: "2.5", 2.0 / 3: "0.6667", 0.00001: "0"} {
		if got := Decimal(in); got != want {
			t.Errorf("Decimal(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestReportDataTruncatesWithMarker(t *testing.T) {
	var cases []v1alpha1.EvalCase
	var execs []Execution
	long := strings.Repeat("x", 200)
	for i := range 6000 {
		id := long + string(rune('a'+i%26)) + strings.Repeat("y", i/26)
		cases = append(cases, v1alpha1.EvalCase{ID: id, Question: "q", Expectations: []v1alpha1.Expectation{{Persona: "p"}}})
		execs = append(execs, Execution{CaseID: id, Persona: "p", Hits: []string{long + "#forbidden"}})
	}
	res, err := scoreCases(t, cases, execs, 5, Gates{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := ReportData(res, 0)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, v := range data {
		total += len(v)
	}
	if total > MaxReportBytes+1024 || !strings.HasPrefix(data[v1alpha1.ReportKeyTruncated], "TRUNCATED") {
		t.Fatalf("report is %d bytes, truncated marker %q", total, data[v1alpha1.ReportKeyTruncated])
	}
	var report map[string]any
	if err := json.Unmarshal([]byte(data[v1alpha1.ReportKeyReport]), &report); err != nil {
		t.Fatalf("truncated report is not JSON: %v", err)
	}
	if n := len(report["cases"].([]any)); n == 0 || n >= len(cases) {
		t.Errorf("truncated report lists %d of %d cases", n, len(cases))
	}
}
