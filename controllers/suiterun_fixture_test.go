package controllers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/controllers/shared"
	"github.com/ragcanary/ragcanary/controllers/suiterun"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/targettest"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
	"github.com/ragcanary/ragcanary/internal/scoring"
)

// The sample suite's personas, as the test ragtargets know them.
const (
	employeeToken = "test-employee-token"
	contractorTok = "test-contractor-token"
)

const matchedSample = "../config/samples/eval/matched-cases.yaml"

// startMatchedTarget serves a fresh ragtarget for the sample's personas.
// Short sync intervals: planted documents become visible on their own,
// which the run waits for.
func startMatchedTarget(t *testing.T) *targettest.Target {
	return targettest.Start(t, fixtureConfig(ragtarget.Config{
		Tokens:              map[string]string{employeeToken: "user:employee", contractorTok: "user:contractor"},
		ContentSyncInterval: 100 * time.Millisecond, ACLSyncInterval: 100 * time.Millisecond,
	}))
}

// TestMatchedCasesClusterLiveReplay runs the sample fixture suite — the
// protocol's nine matched case kinds — as a SuiteRun against ragtarget,
// then with `ragcanary eval --suite` (live mode) against a second, fresh
// ragtarget, then replays both stored evidence files offline. All four
// reports must be identical apart from latency, the run must remove every
// planted document, and the stored evidence must hold what the fixture's
// policy derives, not what the target returned.
func TestMatchedCasesClusterLiveReplay(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	tg := startMatchedTarget(t)
	createSecret(t, ns, "corpus-source", "token", testSourceToken)
	createSecret(t, ns, "persona-employee", "token", employeeToken)
	createSecret(t, ns, "persona-contractor", "token", contractorTok)
	crCreate(t, objects.Corpus(ns, "ragtarget", tg.URL, objects.SourceSecret("corpus-source", objects.TokenKey),
		objects.CallTimeout(5*time.Second), objects.RateLimit(500, 500)))
	for _, obj := range readObjects(t, matchedSample) {
		obj.SetNamespace(ns)
		crCreate(t, obj)
	}
	run := objects.SuiteRun(ns, "matched-1", "matched-cases")
	crCreate(t, run)

	run = waitRunReleased(t, client.ObjectKeyFromObject(run))
	if c := meta.FindStatusCondition(run.Status.Conditions, v1alpha1.ConditionPassed); c == nil || strings.HasPrefix(c.Reason, "Fixture") {
		t.Fatalf("run did not evaluate: Passed condition %+v", c)
	}
	if f := run.Status.Fixture; f == nil || !f.Removed || f.Documents != 10 || f.Groups != 2 {
		t.Errorf("status.fixture = %+v, want 10 documents and 2 groups, removed", f)
	}
	if !meta.IsStatusConditionTrue(run.Status.Conditions, v1alpha1.ConditionFixtureRemoved) {
		t.Errorf("FixtureRemoved condition not True: %+v", run.Status.Conditions)
	}
	for id := range tg.SourceDocuments() {
		if strings.HasPrefix(id, run.Status.Fixture.Prefix) {
			t.Errorf("run left document %s at the target", id)
		}
	}
	if got := ptr.Deref(run.Status.Executions, 0); got != 13 {
		t.Errorf("executions = %d, want 13 (nine cases, thirteen case × persona)", got)
	}
	if got := ptr.Deref(run.Status.Disclosures, -1); got != 0 {
		t.Errorf("disclosures = %d, want 0: ragtarget filters by principal", got)
	}

	// Status rows per persona and stratum carry the v2 rates with counts;
	// correct abstention is per expected status, never pooled.
	temporal := personaRow(t, run, "employee", "temporal")
	if r := rateOf(t, temporal, "stale_rate"); r.Denominator != 1 {
		t.Errorf("employee/temporal staleRate = %+v, want a ratio over the one answerable case", r)
	}
	abstention := personaRow(t, run, "employee", "abstention")
	var statuses []string
	for _, ca := range abstention.CorrectAbstention {
		statuses = append(statuses, ca.Status)
		if ca.Ratio.Denominator != 1 {
			t.Errorf("employee/abstention %s = %+v, want one case", ca.Status, ca.Ratio)
		}
	}
	if !slices.Equal(statuses, []string{"not_found", "clarify"}) {
		t.Errorf("employee/abstention correctAbstention statuses %v, want not_found and clarify", statuses)
	}
	if r := rateOf(t, personaRow(t, run, "contractor", "private"), "failed_to_abstain_rate"); r.Denominator != 2 {
		t.Errorf("contractor/private failedToAbstainRate = %+v, want over 2 required-block cases", r)
	}

	cm := &corev1.ConfigMap{}
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: run.Status.ReportConfigMapRef.Name}, cm); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	clusterEvidence := filepath.Join(dir, "cluster-evidence.json")
	writeFile(t, clusterEvidence, cm.Data[v1alpha1.ReportKeyEvidence])
	checkDerivedEvidence(t, cm.Data[v1alpha1.ReportKeyEvidence], run.Status.CasesHash)
	clusterReport := normalizedReport(t, []byte(cm.Data[v1alpha1.ReportKeyReport]))
	for _, c := range clusterReport["cases"].([]any) {
		m := c.(map[string]any)
		t.Logf("%-36s %s (declared %v)", m["id"], m["outcome"], m["declared"])
	}

	bin := buildCLI(t, dir)
	liveURL := startMatchedTarget(t).URL
	corpusFile := filepath.Join(dir, "corpus.yaml")
	writeFile(t, corpusFile, fmt.Sprintf(`apiVersion: ragcanary.dev/v1alpha1
kind: Corpus
metadata: {name: ragtarget}
spec:
  driver:
    type: HTTP
    timeout: 5s
    http:
      url: %s
      credentialSecretRef: {name: corpus-source, key: token}
  rateLimit: {requestsPerSecond: 500, burst: 500}
`, liveURL))
	secretsFile := filepath.Join(dir, "secrets.yaml")
	writeFile(t, secretsFile, secretManifest("corpus-source", testSourceToken)+"---\n"+
		secretManifest("persona-employee", employeeToken)+"---\n"+secretManifest("persona-contractor", contractorTok))
	liveEvidence := filepath.Join(dir, "live-evidence.json")
	liveCode, liveOut := runCLI(t, bin, "eval", "--suite", matchedSample, "--corpus", corpusFile, "--personas", secretsFile,
		"--allow-any-target", "--format", "json", "--evidence", liveEvidence)
	wantCode := 1
	if run.Status.Phase == v1alpha1.SuiteRunSucceeded {
		wantCode = 0
	}
	if liveCode != wantCode {
		t.Errorf("live mode exit %d, want %d (the cluster run's verdict)", liveCode, wantCode)
	}
	sameReport(t, "live mode", clusterReport, normalizedReport(t, liveOut))

	for name, file := range map[string]string{"cluster": clusterEvidence, "live": liveEvidence} {
		code, out := runCLI(t, bin, "eval", "--replay", file, "--format", "json")
		if code != wantCode {
			t.Errorf("replaying the %s evidence exits %d, want %d", name, code, wantCode)
		}
		sameReport(t, "replay of the "+name+" evidence", clusterReport, normalizedReport(t, out))
	}
}

