package main

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
)

// testNow is the clock of every invocation: output is reproducible.
var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// secretValues are the values of every Secret the fixtures create. None
// may ever appear in the plugin's output.
var secretValues = map[string]string{
	"source-cred":  "S3CRET-source-b7f2c91e",
	"alice-cred":   "S3CRET-alice-0d4e8a73",
	"mallory-cred": "S3CRET-mallory-5c19f0aa",
	"run-token":    "S3CRET-canary-token-e61b2d",
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8sClient.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// createWithStatus creates obj, then writes the status setStatus gives it
// through the status subresource, as a controller would.
func createWithStatus[T client.Object](t *testing.T, obj T, setStatus func(T)) T {
	t.Helper()
	create(t, obj)
	setStatus(obj)
	if err := k8sClient.Status().Update(context.Background(), obj); err != nil {
		t.Fatalf("writing status of %T %s: %v", obj, obj.GetName(), err)
	}
	return obj
}

func at(d time.Duration) *metav1.Time { return &metav1.Time{Time: testNow.Add(d)} }

func micro(d time.Duration) *metav1.MicroTime { return &metav1.MicroTime{Time: testNow.Add(d)} }

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func ready(status metav1.ConditionStatus, reason, message string) []metav1.Condition {
	return []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: status, Reason: reason, Message: message,
		LastTransitionTime: metav1.Time{Time: testNow.Add(-3 * time.Hour)}}}
}

func condition(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, LastTransitionTime: metav1.Time{Time: testNow.Add(-3 * time.Hour)}}
}

func createSecrets(t *testing.T, ns string) {
	for name, value := range secretValues {
		create(t, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"ragcanary.dev/credential": "true"}},
			Data:       map[string][]byte{"token": []byte(value)},
		})
	}
}

func createCorpus(t *testing.T, ns, name string, slo, cacheSLO time.Duration, conds []metav1.Condition) {
	t.Helper()
	corpus := objects.Corpus(ns, name, "https://"+name+".rag.example.com", objects.SourceSecret("source-cred", "token"),
		objects.ExclusionSLO(slo))
	if cacheSLO > 0 {
		corpus.Spec.Freshness.CacheInvalidationSLO = dur(cacheSLO)
	}
	createWithStatus(t, corpus, func(c *v1alpha1.Corpus) { c.Status.Conditions = conds })
}

func createPersonas(t *testing.T, ns string) {
	t.Helper()
	for _, p := range []struct{ name, subject string }{{"alice", "alice@example.com"}, {"mallory", "mallory@example.com"}} {
		createWithStatus(t, objects.Persona(ns, p.name, p.subject), func(o *v1alpha1.Persona) {
			o.Status.Conditions = ready(metav1.ConditionTrue, v1alpha1.ReasonSecretFound, "")
		})
	}
}

// canarySpec probes the given surfaces of corpus as alice, with mallory as
// the control persona, judged by the corpus's SLO.
func canarySpec(corpus string, surfaces ...v1alpha1.Surface) v1alpha1.CanarySpec {
	return objects.CanarySpec(objects.OnCorpus(corpus), objects.SLO(0), objects.Every(time.Second, 3),
		objects.Timeouts(time.Minute, 2*time.Minute), objects.Probe(surfaces...))
}

func createCanary(t *testing.T, ns, name string, spec v1alpha1.CanarySpec) *v1alpha1.RevocationCanary {
	t.Helper()
	canary := objects.RevocationCanary(ns, name, 10*time.Minute)
	canary.Spec.CanarySpec = spec
	create(t, canary)
	return canary
}

// measured is one surface's persisted measurement; a negative bound is unset.
func measured(s v1alpha1.Surface, lower, upper time.Duration, reappearances, errs int32) v1alpha1.SurfaceMeasurement {
	return v1alpha1.SurfaceMeasurement{Surface: s, Reappearances: reappearances, Excluded: upper >= 0,
		Probes: v1alpha1.ProbeCounts{Positive: 4, Negative: 3, Errors: errs}, Bounds: objects.Bounds(lower, upper)}
}

