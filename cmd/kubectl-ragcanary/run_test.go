package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/schedule"
)

func runNowAnnotation(t *testing.T, obj client.Object) string {
	t.Helper()
	if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatalf("reading %s: %v", obj.GetName(), err)
	}
	return obj.GetAnnotations()[v1alpha1.AnnotationRunNow]
}

// TestRunSetsAFreshToken: every call sets a new run-now token (even at the
// same instant), which the controller turns into exactly one run each, and
// names that run. A user without access to Secrets can do it.
func TestRunSetsAFreshToken(t *testing.T) {
	calmFixture(t, "runnow")
	canary := &v1alpha1.RevocationCanary{ObjectMeta: metav1.ObjectMeta{Namespace: "runnow", Name: "docs-grant"}}
	seen := map[string]bool{}
	for i := range 3 {
		res := newInvocation(readerKubeconfig, testNow).run("run", "docs-grant", "-n", "runnow")
		if res.code != exitOK {
			t.Fatalf("call %d: exit %d; stderr: %s", i, res.code, res.stderr)
		}
		token := runNowAnnotation(t, canary)
		if token == "" || seen[token] {
			t.Fatalf("call %d: token %q is empty or was set before (%v)", i, token, seen)
		}
		seen[token] = true
		want := schedule.RunNowName("docs-grant", schedule.NormalizeToken(token))
		containsAll(t, "output", res.stdout, token, "run "+want)
	}
	suite := &v1alpha1.EvalSuite{ObjectMeta: metav1.ObjectMeta{Namespace: "runnow", Name: "access"}}
	if res := ragcanary(testNow, "run", "suite/access", "-n", "runnow"); res.code != exitOK || runNowAnnotation(t, suite) == "" {
		t.Errorf("run suite/access: exit %d, annotation %q; stderr %s", res.code, runNowAnnotation(t, suite), res.stderr)
	}
}

// TestRunAmbiguousName: a canary and a suite of one name need a kind.
func TestRunAmbiguousName(t *testing.T) {
	calmFixture(t, "runamb")
	createSuite(t, "runamb", "docs-grant", "docs", func(*v1alpha1.EvalSuite) {})
	res := ragcanary(testNow, "run", "docs-grant", "-n", "runamb")
	if res.code == exitOK {
		t.Fatalf("an ambiguous name was accepted: %s", res.stdout)
	}
	containsAll(t, "stderr", res.stderr, "canary/docs-grant", "suite/docs-grant")
	if res := ragcanary(testNow, "run", "canary/docs-grant", "-n", "runamb"); res.code != exitOK {
		t.Errorf("canary/docs-grant: exit %d: %s", res.code, res.stderr)
	}
}

// follower runs `run --wait` in the background and lets the test wait for
// what it has printed.
type follower struct {
	t    *testing.T
	in   *invocation
	done chan result
}

func startFollowing(t *testing.T, args ...string) *follower {
	f := &follower{t: t, in: newInvocation(adminKubeconfig, testNow), done: make(chan result, 1)}
	go func() { f.done <- f.in.run(append(args, "--wait", "--poll-interval", "10ms")...) }()
	t.Cleanup(func() {
		select {
		case <-f.done:
		case <-time.After(30 * time.Second):
			t.Error("run --wait did not return")
		}
	})
	return f
}

// waitFor waits until the output holds s.
func (f *follower) waitFor(s string) {
	f.t.Helper()
	testutil.Eventually(f.t, waitTimeout, "output shows "+s, func() error {
		if strings.Contains(f.in.stdout.String(), s) {
			return nil
		}
		return fmt.Errorf("output so far:\n%s\nstderr: %s", f.in.stdout.String(), f.in.stderr.String())
	})
}

func (f *follower) result() result {
	f.t.Helper()
	select {
	case res := <-f.done:
		f.done <- res
		return res
	case <-time.After(20 * time.Second):
		f.t.Fatal("run --wait did not return after the verdict")
		return result{}
	}
}

// tokenPattern finds the run-now token and the run name in output.
var tokenPattern = regexp.MustCompile(`kubectl-[0-9TZ.]+-[0-9a-f]{8}`)

// stable replaces the token and the run name (derived from it) so output
// can be compared with a golden file.
func stable(out, runName string) string {
	return strings.ReplaceAll(tokenPattern.ReplaceAllString(out, "<token>"), runName, "<run>")
}

