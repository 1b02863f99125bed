package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/ragcanary/ragcanary/internal/scoring"
)

// td returns the path of an eval test fixture.
func td(name string) string { return filepath.Join("testdata", "eval", name) }

// runEvalCmd runs the subcommand through the registry, as main would.
func runEvalCmd(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = dispatch(append([]string{"eval"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestEvalExitCodes(t *testing.T) {
	cases := td("cases.json")
	tests := []struct {
		name string
		// args follow "ragcanary eval".
		args []string
		// code is the expected exit status.
		code int
		// stdout and stderr must contain these substrings (empty = no check).
		stdout, stderr string
	}{
		{name: "all gates pass", args: []string{cases, td("results_pass.json")}, code: exitOK, stdout: "PASSED"},
		{
			name: "flags before and after files",
			// The employee's mean recall and MRR are 0.75: per persona,
			// not the overall 0.833.
			args: []string{"--k", "5", cases, "--min-recall", "0.7", td("results_pass.json"), "--min-mrr=0.7"},
			code: exitOK, stdout: "min_recall",
		},
		{name: "flags after --", args: []string{"--k=3", "--", cases, td("results_pass.json")}, code: exitOK},
		{
			// Mean recall is (1 + 0.5 + 1)/3 ≈ 0.833.
			name: "recall gate fails",
			args: []string{cases, td("results_pass.json"), "--min-recall", "0.9"},
			code: exitFailed, stdout: "min_recall            FAIL",
		},
		{
			// q-salaries must be refused for the contractor, who got an
			// answer from evidence they may see: nothing leaked, but the
			// policy was broken, so the run fails.
			name: "answered required block fails",
			args: []string{cases, td("results_failed_to_abstain.json")},
			code: exitFailed, stdout: "no_failed_to_abstain  FAIL    1",
		},
		{
			name: "forbidden id fails and names the case",
			args: []string{cases, td("results_leak.json")},
			code: exitFailed, stdout: "forbidden=hr-salaries",
		},
		{
			name: "truncated export is invalid",
			args: []string{cases, td("results_truncated.json")},
			code: exitInvalid, stderr: `case "q-hours": has no result`,
		},
		{
			name: "numeric abstained flag",
			args: []string{cases, td("results_bad_flag.json")},
			code: exitInvalid, stderr: `result "q-vpn": field "abstained" must be a boolean`,
		},
		{
			name: "string must_abstain flag",
			args: []string{td("cases_string_flag.json"), td("results_pass.json")},
			code: exitInvalid, stderr: `case "q-leave": field "must_abstain" must be a boolean`,
		},
		{
			name: "result for unknown case",
			args: []string{cases, td("results_unknown_case.json")},
			code: exitInvalid, stderr: `result "q-ghost": no case with this id`,
		},
		{
			name: "duplicate case ids",
			args: []string{td("cases_duplicate.json"), td("results_pass.json")},
			code: exitInvalid, stderr: `case "q-leave": duplicate case id`,
		},
		{
			name: "relevant outside allowed",
			args: []string{td("cases_relevant_not_allowed.json"), td("results_pass.json")},
			code: exitInvalid, stderr: `case "q-leave": relevant id "hr-secret" is not in allowed_ids`,
		},
		{
			name: "malformed results name the file",
			args: []string{cases, td("malformed.json")},
			code: exitInvalid, stderr: "malformed.json: invalid input: malformed JSON",
		},
		{name: "missing file", args: []string{cases, td("nope.json")}, code: exitInvalid, stderr: "nope.json"},
		{name: "one file only", args: []string{cases}, code: exitInvalid, stderr: "got 1 file argument"},
		{name: "k below 1", args: []string{cases, td("results_pass.json"), "--k", "0"}, code: exitInvalid, stderr: "--k must be at least 1"},
		{name: "k not a number", args: []string{"--k", "ten", cases, td("results_pass.json")}, code: exitInvalid, stderr: "invalid value"},
		{name: "recall above 1", args: []string{cases, td("results_pass.json"), "--min-recall", "1.5"}, code: exitInvalid, stderr: "within [0,1]"},
		{name: "mrr below 0", args: []string{cases, td("results_pass.json"), "--min-mrr=-0.1"}, code: exitInvalid, stderr: "within [0,1]"},
		{name: "unknown format", args: []string{cases, td("results_pass.json"), "--format", "xml"}, code: exitInvalid, stderr: `got "xml"`},
		{name: "unknown flag", args: []string{"--verbose", cases, td("results_pass.json")}, code: exitInvalid, stderr: "flag provided but not defined"},
		{name: "help", args: []string{"--help"}, code: exitOK, stderr: "usage: ragcanary eval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runEvalCmd(tt.args...)
			if code != tt.code {
				t.Errorf("exit = %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			if !strings.Contains(stdout, tt.stdout) {
				t.Errorf("stdout does not contain %q:\n%s", tt.stdout, stdout)
			}
			if !strings.Contains(stderr, tt.stderr) {
				t.Errorf("stderr does not contain %q:\n%s", tt.stderr, stderr)
			}
			if tt.code == exitInvalid && stdout != "" {
				t.Errorf("invalid input must not print a report, got:\n%s", stdout)
			}
		})
	}
}

// TestEvalJSONSchema pins the key sets of the --format json output, which CI
// pipelines and dashboards parse.
func TestEvalJSONSchema(t *testing.T) {
	code, stdout, stderr := runEvalCmd("--format", "json", td("cases.json"), td("results_leak.json"), "--min-mrr", "0.5")
	if code != exitFailed {
		t.Fatalf("exit = %d, want %d; stderr: %s", code, exitFailed, stderr)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, stdout)
	}
	assertKeys(t, "report", out, "k", "passed", "gates", "summary", "cases")
	if out["k"] != 10.0 || out["passed"] != false {
		t.Errorf("k, passed = %v, %v; want 10, false", out["k"], out["passed"])
	}

	gates := out["gates"].([]any)
	var names []string
	for _, g := range gates {
		gm := g.(map[string]any)
		if gm["passed"] == true {
			assertKeys(t, "gate", gm, "name", "passed", "value", "threshold")
		} else {
			// A failed gate names who failed it.
			assertKeys(t, "gate", gm, "name", "passed", "value", "threshold", "failures")
		}
		names = append(names, gm["name"].(string))
	}
	if want := []string{"no_forbidden", "citation_validity", "no_failed_to_abstain", "min_mrr"}; !reflect.DeepEqual(names, want) {
		t.Errorf("gate names = %v, want %v", names, want)
	}

	summary := out["summary"].(map[string]any)
	assertKeys(t, "summary", summary, "overall", "personas")
	statKeys := []string{"answerable", "required_block", "supported", "false_blocks", "disclosures", "failed_to_abstain",
		"utility", "false_block_rate", "disclosure_rate", "failed_to_abstain_rate", "recall_at_k", "mrr_at_k",
		// v2 additions.
		"unsupported", "stale", "mistaken_not_found", "wrong_status", "justified_blocks", "affected_answers", "leaks", "invalid_citation_cases",
		"mistaken_not_found_rate", "stale_rate", "correct_abstention", "citation_precision", "citation_validity",
		"precision_at_k", "ndcg_at_k", "latency_ms"}
	overall := summary["overall"].(map[string]any)
	assertKeys(t, "overall", overall, statKeys...)
	for _, r := range []string{"utility", "false_block_rate", "disclosure_rate", "failed_to_abstain_rate", "recall_at_k", "mrr_at_k"} {
		assertKeys(t, "overall."+r, overall[r].(map[string]any), "value", "numerator", "denominator")
	}
	personas := summary["personas"].(map[string]any)
	assertKeys(t, "personas", personas, "", "contractor", "employee")
	for name, p := range personas {
		assertKeys(t, "persona "+name, p.(map[string]any), statKeys...)
	}
	// The contractor persona has only a required-block case: its utility
	// is null with 0/0, and its one case is a disclosure (1/1).
	contractor := personas["contractor"].(map[string]any)
	if u := contractor["utility"].(map[string]any); u["value"] != nil || u["denominator"] != 0.0 {
		t.Errorf("contractor utility = %v, want null over 0", u)
	}
	if d := contractor["disclosure_rate"].(map[string]any); d["value"] != 1.0 || d["numerator"] != 1.0 {
		t.Errorf("contractor disclosure_rate = %v, want 1/1", d)
	}

	cases := out["cases"].([]any)
	if len(cases) != 4 {
		t.Fatalf("cases = %d, want 4", len(cases))
	}
	for _, c := range cases {
		cm := c.(map[string]any)
		keys := []string{"id", "persona", "forbidden_ids", "duplicate_count",
			"recall_at_k", "fill_at_k", "reciprocal_rank", "outcome", "action", "declared"}
		if cm["action"] == "answer" {
			// Defined only with relevant evidence, and then present.
			keys = append(keys, "precision_at_k", "ndcg_at_k")
		}
		if len(cm["forbidden_ids"].([]any)) > 0 {
			keys = append(keys, "disclosed")
		}
		assertKeys(t, "case", cm, keys...)
	}
	leak := cases[2].(map[string]any)
	if leak["id"] != "q-salaries" || leak["outcome"] != "disclosure" || leak["disclosed"] != true ||
		!reflect.DeepEqual(leak["forbidden_ids"], []any{"hr-salaries"}) || leak["recall_at_k"] != nil {
		t.Errorf("leaking case = %v", leak)
	}
}

func assertKeys(t *testing.T, what string, m map[string]any, want ...string) {
	t.Helper()
	got := make([]string, 0, len(m))
	for k := range m {
		got = append(got, k)
	}
	sort.Strings(got)
	want = append([]string(nil), want...)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s keys = %q, want %q", what, got, want)
	}
}

// TestEvalSamples keeps the demo files in config/samples/eval working.
func TestEvalSamples(t *testing.T) {
	dir := filepath.Join("..", "..", "config", "samples", "eval")
	code, stdout, stderr := runEvalCmd(filepath.Join(dir, "cases.json"), filepath.Join(dir, "results.json"))
	if code != exitOK {
		t.Fatalf("exit = %d, want 0\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{"(none)", "contractor", "employee", "no_forbidden", "contractor-vpn  contractor  false_block"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("text report lacks %q:\n%s", want, stdout)
		}
	}
}

// TestEvalFailedToAbstainReport: the count is in both report formats, per
// persona, over the required-block cases, and null where there are none.
func TestEvalFailedToAbstainReport(t *testing.T) {
	code, stdout, stderr := runEvalCmd("--format", "json", td("cases.json"), td("results_failed_to_abstain.json"))
	if code != exitFailed {
		t.Fatalf("exit = %d, want %d; stderr: %s", code, exitFailed, stderr)
	}
	var out struct {
		Summary struct {
			Personas map[string]struct {
				FailedToAbstain int `json:"failed_to_abstain"`
				Rate            struct {
					Value       *float64 `json:"value"`
					Numerator   float64  `json:"numerator"`
					Denominator int      `json:"denominator"`
				} `json:"failed_to_abstain_rate"`
			} `json:"personas"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout)
	}
	contractor, employee := out.Summary.Personas["contractor"], out.Summary.Personas["employee"]
	if contractor.FailedToAbstain != 1 || contractor.Rate.Value == nil || *contractor.Rate.Value != 1 || contractor.Rate.Denominator != 1 {
		t.Errorf("contractor = %+v, want 1 failed to abstain, rate 1/1", contractor)
	}
	if employee.FailedToAbstain != 0 || employee.Rate.Value != nil || employee.Rate.Denominator != 0 {
		t.Errorf("employee = %+v, want 0 and a null rate (no required-block case)", employee)
	}
	_, text, _ := runEvalCmd(td("cases.json"), td("results_failed_to_abstain.json"))
	for _, want := range []string{"FAILED_TO_ABSTAIN", "1.000 (1/1)", "q-salaries  contractor  failed_to_abstain"} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q:\n%s", want, text)
		}
	}
}

// TestEvalInputSizeCap: a file one byte over the cap is invalid input,
// refused before it is read. The file is sparse: valid JSON at the start,
// then a hole, so the test writes almost nothing.
func TestEvalInputSizeCap(t *testing.T) {
	big := filepath.Join(t.TempDir(), "results.json")
	if err := os.WriteFile(big, []byte("[\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, scoring.MaxInputBytes+1); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runEvalCmd(td("cases.json"), big)
	want := fmt.Sprintf("results.json: the file is %d bytes, larger than the limit of 512 MiB for an input file", scoring.MaxInputBytes+1)
	if code != exitInvalid || !strings.Contains(stderr, want) || stdout != "" {
		t.Errorf("exit = %d, stderr %q, stdout %q; want exit 2 with %q", code, stderr, stdout, want)
	}
	if !strings.Contains(evalUsage, fmt.Sprintf("at most %d MiB", scoring.MaxInputBytes>>20)) {
		t.Errorf("usage does not state the %d MiB cap:\n%s", scoring.MaxInputBytes>>20, evalUsage)
	}
}

// TestEvalV2Files: v2 cases (mixed with a v1 case) in JSON and YAML score
// the same; a stale answer, a forbidden marker in a refusal and a wrong
// status each fail their gate or show in their rate.
func TestEvalV2Files(t *testing.T) {
	for _, cases := range []string{td("cases_v2.json"), td("cases_v2.yaml")} {
		code, stdout, stderr := runEvalCmd(cases, td("results_v2_pass.json"), "--max-stale-rate", "0", "--min-utility", "1")
		if code != exitOK {
			t.Fatalf("%s: exit = %d, want 0\n%s%s", cases, code, stdout, stderr)
		}
		// not_found is reported on its own, never pooled.
		if !strings.Contains(stdout, "NOT_FOUND") || !strings.Contains(stdout, "1.000 (1/1)") {
			t.Errorf("%s: no per-status table:\n%s", cases, stdout)
		}
	}
	code, stdout, stderr := runEvalCmd("--format", "json", td("cases_v2.json"), td("results_v2_marker.json"), "--max-stale-rate", "0")
	if code != exitFailed {
		t.Fatalf("exit = %d, want 1\n%s", code, stderr)
	}
	var rep scoring.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	outcomes := map[string]scoring.Outcome{}
	for _, c := range rep.Cases {
		outcomes[c.ID] = c.Outcome
	}
	want := map[string]scoring.Outcome{"travel-current": scoring.OutcomeStale, "acquisitions": scoring.OutcomeDisclosure,
		"approval": scoring.OutcomeSupported, "missing": scoring.OutcomeWrongStatus, "v1-style": scoring.OutcomeSupported}
	if !reflect.DeepEqual(outcomes, want) {
		t.Errorf("outcomes = %v, want %v", outcomes, want)
	}
	failed := map[string][]scoring.GateFailure{}
	for _, g := range rep.Gates {
		if !g.Passed {
			failed[g.Name] = g.Failures
		}
	}
	if f := failed[scoring.GateNoForbidden]; len(f) != 1 || f[0].Persona != "employee" || f[0].Stratum != "private" {
		t.Errorf("no_forbidden failures = %+v, want employee/private", f)
	}
	if f := failed[scoring.GateMaxStaleRate]; len(f) != 2 || f[1].Stratum != "temporal" {
		t.Errorf("max_stale_rate failures = %+v, want employee and employee/temporal", f)
	}
	if len(failed) != 2 {
		t.Errorf("failed gates = %v, want no_forbidden and max_stale_rate", failed)
	}
}

// TestEvalV2Invalid: semantic v2 errors exit 2 naming the case and field;
// YAML duplicate keys are refused like JSON ones.
func TestEvalV2Invalid(t *testing.T) {
	code, stdout, stderr := runEvalCmd(td("cases_v2_invalid.json"), td("results_v2_pass.json"))
	if code != exitInvalid || stdout != "" {
		t.Fatalf("exit = %d, want 2 and no report; stdout %s", code, stdout)
	}
	for _, msg := range []string{
		`case "bad-action": expected.action "abstain" is not one of`,
		`case "bad-required": expected.required_evidence "b" is not in expected.allowed_evidence`,
		`case "bad-time": as_of "next Tuesday" is not an RFC 3339 time`,
	} {
		if !strings.Contains(stderr, msg) {
			t.Errorf("stderr does not contain %q:\n%s", msg, stderr)
		}
	}
	code, _, stderr = runEvalCmd(td("cases_v2_duplicate_key.yaml"), td("results_v2_pass.json"))
	if code != exitInvalid || !strings.Contains(stderr, "cases_v2_duplicate_key.yaml") || !strings.Contains(stderr, `"action"`) {
		t.Errorf("duplicate YAML key: exit %d, stderr %s", code, stderr)
	}
}

// TestEvalReplay: --replay rescores a frozen report with exit 0/1/2 like the
// offline mode, and a CASES file applies a corrected annotation.
func TestEvalReplay(t *testing.T) {
	dir := t.TempDir()
	cases, err := readCasesV2(td("cases_v2.json"))
	if err != nil {
		t.Fatal(err)
	}
	ev := &scoring.Evidence{Cases: cases, Options: scoring.EvidenceOptions{K: 10},
		Personas: []scoring.PersonaSnapshot{{Name: "employee", Subject: "user-123", Groups: []string{"employees"}}}}
	for _, id := range []string{"travel-current", "acquisitions", "approval", "missing", "v1-style"} {
		x := scoring.Execution{CaseID: id, Persona: "employee", RetrievedIDs: []string{}, CitedIDs: []string{}, Response: scoring.ActionBlock}
		switch id {
		case "travel-current":
			x.RetrievedIDs, x.CitedIDs, x.Response = []string{"travel-policy-v3"}, []string{"travel-policy-v3"}, scoring.ActionAnswer
		case "approval":
			x.RetrievedIDs, x.CitedIDs, x.Response = []string{"b-approval"}, []string{"b-approval"}, scoring.ActionAnswer
		case "missing":
			x.Response = scoring.ActionNotFound
		case "v1-style":
			x.RetrievedIDs, x.CitedIDs, x.Response = []string{"hr-1"}, []string{"hr-1"}, scoring.ActionAnswer
		}
		ev.Executions = append(ev.Executions, x)
	}
	report := filepath.Join(dir, "report.json")
	writeEvidenceFile(t, report, ev)
	code, stdout, stderr := runEvalCmd("--replay", report)
	if code != exitOK || !strings.Contains(stdout, "cases unchanged since the run") {
		t.Fatalf("replay: exit %d\n%s%s", code, stdout, stderr)
	}
	// Corrected annotation: "missing" should in fact have been a block.
	cases[3].Expected.Action = scoring.ActionBlock
	corrected := filepath.Join(dir, "corrected.json")
	b, _ := json.Marshal(cases)
	if err := os.WriteFile(corrected, b, 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ = runEvalCmd("--replay", report, corrected, "--format", "json")
	var rep scoring.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != exitOK {
		t.Fatalf("replay corrected: exit %d, %v\n%s", code, err, stdout)
	}
	if !rep.Replay.CasesChanged || rep.Summary.Overall.RequiredBlock != 2 || rep.Summary.Overall.JustifiedBlocks != 2 ||
		rep.Summary.Overall.CorrectAbstention[scoring.ActionNotFound].Denominator != 0 {
		t.Errorf("corrected replay summary = %+v, replay %+v", rep.Summary.Overall, rep.Replay)
	}
	// A leak recorded in the run fails the replay; a broken report is invalid.
	ev.Executions[1].RetrievedIDs = []string{"confidential-ma-project"}
	writeEvidenceFile(t, report, ev)
	if code, _, _ := runEvalCmd("--replay", report); code != exitFailed {
		t.Errorf("replay with a leak: exit %d, want 1", code)
	}
	if err := os.WriteFile(report, []byte(`{"format":"ragcanary.dev/eval-evidence/v0"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runEvalCmd("--replay", report); code != exitInvalid || !strings.Contains(stderr, "format") {
		t.Errorf("replay of an unknown format: exit %d, stderr %s", code, stderr)
	}
}

func readCasesV2(path string) ([]scoring.CaseV2, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return scoring.DecodeCasesV2(f)
}

func writeEvidenceFile(t *testing.T, path string, ev *scoring.Evidence) {
	t.Helper()
	var buf bytes.Buffer
	if err := scoring.WriteEvidence(&buf, ev); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestEvalReplayRefusesGateFlags: a replay is scored with the frozen
// options, so a gate flag that would be ignored is refused instead.
func TestEvalReplayRefusesGateFlags(t *testing.T) {
	code, _, stderr := runEvalCmd("--replay", "report.json", "--min-recall", "0.5")
	if code != exitInvalid || !strings.Contains(stderr, "--min-recall cannot be combined") {
		t.Errorf("exit %d, stderr %s", code, stderr)
	}
}

// TestEvalAnswerableLeak: an answerable case citing a forbidden ID keeps its
// outcome, is flagged disclosed and counts in affected_answers; the
// improper-disclosure rate still counts only the required-block case over
// the required-block cases.
func TestEvalAnswerableLeak(t *testing.T) {
	code, stdout, stderr := runEvalCmd("--format", "json", td("cases.json"), td("results_answer_leak.json"))
	if code != exitFailed {
		t.Fatalf("exit = %d, want %d; stderr: %s", code, exitFailed, stderr)
	}
	var rep scoring.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	vpn := rep.Cases[1]
	if vpn.ID != "q-vpn" || vpn.Outcome != scoring.OutcomeUnsupported || !vpn.Disclosed {
		t.Errorf("q-vpn = %+v, want unsupported and disclosed", vpn)
	}
	if clean := rep.Cases[0]; clean.Disclosed {
		t.Errorf("the clean answer q-leave is flagged disclosed: %+v", clean)
	}
	tests := []struct {
		name     string
		st       scoring.Stats
		affected int
		// num and den are the disclosure rate's; den 0 means undefined.
		num float64
		den int
	}{
		{"overall", rep.Summary.Overall, 2, 1, 1},
		{"employee: no required block", rep.Summary.Personas["employee"], 1, 0, 0},
		{"contractor", rep.Summary.Personas["contractor"], 1, 1, 1},
		{"no persona", rep.Summary.Personas[""], 0, 0, 0},
	}
	for _, tt := range tests {
		r := tt.st.DisclosureRate
		if tt.st.AffectedAnswers != tt.affected || r.Numerator != tt.num || r.Denominator != tt.den || (r.Value == nil) != (tt.den == 0) {
			t.Errorf("%s: affected_answers %d, disclosure rate %+v; want %d and %v/%d", tt.name, tt.st.AffectedAnswers, r, tt.affected, tt.num, tt.den)
		}
	}

	code, text, _ := runEvalCmd(td("cases.json"), td("results_answer_leak.json"))
	if code != exitFailed {
		t.Fatalf("text: exit = %d, want %d", code, exitFailed)
	}
	for _, want := range []string{"AFFECTED_ANSWERS", "q-vpn       employee    unsupported, disclosed"} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q:\n%s", want, text)
		}
	}
}