// finishedRun is a run of canary that started at start and finished 3m
// later with verdict and the given measurements.
func finishedRun(t *testing.T, canary *v1alpha1.RevocationCanary, name string, start time.Duration, verdict v1alpha1.Verdict,
	ttv time.Duration, message string, surfaces ...v1alpha1.SurfaceMeasurement) *v1alpha1.CanaryRun {
	t.Helper()
	return createWithStatus(t, runOf(canary, name), func(r *v1alpha1.CanaryRun) {
		r.Status = v1alpha1.CanaryRunStatus{
			Phase: phaseOf(verdict), Verdict: verdict, Message: message,
			DocumentID: "rc-" + string(r.UID), TokenSecretName: "run-token", TokenHash: "3f9a0c1d",
			StartTime:           at(start),
			ShareRequestedTime:  micro(start + 2*time.Second),
			VisibleTime:         micro(start + 2*time.Second + ttv),
			TimeToVisibility:    dur(ttv),
			RevokeRequestedTime: micro(start + 10*time.Second), RevokeAcknowledgedTime: micro(start + 10*time.Second + 40*time.Millisecond),
			Surfaces:       surfaces,
			CompletionTime: at(start + 3*time.Minute),
		}
	})
}

func phaseOf(v v1alpha1.Verdict) v1alpha1.CanaryPhase {
	if v == v1alpha1.VerdictSetupFailed || v == v1alpha1.VerdictInconclusive {
		return v1alpha1.PhaseFailed
	}
	return v1alpha1.PhaseSucceeded
}

// runOf is a CanaryRun controlled by canary, labelled as the controller
// labels it.
func runOf(canary *v1alpha1.RevocationCanary, name string) *v1alpha1.CanaryRun {
	return &v1alpha1.CanaryRun{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: canary.Namespace, Name: name,
			Labels: map[string]string{v1alpha1.LabelCanary: canary.Name},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: "RevocationCanary",
				Name: canary.Name, UID: canary.UID, Controller: ptr.To(true),
			}},
		},
		Spec: v1alpha1.CanaryRunSpec{CanarySpec: canary.Spec.CanarySpec},
	}
}

// summaryOf is the canary's lastRun for run, as the controller writes it.
func summaryOf(run *v1alpha1.CanaryRun) *v1alpha1.RunSummary {
	s := &v1alpha1.RunSummary{Name: run.Name, Verdict: run.Status.Verdict, CompletionTime: run.Status.CompletionTime,
		TimeToVisibility: run.Status.TimeToVisibility}
	for _, m := range run.Status.Surfaces {
		s.Surfaces = append(s.Surfaces, v1alpha1.SurfaceSummary{Surface: m.Surface, Bounds: m.Bounds, SLO: m.SLO, SLOSource: m.SLOSource})
	}
	return s
}

// setCanaryStatus writes the canary's status once its runs exist.
func setCanaryStatus(t *testing.T, canary *v1alpha1.RevocationCanary, set func(*v1alpha1.RevocationCanaryStatus)) {
	t.Helper()
	set(&canary.Status)
	if err := k8sClient.Status().Update(context.Background(), canary); err != nil {
		t.Fatalf("writing canary status: %v", err)
	}
}

func createSuite(t *testing.T, ns, name, corpus string, setStatus func(*v1alpha1.EvalSuite)) *v1alpha1.EvalSuite {
	t.Helper()
	cases := []v1alpha1.EvalCase{{ID: "salary-bands", Question: "What are the salary bands?", Stratum: "hr",
		Expectations: []v1alpha1.Expectation{{Persona: "mallory", MustAbstain: true}}}}
	return createWithStatus(t, objects.EvalSuite(ns, name, cases, objects.SuiteOnCorpus(corpus), objects.TopK(5, 4)), setStatus)
}