// TestRunWaitFollowsCanaryRun: `run --wait` on a pipe prints a line per
// phase as the run advances through its lifecycle, then the verdict with
// its intervals, and exits 0 for SLOMet.
func TestRunWaitFollowsCanaryRun(t *testing.T) {
	calmFixture(t, "follow")
	canary := &v1alpha1.RevocationCanary{ObjectMeta: metav1.ObjectMeta{Namespace: "follow", Name: "docs-grant"}}
	f := startFollowing(t, "run", "docs-grant", "-n", "follow")
	f.waitFor("not created yet")
	token := runNowAnnotation(t, canary)
	name := schedule.RunNowName(canary.Name, schedule.NormalizeToken(token))

	run := runOf(canary, name)
	create(t, run)
	f.waitFor("phase Pending")
	S := v1alpha1.SurfaceSearch
	for _, phase := range []v1alpha1.CanaryPhase{v1alpha1.PhasePlanting, v1alpha1.PhaseSharing, v1alpha1.PhaseAwaitingVisibility,
		v1alpha1.PhaseRevoking, v1alpha1.PhaseAwaitingExclusion, v1alpha1.PhaseCleaningUp} {
		run.Status.Phase = phase
		run.Status.StartTime = at(-time.Minute)
		if phase == v1alpha1.PhaseAwaitingExclusion {
			run.Status.RevokeAcknowledgedTime = micro(-5 * time.Second)
		}
		if phase == v1alpha1.PhaseCleaningUp {
			run.Status.Verdict = v1alpha1.VerdictSLOMet
			run.Status.TimeToVisibility = dur(850 * time.Millisecond)
			run.Status.Surfaces = []v1alpha1.SurfaceMeasurement{measured(S, 1290*time.Millisecond, 1610*time.Millisecond, 0, 0)}
		}
		if err := k8sClient.Status().Update(context.Background(), run); err != nil {
			t.Fatal(err)
		}
		f.waitFor("phase " + string(phase))
	}
	run.Status.Phase = v1alpha1.PhaseSucceeded
	run.Status.CompletionTime = at(0)
	run.Status.Message = "excluded within 1.2s–1.7s on Search, inside the 30s SLO"
	if err := k8sClient.Status().Update(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	res := f.result()
	if res.code != exitOK {
		t.Errorf("exit %d, want 0 for SLOMet; stderr: %s", res.code, res.stderr)
	}
	golden(t, "run_wait_canary.txt", stable(res.stdout, name))
}

// TestRunWaitFailingSuiteExits1: following a suite run that fails a gate
// ends with the failing gate and exit 1.
func TestRunWaitFailingSuiteExits1(t *testing.T) {
	calmFixture(t, "follow-suite")
	suite := &v1alpha1.EvalSuite{ObjectMeta: metav1.ObjectMeta{Namespace: "follow-suite", Name: "access"}}
	f := startFollowing(t, "run", "suite/access", "-n", "follow-suite")
	f.waitFor("not created yet")
	token := runNowAnnotation(t, suite)
	name := schedule.RunNowName(suite.Name, schedule.NormalizeToken(token))
	// The run exists before its first status write, as when the controller
	// creates it: the follower sees it Pending first.
	run := createSuiteRun(t, suite, name, func(*v1alpha1.SuiteRun) {})
	f.waitFor("phase Pending")
	run.Status = v1alpha1.SuiteRunStatus{Phase: v1alpha1.SuiteRunRunning, StartTime: at(-10 * time.Second)}
	if err := k8sClient.Status().Update(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	f.waitFor("phase Running")
	run.Status.Phase = v1alpha1.SuiteRunSucceeded
	run.Status.CompletionTime = at(0)
	run.Status.Executions, run.Status.Disclosures, run.Status.ProbeErrors = ptr.To[int32](2), ptr.To[int32](1), ptr.To[int32](0)
	run.Status.Conditions = []metav1.Condition{{Type: "Passed", Status: metav1.ConditionFalse, Reason: "GatesFailed",
		Message: "gate no_forbidden failed", LastTransitionTime: *at(0)}}
	run.Status.Gates = []v1alpha1.GateResult{{Name: "no_forbidden", Value: "1", Threshold: "0"}}
	if err := k8sClient.Status().Update(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	res := f.result()
	if res.code != exitFailed {
		t.Errorf("exit %d, want 1 for a failed gate; stderr: %s", res.code, res.stderr)
	}
	golden(t, "run_wait_suite.txt", stable(res.stdout, name))
}
