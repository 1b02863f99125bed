package main

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/suite"
)

// reportCanaryFixture is a namespace with Secrets of distinctive values, a
// corpus whose answers have their own SLO, and one finished canary run.
func reportCanaryFixture(t *testing.T, ns string) *v1alpha1.CanaryRun {
	t.Helper()
	fixtureNamespace(t, ns)
	createCorpus(t, ns, "docs", 30*time.Second, time.Minute, ready(metav1.ConditionTrue, v1alpha1.ReasonReachable, "contract v1"))
	S, A := v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer
	docs := createCanary(t, ns, "docs-grant", canarySpec("docs", S, A))
	return finishedRun(t, docs, "docs-grant-1772436600", -30*time.Minute, v1alpha1.VerdictSLOMet, 900*time.Millisecond,
		"exclusion confirmed on every surface within its SLO",
		measured(S, 1400*time.Millisecond, 2210*time.Millisecond, 0, 0), measured(A, 3*time.Second, 4900*time.Millisecond, 1, 2))
}

// reportSuiteFixture scores executions with the suite engine and stores
// status and the report ConfigMap as the SuiteRun controller does: mallory,
// who must be refused, is shown the salary bands.
func reportSuiteFixture(t *testing.T, ns string) *v1alpha1.SuiteRun {
	t.Helper()
	access := createSuite(t, ns, "access", "docs", func(*v1alpha1.EvalSuite) {})
	execs := []suite.Execution{{CaseID: "salary-bands", Persona: "mallory", Stratum: "hr", Hits: []string{"hr-bands"}}}
	plan, err := suite.PlanCases(access.Spec.Cases, int(access.Spec.K), suite.Gates{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := suite.Score(plan, execs, nil)
	if err != nil {
		t.Fatal(err)
	}
	name := "access-1772434800"
	data, err := suite.ReportData(res, 0)
	if err != nil {
		t.Fatal(err)
	}
	create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-report"}, Data: data})
	return createSuiteRun(t, access, name, func(r *v1alpha1.SuiteRun) {
		r.Status = v1alpha1.SuiteRunStatus{
			Phase: v1alpha1.SuiteRunFailed, StartTime: at(-time.Hour), CompletionTime: at(-time.Hour + 2*time.Second),
			Executions: ptr.To(int32(res.Executions)), Disclosures: ptr.To(int32(res.Disclosures)), ProbeErrors: ptr.To[int32](0),
			Conditions: []metav1.Condition{{Type: "Passed", Status: metav1.ConditionFalse, Reason: "DisclosureDetected",
				Message: "1 of 1 executions returned or cited forbidden evidence; see failingCases", LastTransitionTime: *at(-time.Hour)}},
			Personas: suite.PersonaResults(res), Gates: suite.GateResults(res), FailingCases: suite.FailingCases(res),
			ReportConfigMapRef: &v1alpha1.LocalObjectReference{Name: name + "-report"},
		}
	})
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the report was not written: %v", err)
	}
	return string(b)
}

func TestReportCanaryRunFiles(t *testing.T) {
	ns := "report-canary"
	run := reportCanaryFixture(t, ns)
	dir := t.TempDir()
	files := map[string]string{}
	for _, ext := range []string{"json", "md", "html"} {
		path := filepath.Join(dir, "report."+ext)
		res := ragcanary(testNow, "-n", ns, "report", run.Name, "-o", path)
		if res.code != exitOK {
			t.Fatalf("report -o %s exited %d: %s", path, res.code, res.stderr)
		}
		containsAll(t, "stdout", res.stdout, "wrote "+path, "CanaryRun "+ns+"/"+run.Name)
		files[ext] = readFile(t, path)
	}

	var ev struct {
		Kind        string    `json:"kind"`
		GeneratedAt time.Time `json:"generatedAt"`
		CanaryRun   struct {
			Canary   string `json:"canary"`
			Verdict  string `json:"verdict"`
			Surfaces []struct {
				Surface    string   `json:"surface"`
				SLO        float64  `json:"sloSeconds"`
				Lower      *float64 `json:"lowerSeconds"`
				Upper      *float64 `json:"upperSeconds"`
				AgainstSLO string   `json:"againstSLO"`
				Probes     struct{ Total int32 }
			} `json:"surfaces"`
		} `json:"canaryRun"`
	}
	if err := json.Unmarshal([]byte(files["json"]), &ev); err != nil {
		t.Fatalf("report.json does not decode: %v", err)
	}
	c := ev.CanaryRun
	if ev.Kind != "CanaryRun" || !ev.GeneratedAt.Equal(testNow) || c.Canary != "docs-grant" || c.Verdict != "SLOMet" || len(c.Surfaces) != 2 {
		t.Fatalf("report.json header: %+v", ev)
	}
	search, answer := c.Surfaces[0], c.Surfaces[1]
	// Exact values in JSON; the answer surface is judged by the corpus's cache-invalidation SLO.
	if *search.Lower != 1.4 || *search.Upper != 2.21 || search.SLO != 30 || search.AgainstSLO != "WithinSLO" || search.Probes.Total != 7 {
		t.Errorf("search surface: %+v", search)
	}
	if answer.SLO != 60 || *answer.Upper != 4.9 || answer.Probes.Total != 9 {
		t.Errorf("answer surface: %+v", answer)
	}

	// People read a rounded interval that only ever widens.
	containsAll(t, "report.md", files["md"],
		"**Verdict: SLOMet**",
		"| Search | 1.4s–2.3s | 30s | within SLO (upper ≤ 30s) | corpus freshness.exclusionSLO | yes |",
		"| Answer | 3s–4.9s | 1m | within SLO (upper ≤ 1m) | corpus freshness.cacheInvalidationSLO | yes |",
		"| mallory | — | — | no: no probes recorded |",
		"| persona credential | alice-cred | token |")
	containsAll(t, "report.html", files["html"], `<svg class="chart" id="exclusion-chart"`, `<table id="bounds">`, "1.4s–2.3s")
}

func TestReportSuiteRunFromConfigMap(t *testing.T) {
	ns := "report-suite"
	reportCanaryFixture(t, ns)
	run := reportSuiteFixture(t, ns)
	res := ragcanary(testNow, "-n", ns, "report", "suiterun/"+run.Name, "-o", "-", "--format", "md")
	if res.code != exitOK {
		t.Fatalf("report exited %d: %s", res.code, res.stderr)
	}
	containsAll(t, "suite report", res.stdout,
		"**Verdict: Failed**",
		"- **Decided by:** failed gates: no_forbidden",
		"From report ConfigMap "+run.Name+"-report.",
		"| salary-bands | mallory | disclosure | yes | hr-bands |",
		"Stratum hr",
		// mallory has no answerable case: utility is undefined, never 0.
		"| mallory | 0/0 undefined | 0/0 undefined | 1/1 = 1 | 1 | 0/1 = 0 |")
}

// TestReportNeverShowsSecretValues builds every format of both kinds from
// objects next to Secrets with distinctive values, as cluster admin (who
// could read them) and as a user who may not read Secrets at all.
func TestReportNeverShowsSecretValues(t *testing.T) {
	ns := "report-secrets"
	canaryRun := reportCanaryFixture(t, ns)
	suiteRun := reportSuiteFixture(t, ns)
	for _, who := range []struct{ name, kubeconfig string }{{"admin", adminKubeconfig}, {"reader", readerKubeconfig}} {
		for _, run := range []string{"canaryrun/" + canaryRun.Name, "suiterun/" + suiteRun.Name} {
			for _, f := range []string{"html", "json", "md"} {
				res := newInvocation(who.kubeconfig, testNow).run("-n", ns, "report", run, "-o", "-", "--format", f)
				if res.code != exitOK {
					t.Fatalf("%s: report %s --format %s exited %d: %s", who.name, run, f, res.code, res.stderr)
				}
				out := res.stdout + res.stderr
				for name, value := range secretValues {
					for _, form := range []string{value, base64.StdEncoding.EncodeToString([]byte(value))} {
						if strings.Contains(out, form) {
							t.Errorf("%s: the %s report of %s shows the value of Secret %s", who.name, f, run, name)
						}
					}
				}
				// The report does show which Secrets are involved, by name.
				if !strings.Contains(out, "source-cred") {
					t.Errorf("%s: the %s report of %s does not name the corpus credential Secret", who.name, f, run)
				}
			}
		}
	}
	// The reader may not read the report ConfigMap: the report says so
	// and lists the failing cases status keeps, rather than none.
	res := newInvocation(readerKubeconfig, testNow).run("-n", ns, "report", suiteRun.Name, "-o", "-", "--format", "md")
	containsAll(t, "reader's suite report", res.stdout, "could not be read: forbidden", "| salary-bands | mallory | disclosure | yes | hr-bands |")
}

func TestReportNamesAndExitCodes(t *testing.T) {
	ns := "report-names"
	run := reportCanaryFixture(t, ns)
	// A SuiteRun with the CanaryRun's name makes the bare name ambiguous.
	access := createSuite(t, ns, "access", "docs", func(*v1alpha1.EvalSuite) {})
	createSuiteRun(t, access, run.Name, func(r *v1alpha1.SuiteRun) { r.Status.Phase = v1alpha1.SuiteRunRunning })
	out := filepath.Join(t.TempDir(), "r.md")
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"ambiguous name", []string{"report", run.Name, "-o", out}, exitInvalid, "canaryrun/" + run.Name},
		{"kind given", []string{"report", "canaryrun/" + run.Name, "-o", out}, exitOK, ""},
		{"running suite run", []string{"report", "rcsr/" + run.Name, "-o", out}, exitOK, ""},
		{"no such run", []string{"report", "nope", "-o", out}, exitFailed, "no CanaryRun or SuiteRun"},
		{"no such canary run", []string{"report", "canaryrun/nope", "-o", out}, exitFailed, "no such run"},
		{"unknown kind", []string{"report", "pod/x", "-o", out}, exitInvalid, "not a run kind"},
		{"no output", []string{"report", run.Name}, exitInvalid, "-o FILE is required"},
		{"unknown extension", []string{"report", run.Name, "-o", "r.pdf"}, exitInvalid, "unknown report format"},
		{"stdout without format", []string{"report", run.Name, "-o", "-"}, exitInvalid, "needs --format"},
		{"two runs", []string{"report", "a", "b", "-o", out}, exitInvalid, "expected one run"},
	} {
		res := ragcanary(testNow, append([]string{"-n", ns}, tc.args...)...)
		if res.code != tc.code || !strings.Contains(res.stderr, tc.stderr) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and %q", tc.name, res.code, res.stderr, tc.code, tc.stderr)
		}
	}
	running := ragcanary(testNow, "-n", ns, "report", "suiterun/"+run.Name, "-o", "-", "--format", "md")
	containsAll(t, "running suite run", running.stdout, "**Verdict: undecided**", "- **Executions (case × persona):** —")
	if _, err := os.Stat("r.pdf"); err == nil {
		t.Errorf("a refused format still wrote a file")
	}
}