func createSuiteRun(t *testing.T, suite *v1alpha1.EvalSuite, name string, setStatus func(*v1alpha1.SuiteRun)) *v1alpha1.SuiteRun {
	t.Helper()
	run := objects.SuiteRun(suite.Namespace, name, suite.Name)
	run.Labels = map[string]string{v1alpha1.LabelSuite: suite.Name}
	run.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "EvalSuite",
		Name: suite.Name, UID: suite.UID, Controller: ptr.To(true)}}
	return createWithStatus(t, run, setStatus)
}

// fixtureNamespace is a namespace with the credential Secrets and the
// personas every fixture's canaries use.
func fixtureNamespace(t *testing.T, ns string) {
	t.Helper()
	createNamespace(t, ns)
	createSecrets(t, ns)
	createPersonas(t, ns)
}

// fleetFixture is a namespace with a healthy and an unreachable corpus, a
// canary with four kept runs (one NotExcluded, one in flight), a canary
// whose last run breached its SLO, a suite whose last run leaked, and one
// whose last run is no longer kept.
func fleetFixture(t *testing.T, ns string) {
	t.Helper()
	fixtureNamespace(t, ns)
	createCorpus(t, ns, "docs", 30*time.Second, time.Minute, ready(metav1.ConditionTrue, v1alpha1.ReasonReachable, "contract v1"))
	createCorpus(t, ns, "wiki", 30*time.Second, 0, ready(metav1.ConditionFalse, v1alpha1.ReasonUnreachable, "GET /v1/capabilities: connection refused"))

	S, A := v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer
	docs := createCanary(t, ns, "docs-grant", canarySpec("docs", S, A))
	finishedRun(t, docs, "docs-grant-1772330400", -30*time.Hour, v1alpha1.VerdictSLOMet, 900*time.Millisecond, "",
		measured(S, 1100*time.Millisecond, 1500*time.Millisecond, 0, 0), measured(A, 2*time.Second, 2400*time.Millisecond, 0, 0))
	finishedRun(t, docs, "docs-grant-1772431200", -2*time.Hour, v1alpha1.VerdictSLOMet, 850*time.Millisecond, "",
		measured(S, 1290*time.Millisecond, 1610*time.Millisecond, 0, 0), measured(A, 2100*time.Millisecond, 2600*time.Millisecond, 0, 0))
	finishedRun(t, docs, "docs-grant-1772434800", -time.Hour, v1alpha1.VerdictNotExcluded, 1200*time.Millisecond,
		"the canary was still visible on Search at the exclusion timeout (2m0s)",
		measured(S, 2*time.Minute, -1, 0, 3), measured(A, 4200*time.Millisecond, 5100*time.Millisecond, 1, 0))
	last := finishedRun(t, docs, "docs-grant-1772436600", -30*time.Minute, v1alpha1.VerdictSLOMet, 5916485*time.Microsecond, "",
		measured(S, 1400*time.Millisecond, 2210*time.Millisecond, 0, 0), measured(A, 3*time.Second, 4900*time.Millisecond, 0, 1))
	inFlight := createWithStatus(t, runOf(docs, "docs-grant-1772438400"), func(r *v1alpha1.CanaryRun) {
		r.Status = v1alpha1.CanaryRunStatus{
			Phase: v1alpha1.PhaseAwaitingExclusion, StartTime: at(-40 * time.Second),
			TimeToVisibility:    dur(time.Second),
			RevokeRequestedTime: micro(-12*time.Second - 50*time.Millisecond), RevokeAcknowledgedTime: micro(-12 * time.Second),
			Surfaces: []v1alpha1.SurfaceMeasurement{
				{Surface: S, LastPositiveStart: micro(-2 * time.Second), Probes: v1alpha1.ProbeCounts{Positive: 10}},
				{Surface: A, Excluded: true, NegativeStreak: 3, Probes: v1alpha1.ProbeCounts{Positive: 2, Negative: 3}},
			},
		}
	})
	setCanaryStatus(t, docs, func(s *v1alpha1.RevocationCanaryStatus) {
		s.Conditions = append(ready(metav1.ConditionTrue, "Scheduled", ""), condition("SLOMet", metav1.ConditionTrue, "SLOMet"))
		s.Active = []v1alpha1.LocalObjectReference{{Name: inFlight.Name}}
		s.NextScheduleTime = at(4 * time.Minute)
		s.LastRun = summaryOf(last)
	})

	wiki := createCanary(t, ns, "wiki-group", canarySpec("wiki", S))
	breached := finishedRun(t, wiki, "wiki-group-1772436000", -40*time.Minute, v1alpha1.VerdictSLOBreached, 2*time.Second,
		"exclusion took between 40s and 41.3s on Search, over the 30s SLO",
		measured(S, 40*time.Second, 41300*time.Millisecond, 0, 0))
	setCanaryStatus(t, wiki, func(s *v1alpha1.RevocationCanaryStatus) {
		s.Conditions = append(ready(metav1.ConditionFalse, "CorpusNotReady", "corpus wiki is not Ready"),
			condition("SLOMet", metav1.ConditionFalse, "SLOBreached"))
		s.LastRun = summaryOf(breached)
	})

	access := createSuite(t, ns, "access", "docs", func(*v1alpha1.EvalSuite) {})
	run := createSuiteRun(t, access, "access-1772434800", func(r *v1alpha1.SuiteRun) {
		r.Status = v1alpha1.SuiteRunStatus{Phase: v1alpha1.SuiteRunSucceeded, StartTime: at(-time.Hour), CompletionTime: at(-59 * time.Minute),
			Executions: ptr.To[int32](24), Disclosures: ptr.To[int32](1), ProbeErrors: ptr.To[int32](0),
			Conditions: []metav1.Condition{condition("Passed", metav1.ConditionFalse, "GatesFailed")},
			Gates: []v1alpha1.GateResult{
				{Name: "no_forbidden", Passed: false, Value: "1", Threshold: "0"},
				{Name: "citation_validity", Passed: true, Value: "0", Threshold: "0"},
				{Name: "min_recall", Passed: true, Value: "0.91", Threshold: "0.8"},
			}}
	})
	access.Status.Conditions = ready(metav1.ConditionTrue, "Scheduled", "")
	access.Status.LastRun = &v1alpha1.SuiteRunSummary{Name: run.Name, Passed: false, Disclosures: 1, CompletionTime: run.Status.CompletionTime}
	if err := k8sClient.Status().Update(context.Background(), access); err != nil {
		t.Fatal(err)
	}
	createSuite(t, ns, "handbook", "docs", func(s *v1alpha1.EvalSuite) {
		s.Status.Conditions = ready(metav1.ConditionTrue, "Scheduled", "")
		s.Status.LastRun = &v1alpha1.SuiteRunSummary{Name: "handbook-1772341200", Passed: true, CompletionTime: at(-27 * time.Hour)}
	})
}