// checkDerivedEvidence: the frozen cases carry the evidence sets the
// fixture's policy derives for each persona at the case's asOf.
func checkDerivedEvidence(t *testing.T, data, casesHash string) {
	t.Helper()
	ev, err := scoring.ReadEvidence(strings.NewReader(data))
	if err != nil {
		t.Fatalf("stored evidence: %v", err)
	}
	if ev.CasesHash != casesHash {
		t.Errorf("evidence hash %s, status casesHash %s", ev.CasesHash, casesHash)
	}
	cases := map[string]scoring.CaseV2{}
	for _, c := range ev.Cases {
		cases[c.ID] = c
	}
	for _, tc := range []struct {
		id                  string
		allowed, superseded []string
	}{
		// The employee reads everything current; meal v1 ended before asOf.
		{"stale-version/employee", []string{"vacation-handbook", "salary-bands", "falcon-plan", "executive-travel-memo", "travel-faq",
			"meal-policy-v2", "remote-work-hr", "remote-work-it", "pension-plan"}, []string{"meal-policy-v1"}},
		// The contractor: public documents only, no staff or executive group.
		{"private-support/contractor", []string{"vacation-handbook", "travel-faq", "meal-policy-v2", "pension-plan"}, []string{"meal-policy-v1"}},
	} {
		c, ok := cases[tc.id]
		if !ok {
			t.Errorf("evidence lacks case %s", tc.id)
			continue
		}
		if !slices.Equal(c.Expected.AllowedEvidence, tc.allowed) || !slices.Equal(c.Expected.SupersededEvidence, tc.superseded) {
			t.Errorf("%s: allowed %v superseded %v, want %v and %v", tc.id, c.Expected.AllowedEvidence,
				c.Expected.SupersededEvidence, tc.allowed, tc.superseded)
		}
	}
	// What the system declared is kept: ragtarget says not_found with
	// NO_EVIDENCE when nothing eligible matched.
	for _, x := range ev.Executions {
		if x.CaseID == "missing-support/employee" && (x.Response != scoring.ActionNotFound || x.Reason != "NO_EVIDENCE" || x.AnswerText == "") {
			t.Errorf("missing-support execution %+v, want not_found, NO_EVIDENCE and the answer text", x)
		}
	}
	for _, p := range ev.Personas {
		if p.Subject == "" {
			t.Errorf("persona snapshot %+v lacks the subject", p)
		}
	}
	if strings.Contains(data, employeeToken) || strings.Contains(data, contractorTok) || strings.Contains(data, testSourceToken) {
		t.Error("the stored evidence holds a credential")
	}
	if len(ev.DocumentTexts) != 10 || ev.Corpus == nil || ev.Corpus.Generation == 0 {
		t.Errorf("evidence: %d document texts, corpus %+v; want 10 and the corpus generation", len(ev.DocumentTexts), ev.Corpus)
	}
}

