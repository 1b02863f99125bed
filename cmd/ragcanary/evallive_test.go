package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragcanary/ragcanary/internal/dev/testutil/targettest"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/manifests"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// Credentials of the in-process target. alice's is in personas.yaml; the
// other two reach the command only through the environment.
const (
	liveSourceToken = "live-test-source-token"
	liveAliceToken  = "live-test-alice-token"
	liveBobToken    = "live-test-bob-token"
)

// startLiveTarget serves a ragtarget over real HTTP with the documents the
// testdata suite asks about, planted and synced, and returns its URL.
func startLiveTarget(t *testing.T, cfg ragtarget.Config) string {
	t.Helper()
	cfg.SourceToken = liveSourceToken
	cfg.Tokens = map[string]string{liveAliceToken: "user:alice", liveBobToken: "user:bob"}
	tg := targettest.Start(t, cfg)
	alice, both := []string{"user:alice"}, []string{"user:alice", "user:bob"}
	tg.Plant(t,
		driver.Document{ID: "forecast-0", Title: "Forecast", Body: "Quarterly revenue forecast for the north region.", Principals: alice},
		driver.Document{ID: "forecast-1", Title: "Forecast", Body: "Quarterly revenue forecast for the south region, figures attached.", Principals: alice},
		driver.Document{ID: "memo-0", Title: "Team memo", Body: "Parking rules, printer queue, badge renewal; the quarterly revenue forecast is due.", Principals: both},
		driver.Document{ID: "memo-1", Title: "Team memo", Body: "Coffee supply, desk booking, fire drills; also the quarterly revenue forecast review.", Principals: both},
		driver.Document{ID: "salary", Title: "Salary bands", Body: "Salary bands for engineers range from 100k to 200k.", Principals: alice},
	)
	return tg.URL
}

// liveFiles copies testdata/live into a temporary directory with the
// target URL filled in, after applying edits (old → new, per file name),
// and returns the flags naming the three files.
func liveFiles(t *testing.T, url string, edits map[string][][2]string) []string {
	t.Helper()
	dir := t.TempDir()
	var args []string
	for _, f := range []struct{ flag, name string }{{"--suite", "suite.yaml"}, {"--corpus", "corpus.yaml"}, {"--personas", "personas.yaml"}} {
		data, err := os.ReadFile(filepath.Join("testdata", "live", f.name))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(data), "TARGET_URL", url)
		for _, e := range edits[f.name] {
			if !strings.Contains(text, e[0]) {
				t.Fatalf("edit of %s: %q not found", f.name, e[0])
			}
			text = strings.Replace(text, e[0], e[1], 1)
		}
		path := filepath.Join(dir, f.name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, f.flag, path)
	}
	return append(args, "--allowed-target-urls", url)
}

// setLiveEnv supplies the credentials the manifests do not hold.
func setLiveEnv(t *testing.T) {
	t.Setenv("RAGCANARY_SECRET_RAGTARGET_SOURCE_TOKEN", liveSourceToken)
	t.Setenv("RAGCANARY_SECRET_BOB_CRED_TOKEN", liveBobToken)
}

// noCredentials fails when any output holds a credential.
func noCredentials(t *testing.T, outputs ...string) {
	t.Helper()
	for _, out := range outputs {
		for _, tok := range []string{liveSourceToken, liveAliceToken, liveBobToken} {
			if strings.Contains(out, tok) {
				t.Errorf("output reveals a credential:\n%s", out)
			}
		}
	}
}

func TestEvalLivePassesAgainstAPrefilteringTarget(t *testing.T) {
	setLiveEnv(t)
	url := startLiveTarget(t, ragtarget.Config{FilterMode: ragtarget.FilterPrefilter})
	code, stdout, stderr := runEvalCmd(liveFiles(t, url, nil)...)
	noCredentials(t, stdout, stderr)
	if code != exitOK {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"PASSED (k=5, 4 cases)", "no_probe_errors       pass", "no_forbidden          pass"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
}

func TestEvalLiveFailsTheDisclosureGateWithoutAFilter(t *testing.T) {
	setLiveEnv(t)
	url := startLiveTarget(t, ragtarget.Config{FilterMode: ragtarget.FilterNone})
	files := liveFiles(t, url, nil)

	code, stdout, stderr := runEvalCmd(files...)
	noCredentials(t, stdout, stderr)
	if code != exitFailed {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"FAILED", "no_forbidden          FAIL    2", "revenue/bob", "salary/bob", "forbidden=salary#0"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("text report lacks %q:\n%s", want, stdout)
		}
	}

	// The JSON report has the offline schema plus the probe-error gate.
	code, stdout, stderr = runEvalCmd(append(files, "--format", "json")...)
	if code != exitFailed {
		t.Fatalf("json: exit %d, want 1; stderr %s", code, stderr)
	}
	var report struct {
		K      int  `json:"k"`
		Passed bool `json:"passed"`
		Gates  []struct {
			Name   string   `json:"name"`
			Passed bool     `json:"passed"`
			Value  *float64 `json:"value"`
		} `json:"gates"`
		Cases []struct {
			ID           string   `json:"id"`
			ForbiddenIDs []string `json:"forbidden_ids"`
		} `json:"cases"`
	}
	if err := json.Unmarshal([]byte(stdout), &report); err != nil {
		t.Fatalf("json report: %v\n%s", err, stdout)
	}
	gates := map[string]bool{}
	for _, g := range report.Gates {
		gates[g.Name] = g.Passed
	}
	if report.Passed || report.K != 5 || gates["no_forbidden"] || !gates["no_probe_errors"] || len(gates) != 4 {
		t.Errorf("json gates %+v passed=%v k=%d, want no_forbidden failed, citation_validity, no_failed_to_abstain and no_probe_errors present", report.Gates, report.Passed, report.K)
	}
	var leaking []string
	for _, c := range report.Cases {
		if len(c.ForbiddenIDs) > 0 {
			leaking = append(leaking, c.ID)
		}
	}
	if strings.Join(leaking, ",") != "revenue/bob,salary/bob" {
		t.Errorf("leaking cases %v, want revenue/bob and salary/bob", leaking)
	}
}