// calmFixture is a namespace where everything is fine.
func calmFixture(t *testing.T, ns string) {
	t.Helper()
	fixtureNamespace(t, ns)
	createCorpus(t, ns, "docs", 30*time.Second, 0, ready(metav1.ConditionTrue, v1alpha1.ReasonReachable, "contract v1"))
	S := v1alpha1.SurfaceSearch
	docs := createCanary(t, ns, "docs-grant", canarySpec("docs", S))
	last := finishedRun(t, docs, "docs-grant-1772436600", -30*time.Minute, v1alpha1.VerdictSLOMet, 900*time.Millisecond, "",
		measured(S, 1400*time.Millisecond, 2210*time.Millisecond, 0, 0))
	setCanaryStatus(t, docs, func(s *v1alpha1.RevocationCanaryStatus) {
		s.Conditions = append(ready(metav1.ConditionTrue, "Scheduled", ""), condition("SLOMet", metav1.ConditionTrue, "SLOMet"))
		s.LastRun = summaryOf(last)
	})
	createSuite(t, ns, "access", "docs", func(s *v1alpha1.EvalSuite) {
		s.Status.LastRun = &v1alpha1.SuiteRunSummary{Name: "access-1772434800", Passed: true, CompletionTime: at(-time.Hour)}
	})
}
