package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// The benchmark is only worth its ratio if the baseline does the same job
// as ragcanary: these tests run both, over real processes, on generated
// files, on the sample files and on broken input, and require the same
// verdict, gate counts and means — and exit 2 for every kind of invalid
// input the issue names.

const repoRoot = "../../.."

// TestMain lets the test binary serve as the measuring wrapper, as the
// harness binary does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == measureFlag {
		os.Exit(measureChild(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// testTools builds ragcanary from this tree once per test binary and
// writes the embedded baseline next to it.
var testTools = func() func(t *testing.T) toolset {
	var ts toolset
	var err error
	built := false
	return func(t *testing.T) toolset {
		t.Helper()
		if !built {
			built = true
			ts, err = buildTestTools()
		}
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
}()

func buildTestTools() (toolset, error) {
	dir, err := os.MkdirTemp("", "bench-eval-test-")
	if err != nil {
		return toolset{}, err
	}
	bin := filepath.Join(dir, "ragcanary")
	build := exec.Command("go", "build", "-o", bin, "./cmd/ragcanary")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		return toolset{}, fmt.Errorf("building ragcanary: %v\n%s", err, out)
	}
	// prepareTools resolves python3 and writes the script; it fails with
	// an install hint when python3 is missing.
	return prepareTools(options{python: "python3", pythonGC: true, ragcanary: bin, k: 10}, dir)
}

// runBoth runs both tools on one pair of files and returns their verdicts.
func runBoth(t *testing.T, cases, results string) (rc, py verdict) {
	t.Helper()
	ts := testTools(t)
	dir := t.TempDir()
	rcOut, pyOut := filepath.Join(dir, "rc.json"), filepath.Join(dir, "py.json")
	rcS, rcErr, err := runMeasured(slices.Concat(ts.ragcanary, []string{cases, results}), rcOut)
	if err != nil {
		t.Fatal(err)
	}
	pyS, pyErr, err := runMeasured(slices.Concat(ts.baseline, []string{cases, results}), pyOut)
	if err != nil {
		t.Fatal(err)
	}
	if rc, err = readRagcanary(rcOut, rcS.exit); err != nil {
		t.Fatalf("%v (stderr: %s)", err, rcErr)
	}
	if py, err = readBaseline(pyOut, pyS.exit); err != nil {
		t.Fatalf("%v (stderr: %s)", err, pyErr)
	}
	if rcS.maxRSS <= 0 || pyS.maxRSS <= 0 || rcS.wall <= 0 {
		t.Errorf("measurements missing: ragcanary %+v, python %+v", rcS, pyS)
	}
	return rc, py
}

func TestToolsAgreeOnGeneratedFiles(t *testing.T) {
	for _, format := range []string{"v1", "v2"} {
		t.Run(format, func(t *testing.T) {
			g, err := generate(t.TempDir(), 3000, format)
			if err != nil {
				t.Fatal(err)
			}
			rc, py := runBoth(t, g.cases, g.results)
			if d := disagreement(rc, py); d != "" {
				t.Fatalf("tools disagree: %s\nragcanary: %s\npython:    %s", d, rc, py)
			}
			// The generator's mix, worked out by hand: 1 % forbidden
			// (i%100 == 5), i%500 == 250 answered blocks, i%1000 == 9 bad
			// citations; the same in both formats.
			want := verdict{exit: 1, passed: false, cases: 3000, forbidden: 30, invalidCitations: 3, failedToAbstain: 6}
			got := py
			got.recall, got.mrr = nil, nil
			if got != want {
				t.Errorf("baseline verdict %s, want %s", py, want)
			}
			if py.recall == nil || *py.recall <= 0.4 || *py.recall >= 0.6 {
				t.Errorf("recall %s, want the rankings' mix near ½", fmtMean(py.recall))
			}
		})
	}
}

func TestToolsAgreeOnSampleFiles(t *testing.T) {
	samples := filepath.Join(repoRoot, "config", "samples", "eval")
	rc, py := runBoth(t, filepath.Join(samples, "cases.json"), filepath.Join(samples, "results.json"))
	if d := disagreement(rc, py); d != "" {
		t.Fatalf("tools disagree: %s\nragcanary: %s\npython:    %s", d, rc, py)
	}
	if py.exit != 0 || !py.passed || py.cases != 6 {
		t.Errorf("sample files: %s, want a pass over 6 cases", py)
	}
}

// validCase and validResult are one well-formed v1 pair; each invalid
// input below breaks exactly one thing.
const (
	validCase   = `{"id":"c1","persona":"p","question":"q","relevant_ids":["a"],"allowed_ids":["a","b"],"must_abstain":false}`
	validResult = `{"id":"c1","retrieved_ids":["a"],"cited_ids":["a"],"abstained":false}`
)

// invalidV1 is input that both tools must refuse with exit 2.
var invalidV1 = []struct {
	name, cases, results string
}{
	{"duplicate key in a case", `[{"id":"c1","id":"c1","persona":"p","question":"q","relevant_ids":["a"],"allowed_ids":["a","b"],"must_abstain":false}]`, "[" + validResult + "]"},
	{"duplicate key in a result", "[" + validCase + "]", `[{"id":"c1","retrieved_ids":["a"],"retrieved_ids":["b"],"cited_ids":["a"],"abstained":false}]`},
	{"unknown field", `[{"id":"c1","question":"q","relevant_ids":["a"],"allowed_ids":["a"],"must_abstain":false,"mustAbstain":true}]`, "[" + validResult + "]"},
	{"string for a boolean", `[{"id":"c1","question":"q","relevant_ids":["a"],"allowed_ids":["a"],"must_abstain":"yes"}]`, "[" + validResult + "]"},
	{"number for a boolean", "[" + validCase + "]", `[{"id":"c1","retrieved_ids":["a"],"cited_ids":["a"],"abstained":1}]`},
	{"null for a list", `[{"id":"c1","question":"q","relevant_ids":null,"allowed_ids":["a"],"must_abstain":false}]`, "[" + validResult + "]"},
	{"number in an ID list", "[" + validCase + "]", `[{"id":"c1","retrieved_ids":["a",7],"cited_ids":["a"],"abstained":false}]`},
	{"missing field", `[{"id":"c1","question":"q","relevant_ids":["a"],"allowed_ids":["a"]}]`, "[" + validResult + "]"},
	{"relevant outside allowed", `[{"id":"c1","question":"q","relevant_ids":["z"],"allowed_ids":["a"],"must_abstain":false}]`, "[" + validResult + "]"},
	{"duplicate case id", "[" + validCase + "," + validCase + "]", "[" + validResult + "]"},
	{"case without a result", "[" + validCase + "]", "[]"},
	{"result without a case", "[" + validCase + "]", "[" + validResult + `,{"id":"c2","retrieved_ids":[],"cited_ids":[],"abstained":true}]`},
	{"not an array", validCase, "[" + validResult + "]"},
	{"truncated JSON", "[" + validCase, "[" + validResult + "]"},
	{"no cases", "[]", "[]"},
}

func TestInvalidV1ExitsTwoInBoth(t *testing.T) {
	for _, tc := range invalidV1 {
		t.Run(tc.name, func(t *testing.T) {
			cases, results := writePair(t, tc.cases, tc.results)
			rc, py := runBoth(t, cases, results)
			if rc.exit != 2 || py.exit != 2 {
				t.Errorf("exit: ragcanary %d, baseline %d; want 2 from both", rc.exit, py.exit)
			}
		})
	}
	// The well-formed pair itself passes in both, so each row above fails
	// for the one thing it breaks.
	cases, results := writePair(t, "["+validCase+"]", "["+validResult+"]")
	if rc, py := runBoth(t, cases, results); rc.exit != 0 || py.exit != 0 {
		t.Errorf("valid pair: ragcanary %s, baseline %s; want exit 0 from both", rc, py)
	}
}

// validV2Case and validV2Result are one well-formed v2 pair.
const (
	validV2Case   = `{"id":"c1","question":"q","persona":"p","as_of":"2026-10-01T00:00:00+09:00","expected":{"action":"answer","allowed_evidence":["a","b"],"required_evidence":["a"],"superseded_evidence":["a-old"]}}`
	validV2Result = `{"id":"c1","retrieved_ids":["a","a-old"],"cited_ids":["a"],"response":"answer","latency_ms":12}`
)

// TestV2ExitStatusInBoth covers the v2 rules: invalid input the issue
// names exits 2, a leak through the answer text or an answered block 1.
func TestV2ExitStatusInBoth(t *testing.T) {
	tests := []struct {
		name, cases, results string
		exit                 int
	}{
		{"valid, superseded version retrieved", "[" + validV2Case + "]", "[" + validV2Result + "]", 0},
		{"unknown action", `[{"id":"c1","question":"q","expected":{"action":"refuse","allowed_evidence":["a"]}}]`, "[" + validV2Result + "]", 2},
		{"required outside allowed", `[{"id":"c1","question":"q","expected":{"action":"answer","allowed_evidence":["a"],"required_evidence":["z"]}}]`, "[" + validV2Result + "]", 2},
		{"unparsable as_of", `[{"id":"c1","question":"q","as_of":"next tuesday","expected":{"action":"answer","allowed_evidence":["a"]}}]`, "[" + validV2Result + "]", 2},
		{"date-only as_of", `[{"id":"c1","question":"q","as_of":"2026-10-01","expected":{"action":"answer","allowed_evidence":["a"]}}]`, "[" + validV2Result + "]", 2},
		{"duplicate key inside expected", `[{"id":"c1","question":"q","expected":{"action":"answer","action":"block","allowed_evidence":["a"]}}]`, "[" + validV2Result + "]", 2},
		{"unknown field inside expected", `[{"id":"c1","question":"q","expected":{"action":"answer","allowed_evidence":["a"],"relevant_ids":["a"]}}]`, "[" + validV2Result + "]", 2},
		{"v1 field in a v2 case", `[{"id":"c1","question":"q","must_abstain":false,"expected":{"action":"answer","allowed_evidence":["a"]}}]`, "[" + validV2Result + "]", 2},
		{"allowed evidence missing", `[{"id":"c1","question":"q","expected":{"action":"answer"}}]`, "[" + validV2Result + "]", 2},
		{"superseded also allowed", `[{"id":"c1","question":"q","expected":{"action":"answer","allowed_evidence":["a"],"superseded_evidence":["a"]}}]`, "[" + validV2Result + "]", 2},
		{"unknown response", "[" + validV2Case + "]", `[{"id":"c1","retrieved_ids":["a"],"cited_ids":["a"],"response":"maybe"}]`, 2},
		{"boolean latency", "[" + validV2Case + "]", `[{"id":"c1","retrieved_ids":["a"],"cited_ids":["a"],"latency_ms":true}]`, 2},
		{"forbidden marker in the answer, other case", `[{"id":"c1","question":"q","expected":{"action":"answer","allowed_evidence":["a"],"required_evidence":["a"],"forbidden_markers":["Project Falcon"]}}]`,
			`[{"id":"c1","retrieved_ids":["a"],"cited_ids":["a"],"answer_text":"PROJECT FALCON is the codename."}]`, 1},
		{"forbidden evidence named", `[{"id":"c1","question":"q","expected":{"action":"answer","allowed_evidence":["a"],"forbidden_evidence":["x"]}}]`,
			`[{"id":"c1","retrieved_ids":["a","x"],"cited_ids":["a"]}]`, 1},
		{"answered block", `[{"id":"c1","question":"q","expected":{"action":"block","allowed_evidence":["a"]}}]`,
			`[{"id":"c1","retrieved_ids":["a"],"cited_ids":["a"]}]`, 1},
		{"block honoured, response omitted", `[{"id":"c1","question":"q","expected":{"action":"block","allowed_evidence":["a"]}}]`,
			`[{"id":"c1","retrieved_ids":[],"cited_ids":[]}]`, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cases, results := writePair(t, tc.cases, tc.results)
			rc, py := runBoth(t, cases, results)
			if rc.exit != tc.exit || py.exit != tc.exit {
				t.Errorf("exit: ragcanary %d, baseline %d; want %d from both", rc.exit, py.exit, tc.exit)
			}
			if d := disagreement(rc, py); d != "" {
				t.Errorf("tools disagree: %s", d)
			}
		})
	}
}

func writePair(t *testing.T, cases, results string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	c, r := filepath.Join(dir, "cases.json"), filepath.Join(dir, "results.json")
	if err := os.WriteFile(c, []byte(cases), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r, []byte(results), 0o644); err != nil {
		t.Fatal(err)
	}
	return c, r
}

func TestDisagreement(t *testing.T) {
	half, other := 0.5, 0.5+1e-6
	base := verdict{exit: 1, cases: 10, forbidden: 1, recall: &half, mrr: &half}
	tests := []struct {
		name  string
		other verdict
		agree bool
	}{
		{"identical", base, true},
		// An undefined mean is not a zero: nil against a value disagrees.
		{"undefined recall", verdict{exit: 1, cases: 10, forbidden: 1, mrr: &half}, false},
		{"recall off by more than rounding", verdict{exit: 1, cases: 10, forbidden: 1, recall: &other, mrr: &half}, false},
		{"gate count", verdict{exit: 1, cases: 10, forbidden: 2, recall: &half, mrr: &half}, false},
		// Invalid input prints no report: only the exit status is compared.
		{"both invalid", verdict{exit: 2}, false},
	}
	for _, tc := range tests {
		if got := disagreement(base, tc.other) == ""; got != tc.agree {
			t.Errorf("%s: agree=%v, want %v (%q)", tc.name, got, tc.agree, disagreement(base, tc.other))
		}
	}
	if d := disagreement(verdict{exit: 2}, verdict{exit: 2, cases: 3}); d != "" {
		t.Errorf("two exit-2 verdicts disagree: %s", d)
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	dir1, dir2 := t.TempDir(), t.TempDir()
	for _, format := range []string{"v1", "v2"} {
		a, err := generate(dir1, 500, format)
		if err != nil {
			t.Fatal(err)
		}
		b, err := generate(dir2, 500, format)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range [][2]string{{a.cases, b.cases}, {a.results, b.results}} {
			x, _ := os.ReadFile(p[0])
			y, _ := os.ReadFile(p[1])
			if len(x) == 0 || string(x) != string(y) {
				t.Errorf("%s: %s and %s differ or are empty", format, p[0], p[1])
			}
		}
		if st, _ := os.Stat(a.cases); st == nil || a.bytes <= st.Size() {
			t.Errorf("%s: reported size %d does not cover both files", format, a.bytes)
		}
	}
}

// TestBaselineWithoutGC: --python-gc=false runs the same script, only
// with the collector off, so it reaches the same verdict.
func TestBaselineWithoutGC(t *testing.T) {
	ts := testTools(t)
	g, err := generate(t.TempDir(), 500, "v2")
	if err != nil {
		t.Fatal(err)
	}
	withGC := baselineCommand(ts.python, ts.script, true, "10")
	noGC := baselineCommand(ts.python, ts.script, false, "10")
	if slices.Equal(withGC, noGC) || !slices.Equal(withGC, ts.baseline) {
		t.Fatalf("commands: with GC %q, without %q, tests use %q", withGC, noGC, ts.baseline)
	}
	var got [2]verdict
	for i, argv := range [][]string{withGC, noGC} {
		out := filepath.Join(t.TempDir(), "out.json")
		s, stderr, err := runMeasured(slices.Concat(argv, []string{g.cases, g.results}), out)
		if err != nil {
			t.Fatal(err)
		}
		if got[i], err = readBaseline(out, s.exit); err != nil {
			t.Fatalf("%v (stderr: %s)", err, stderr)
		}
	}
	if d := disagreement(got[0], got[1]); d != "" || got[0].cases != 500 {
		t.Errorf("with and without GC: %s / %s (%s)", got[0], got[1], d)
	}
}