// waitRunReleased waits until the run finished and dropped its finalizer.
func waitRunReleased(t *testing.T, key client.ObjectKey) *v1alpha1.SuiteRun {
	t.Helper()
	run := &v1alpha1.SuiteRun{}
	testutil.Eventually(t, eventuallyTimeout, "suite run finished with its fixture removed", func() error {
		if err := k8sClient.Get(context.Background(), key, run); err != nil {
			return err
		}
		if !shared.SuiteRunFinished(run) {
			return fmt.Errorf("phase %q", run.Status.Phase)
		}
		if controllerutil.ContainsFinalizer(run, suiterun.SuiteRunFinalizer) {
			return errors.New("fixture finalizer still set")
		}
		return nil
	})
	return run
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func secretManifest(name, token string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\n  labels: {ragcanary.dev/credential: \"true\"}\nstringData:\n  token: %s\n", name, token)
}

// buildCLI builds the ragcanary command once for this test.
func buildCLI(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "ragcanary")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/ragcanary")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building ragcanary: %v\n%s", err, out)
	}
	return bin
}

// runCLI runs the command and returns its exit code and stdout.
func runCLI(t *testing.T, bin string, args ...string) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		if exit.ExitCode() == 2 {
			t.Fatalf("%v: invalid input (exit 2): %s", args[:2], stderr.String())
		}
		return exit.ExitCode(), stdout.Bytes()
	case err != nil:
		t.Fatalf("%v: %v: %s", args[:2], err, stderr.String())
	}
	return 0, stdout.Bytes()
}

// normalizedReport decodes a JSON report without what may differ between
// two executions of the same plan: latencies, and the replay annotation
// a replayed report adds.
func normalizedReport(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, data)
	}
	delete(m, "replay")
	dropKeys(m, "latency_ms")
	return m
}

func dropKeys(v any, key string) {
	switch x := v.(type) {
	case map[string]any:
		delete(x, key)
		for _, e := range x {
			dropKeys(e, key)
		}
	case []any:
		for _, e := range x {
			dropKeys(e, key)
		}
	}
}

func sameReport(t *testing.T, what string, want, got map[string]any) {
	t.Helper()
	if reflect.DeepEqual(want, got) {
		return
	}
	w, _ := json.MarshalIndent(want, "", " ")
	g, _ := json.MarshalIndent(got, "", " ")
	t.Errorf("%s report differs from the cluster run's\ncluster: %s\n%s: %s", what, w, what, g)
}