func TestEvalLiveProbeErrorsFailTheRun(t *testing.T) {
	setLiveEnv(t)
	// Every search and answer fails; planting (source calls) still works.
	url := startLiveTarget(t, ragtarget.Config{Faults: ragtarget.Faults{ErrorRate: 1, Scope: ragtarget.FaultScopePersona}})
	code, stdout, stderr := runEvalCmd(liveFiles(t, url, nil)...)
	noCredentials(t, stdout, stderr)
	if code != exitFailed {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"FAILED (k=5, 0 cases)", "no_probe_errors  FAIL    4", "PROBE ERRORS (4 executions", "salary   bob      driver Search: transient (status 503)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stdout, "status 503") {
		t.Errorf("probe errors do not say what failed:\n%s", stdout)
	}
	// In JSON the list goes to stderr, keeping stdout one report.
	code, stdout, stderr = runEvalCmd(append(liveFiles(t, url, nil), "--format=json")...)
	if code != exitFailed || !strings.Contains(stderr, "PROBE ERRORS") || !json.Valid([]byte(stdout)) {
		t.Errorf("json: exit %d, stderr %q, stdout valid=%v", code, stderr, json.Valid([]byte(stdout)))
	}
}

func TestEvalLiveInvalidInput(t *testing.T) {
	url := startLiveTarget(t, ragtarget.Config{})
	type edits = map[string][][2]string
	tests := []struct {
		name string
		// edits change the testdata manifests.
		edits edits
		// unsetBob leaves bob's credential out of the environment.
		unsetBob bool
		// extra are more arguments.
		extra []string
		// stderr must contain this.
		stderr string
	}{
		{name: "malformed YAML", edits: edits{"corpus.yaml": {{"  name: ragtarget", "  name: [ragtarget"}}},
			stderr: "corpus.yaml: document 1"},
		{name: "unknown field in the suite", edits: edits{"suite.yaml": {{"  parallelism: 4", "  parallelsm: 4"}}},
			stderr: `invalid EvalSuite: error unmarshaling JSON: while decoding JSON: json: unknown field "parallelsm"`},
		{name: "unknown driver", edits: edits{"corpus.yaml": {{"type: HTTP", "type: Bogus"}}},
			stderr: `DriverUnsupported: Corpus "ragtarget": driver type "Bogus"`},
		{name: "target URL is not http(s)", edits: edits{"corpus.yaml": {{"url: " + url, "url: ftp://example.com/rag"}}},
			stderr: "must be an absolute http or https URL"},
		{name: "target URL embeds credentials", edits: edits{"corpus.yaml": {{"url: http://", "url: http://user:pw@"}}},
			stderr: "must not embed credentials"},
		{name: "missing persona", edits: edits{"suite.yaml": {{"- persona: bob\n          relevantIDs", "- persona: carol\n          relevantIDs"}}},
			stderr: `PersonaNotFound: Persona "carol", named by case "revenue"`},
		{name: "missing corpus", edits: edits{"corpus.yaml": {{"name: ragtarget", "name: other"}}},
			stderr: `CorpusNotFound: Corpus "ragtarget"`},
		{name: "missing credential", unsetBob: true,
			stderr: `Persona "bob": spec.credentialSecretRef: missing credential: Secret "bob-cred" key "token" is neither set in $RAGCANARY_SECRET_BOB_CRED_TOKEN nor in a Secret manifest`},
		{name: "invalid cases", edits: edits{"suite.yaml": {{`relevantIDs: ["memo-0#0", "memo-1#0"]`, `relevantIDs: ["salary#0"]`}}},
			stderr: `InvalidCases: case "revenue" in spec.cases: persona "bob": relevant ID "salary#0" is not in allowedIDs`},
		{name: "invalid ConfigMap cases", edits: edits{"suite.yaml": {{"askAnswer: true", "askAnswer: true\n      asked: twice"}}},
			stderr: `InvalidCases: ConfigMap "more-cases" key "cases.yaml" is not a JSON or YAML array of cases`},
		{name: "missing ConfigMap key", edits: edits{"suite.yaml": {{"key: cases.yaml", "key: other.yaml"}}},
			stderr: `ConfigMapNotFound: ConfigMap "more-cases" has no key "other.yaml"`},
		{name: "no suite", edits: edits{"suite.yaml": {{"kind: EvalSuite", "kind: RevocationCanary"}}},
			stderr: "no EvalSuite"},
		{name: "two suites", edits: edits{"suite.yaml": {{"---\napiVersion: v1", "---\napiVersion: ragcanary.dev/v1alpha1\nkind: EvalSuite\nmetadata: {name: second}\nspec: {corpusRef: {name: ragtarget}}\n---\napiVersion: v1"}}},
			stderr: "2 EvalSuites in the given files"},
		{name: "a Persona declared as an EvalSuite", edits: edits{"personas.yaml": {{"kind: Persona", "kind: EvalSuite"}}},
			stderr: `personas.yaml: document 1: invalid EvalSuite: error unmarshaling JSON: while decoding JSON: json: unknown field`},
		{name: "bad gate threshold", edits: edits{"suite.yaml": {{"maxInvalidCitations: 0", "maxInvalidCitations: 0\n    minRecall: \"2\""}}},
			stderr: `spec.gates.minRecall "2" must be a decimal in [0, 1]`},
		{name: "Secret with a bad value", edits: edits{"personas.yaml": {{"stringData:\n  token: live-test-alice-token", "data:\n  token: live-test-alice-token!!"}}},
			stderr: `Secret "alice-cred" is not a valid Secret manifest`},
		{name: "unlabelled credential Secret", edits: edits{"personas.yaml": {{"ragcanary.dev/credential: \"true\"", "team: search"}}},
			stderr: `SecretNotLabeled: Persona "alice": Secret "alice-cred" is not labelled as a ragcanary credential; add the label ragcanary.dev/credential="true"`},
		{name: "target outside the allowlist", extra: []string{"--allowed-target-urls", "http://rag.internal/"},
			stderr: `URLNotAllowed: Corpus "ragtarget": spec.driver.http.url: target http://127.0.0.1`},
		{name: "dot segments do not escape an allowed prefix", edits: edits{"corpus.yaml": {{"url: " + url, "url: " + url + "/tenant-a/../tenant-b/"}}},
			extra:  []string{"--allowed-target-urls", url + "/tenant-a/"},
			stderr: `URLNotAllowed: Corpus "ragtarget": spec.driver.http.url: target http://127.0.0.1`},
		{name: "positional file in live mode", extra: []string{"cases.json"}, stderr: "live mode takes no file arguments"},
		{name: "bad --k", extra: []string{"--k", "0"}, stderr: "--k must be at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setLiveEnv(t)
			if tt.unsetBob {
				t.Setenv("RAGCANARY_SECRET_BOB_CRED_TOKEN", "")
			}
			code, stdout, stderr := runEvalCmd(append(liveFiles(t, url, tt.edits), tt.extra...)...)
			noCredentials(t, stdout, stderr)
			if code != exitInvalid || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and %q", code, stderr, tt.stderr)
			}
			if stdout != "" {
				t.Errorf("invalid input printed a report:\n%s", stdout)
			}
		})
	}
}

