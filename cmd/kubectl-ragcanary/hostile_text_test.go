package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/cli"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/schedule"
)

// forged is what a hostile target or status writer puts in a message.
const forged = testutil.ForgedText

// hostileFixture is a namespace whose objects hold forged text wherever
// status allows free text the plugin shows: run messages, condition
// messages, the names in last-run summaries.
func hostileFixture(t *testing.T, ns string) *v1alpha1.RevocationCanary {
	t.Helper()
	fixtureNamespace(t, ns)
	createCorpus(t, ns, "docs", 30*time.Second, 0, ready(metav1.ConditionFalse, v1alpha1.ReasonUnreachable, forged))
	S := v1alpha1.SurfaceSearch
	canary := createCanary(t, ns, "docs-grant", canarySpec("docs", S))
	run := finishedRun(t, canary, "docs-grant-1772436600", -30*time.Minute, v1alpha1.VerdictSLOBreached, time.Second, forged,
		measured(S, 40*time.Second, 41*time.Second, 0, 0))
	run.Status.Conditions = []metav1.Condition{{Type: "Complete", Status: metav1.ConditionTrue, Reason: "SLOBreached",
		Message: forged, LastTransitionTime: *at(-27 * time.Minute)}}
	if err := k8sClient.Status().Update(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	setCanaryStatus(t, canary, func(s *v1alpha1.RevocationCanaryStatus) {
		s.Conditions = ready(metav1.ConditionTrue, "Scheduled", forged)
		s.LastRun = summaryOf(run)
		s.LastRun.Name = forged
	})
	createSuite(t, ns, "access", "docs", func(s *v1alpha1.EvalSuite) {
		s.Status.Conditions = ready(metav1.ConditionTrue, "Scheduled", forged)
		s.Status.LastRun = &v1alpha1.SuiteRunSummary{Name: forged, CompletionTime: at(-time.Hour)}
	})
	return canary
}

// TestOutputQuotesObjectText: no command writes text read from an object
// so that the terminal acts on it. Text output shows the escapes quoted;
// JSON keeps the exact value, with the escapes as \u sequences.
func TestOutputQuotesObjectText(t *testing.T) {
	hostileFixture(t, "hostile")

	res := ragcanary(testNow, "status", "-n", "hostile")
	testutil.ShowsForgedQuoted(t, "status", res.stdout)
	res = ragcanary(testNow, "history", "docs-grant", "-n", "hostile")
	testutil.NoRawEscapes(t, "history", res.stdout)
	if res.code != exitOK {
		t.Errorf("history: exit %d; stderr %s", res.code, res.stderr)
	}

	res = ragcanary(testNow, "status", "-n", "hostile", "-o", "json")
	testutil.NoRawEscapes(t, "status -o json", res.stdout)
	var f cli.Fleet
	if err := json.Unmarshal([]byte(res.stdout), &f); err != nil {
		t.Fatalf("status -o json is not JSON: %v\n%s", err, res.stdout)
	}
	if len(f.Corpora) != 1 || f.Corpora[0].Message != forged || len(f.Suites) != 1 || f.Suites[0].LastRun.Name != forged {
		t.Errorf("status -o json changed the values: corpora %+v, suites %+v", f.Corpora, f.Suites)
	}
	res = ragcanary(testNow, "history", "docs-grant", "-n", "hostile", "-o", "json")
	testutil.NoRawEscapes(t, "history -o json", res.stdout)

	for _, format := range []string{"md", "html", "json"} {
		res = ragcanary(testNow, "report", "docs-grant-1772436600", "-n", "hostile", "-o", "-", "--format", format)
		if res.code != exitOK {
			t.Fatalf("report --format %s: exit %d; stderr %s", format, res.code, res.stderr)
		}
		testutil.NoRawEscapes(t, "report --format "+format, res.stdout)
	}
}

// TestRunWaitQuotesObjectText: following a canary run whose message is
// forged, and a suite run whose Passed condition message is, shows both
// quoted: no cleared screen and no green verdict the run did not reach.
func TestRunWaitQuotesObjectText(t *testing.T) {
	canary := hostileFixture(t, "hostile-follow")
	f := startFollowing(t, "run", "docs-grant", "-n", "hostile-follow")
	f.waitFor("not created yet")
	name := schedule.RunNowName(canary.Name, schedule.NormalizeToken(runNowAnnotation(t, canary)))
	run := runOf(canary, name)
	create(t, run)
	f.waitFor("phase Pending")
	run.Status = v1alpha1.CanaryRunStatus{Phase: v1alpha1.PhaseFailed, Verdict: v1alpha1.VerdictSetupFailed,
		Message: forged, StartTime: at(-time.Minute), CompletionTime: at(0)}
	if err := k8sClient.Status().Update(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	res := f.result()
	if res.code != exitFailed {
		t.Errorf("exit %d, want 1 for SetupFailed; stderr: %s", res.code, res.stderr)
	}
	testutil.ShowsForgedQuoted(t, "run --wait", res.stdout)

	suite := &v1alpha1.EvalSuite{ObjectMeta: metav1.ObjectMeta{Namespace: "hostile-follow", Name: "access"}}
	f = startFollowing(t, "run", "suite/access", "-n", "hostile-follow")
	f.waitFor("not created yet")
	suiteRun := createSuiteRun(t, suite, schedule.RunNowName(suite.Name, schedule.NormalizeToken(runNowAnnotation(t, suite))),
		func(r *v1alpha1.SuiteRun) {
			r.Status = v1alpha1.SuiteRunStatus{Phase: v1alpha1.SuiteRunSucceeded, StartTime: at(-time.Minute), CompletionTime: at(0),
				Conditions: []metav1.Condition{{Type: "Passed", Status: metav1.ConditionFalse, Reason: "GatesFailed",
					Message: forged, LastTransitionTime: *at(0)}}}
		})
	res = f.result()
	if res.code != exitFailed {
		t.Errorf("suite %s: exit %d, want 1; stderr: %s", suiteRun.Name, res.code, res.stderr)
	}
	testutil.ShowsForgedQuoted(t, "run suite --wait", res.stdout)
}