func TestEvalLiveEnvironmentWinsOverManifests(t *testing.T) {
	setLiveEnv(t)
	url := startLiveTarget(t, ragtarget.Config{})
	// The manifest's alice token is wrong; the environment's is right.
	files := liveFiles(t, url, map[string][][2]string{"personas.yaml": {{"token: live-test-alice-token", "token: stale-placeholder"}}})
	if code, stdout, stderr := runEvalCmd(files...); code != exitFailed || !strings.Contains(stdout, "status 401") {
		t.Fatalf("with the stale manifest token: exit %d, want 1 with 401 probe errors\n%s%s", code, stdout, stderr)
	}
	t.Setenv("RAGCANARY_SECRET_ALICE_CRED_TOKEN", liveAliceToken)
	if code, stdout, stderr := runEvalCmd(files...); code != exitOK {
		t.Fatalf("with the environment's token: exit %d, want 0\n%s%s", code, stdout, stderr)
	}
}

func TestSecretEnvName(t *testing.T) {
	for in, want := range map[[2]string]string{
		{"bob-cred", "token"}:        "RAGCANARY_SECRET_BOB_CRED_TOKEN",
		{"rag.source", "api-key.v2"}: "RAGCANARY_SECRET_RAG_SOURCE_API_KEY_V2",
	} {
		if got := manifests.SecretEnvName(in[0], in[1]); got != want {
			t.Errorf("SecretEnvName(%q, %q) = %q, want %q", in[0], in[1], got, want)
		}
	}
}
