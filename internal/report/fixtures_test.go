package report

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/suite"
)

// t0 is the fixtures' fixed clock: every timestamp is an offset from it.
var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// reportTime is when the fixtures' reports are "generated".
var reportTime = t0.Add(2 * time.Hour)

func at(d time.Duration) *metav1.Time { return &metav1.Time{Time: t0.Add(d)} }

func atMicro(d time.Duration) *metav1.MicroTime { return &metav1.MicroTime{Time: t0.Add(d)} }

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func written(d time.Duration) []metav1.ManagedFieldsEntry {
	return []metav1.ManagedFieldsEntry{
		{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, Time: at(d)},
		// A status write never counts as a change of the spec.
		{Manager: "manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: at(d + 5*time.Hour)},
	}
}

// canaryFixture is a finished run whose search surface met its SLO and
// whose answer cache certainly breached it; one control persona probed,
// one was never recorded.
func canaryFixture() CanaryInput {
	run := &v1alpha1.CanaryRun{
		ObjectMeta: metav1.ObjectMeta{
			Name: "hr-canary-1772359200", Namespace: "rag", UID: "0b7d1c2e-run",
			CreationTimestamp: *at(0),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "ragcanary.dev/v1alpha1", Kind: "RevocationCanary",
				Name: "hr-canary", UID: "canary-uid", Controller: ptr.To(true)}},
		},
		Spec: v1alpha1.CanaryRunSpec{CanarySpec: v1alpha1.CanarySpec{
			CorpusRef:          v1alpha1.LocalObjectReference{Name: "hr-docs"},
			PersonaRef:         v1alpha1.LocalObjectReference{Name: "alice"},
			ControlPersonaRefs: []v1alpha1.LocalObjectReference{{Name: "mallory"}, {Name: "eve"}},
			Revocation:         v1alpha1.Revocation{Method: v1alpha1.RevokeRemoveGrant},
			Probing: v1alpha1.Probing{Interval: metav1.Duration{Duration: 250 * time.Millisecond}, Confirmations: 3,
				VisibilityTimeout: metav1.Duration{Duration: 2 * time.Minute}, ExclusionTimeout: metav1.Duration{Duration: 5 * time.Minute},
				Surfaces: []v1alpha1.Surface{v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer}},
		}},
		Status: v1alpha1.CanaryRunStatus{
			Phase:   v1alpha1.PhaseSucceeded,
			Verdict: v1alpha1.VerdictSLOBreached,
			Message: "Answer: time to exclusion 42.1s–45.2s exceeds the SLO of 30s",
			Conditions: []metav1.Condition{{Type: "Complete", Status: metav1.ConditionTrue, Reason: "Finished",
				Message: "the run finished and its canary document was removed", LastTransitionTime: *at(58 * time.Second)}},
			DocumentID:             "ragcanary-0b7d1c2e",
			TokenSecretName:        "hr-canary-1772359200-token",
			TokenHash:              "3f2a9c1e",
			StartTime:              at(0),
			ShareRequestedTime:     atMicro(1234567 * time.Microsecond),
			VisibleTime:            atMicro(3500 * time.Millisecond),
			TimeToVisibility:       dur(2265433 * time.Microsecond),
			RevokeRequestedTime:    atMicro(10000100 * time.Microsecond),
			RevokeAcknowledgedTime: atMicro(10350 * time.Millisecond),
			Surfaces: []v1alpha1.SurfaceMeasurement{
				{
					Surface:           v1alpha1.SurfaceSearch,
					LastPositiveStart: atMicro(11600 * time.Millisecond),
					FirstNegativeEnd:  atMicro(11750 * time.Millisecond),
					NegativeStreak:    3, Excluded: true, LastReply: "Absent",
					Bounds: &v1alpha1.ExclusionBounds{Lower: dur(1250 * time.Millisecond), Upper: dur(1749900 * time.Microsecond)},
					Probes: v1alpha1.ProbeCounts{Positive: 3, Negative: 3, Errors: 1},
				},
				{
					Surface:           v1alpha1.SurfaceAnswer,
					LastPositiveStart: atMicro(52500 * time.Millisecond),
					FirstNegativeEnd:  atMicro(55200 * time.Millisecond),
					NegativeStreak:    3, Reappearances: 1, Excluded: true, LastReply: "Absent",
					Bounds: &v1alpha1.ExclusionBounds{Lower: dur(42150 * time.Millisecond), Upper: dur(45199900 * time.Microsecond)},
					Probes: v1alpha1.ProbeCounts{Positive: 18, Negative: 4},
				},
			},
			ControlProbes:     []v1alpha1.ControlProbeCounts{{Persona: "mallory", Answered: 20, Errors: 1}},
			LastHeartbeatTime: at(57 * time.Second),
			CompletionTime:    at(58 * time.Second),
		},
	}
	corpus := &v1alpha1.Corpus{
		ObjectMeta: metav1.ObjectMeta{Name: "hr-docs", Namespace: "rag", Generation: 2, ManagedFields: written(-time.Hour)},
		Spec: v1alpha1.CorpusSpec{
			Driver: v1alpha1.Driver{Type: v1alpha1.DriverHTTP, Timeout: dur(10 * time.Second),
				HTTP: &v1alpha1.HTTPDriver{URL: "http://ragtarget.rag.svc:8089",
					CredentialSecretRef: v1alpha1.SecretKeyReference{Name: "ragtarget-admin", Key: "token"}}},
			Freshness: v1alpha1.Freshness{ExclusionSLO: dur(30 * time.Second), CacheInvalidationSLO: dur(30 * time.Second),
				VisibilitySLO: dur(time.Minute)},
			RateLimit: v1alpha1.RateLimit{RequestsPerSecond: 50},
		},
	}
	alice := &v1alpha1.Persona{
		// Edited 30s after the run was created: the report must say so.
		ObjectMeta: metav1.ObjectMeta{Name: "alice", Namespace: "rag", Generation: 3, ManagedFields: written(30 * time.Second)},
		Spec: v1alpha1.PersonaSpec{Subject: "alice@example.com", Tenant: "acme", Groups: []string{"hr", "staff"},
			CredentialSecretRef: &v1alpha1.SecretKeyReference{Name: "alice-credential", Key: "token"}},
	}
	mallory := &v1alpha1.Persona{
		ObjectMeta: metav1.ObjectMeta{Name: "mallory", Namespace: "rag", Generation: 1, ManagedFields: written(-time.Hour)},
		Spec: v1alpha1.PersonaSpec{Subject: "mallory@example.com", Tenant: "acme",
			CredentialSecretRef: &v1alpha1.SecretKeyReference{Name: "mallory-credential", Key: "token"}},
	}
	return CanaryInput{Run: run, Corpus: corpus, Persona: alice,
		Controls: map[string]*v1alpha1.Persona{"mallory": mallory}}
}

// suiteFixture scores real executions with the suite engine and fills the
// SuiteRun status and report ConfigMap data the way the controller does.
func suiteFixture(t *testing.T) SuiteInput {
	t.Helper()
	cases := []v1alpha1.EvalCase{
		{ID: "leave-policy", Question: "How many days of parental leave?", Stratum: "hr", Expectations: []v1alpha1.Expectation{
			{Persona: "alice", RelevantIDs: []string{"hr-leave"}, AllowedIDs: []string{"hr-leave", "hr-handbook"}},
			{Persona: "bob", MustAbstain: true, AllowedIDs: []string{"eng-wiki"}},
		}},
		{ID: "salary-bands", Question: "What are the salary bands?", Stratum: "hr", Expectations: []v1alpha1.Expectation{
			{Persona: "alice", RelevantIDs: []string{"hr-bands"}, AllowedIDs: []string{"hr-bands"}},
		}},
		{ID: "q3-revenue", Question: "What was Q3 revenue?", Stratum: "finance", Expectations: []v1alpha1.Expectation{
			{Persona: "alice", RelevantIDs: []string{"fin-q3"}, AllowedIDs: []string{"fin-q3"}},
			{Persona: "bob", RelevantIDs: []string{"fin-q3"}, AllowedIDs: []string{"fin-q3"}},
		}},
		{ID: "deploy-guide", Question: "How do I deploy?", Expectations: []v1alpha1.Expectation{
			{Persona: "bob", RelevantIDs: []string{"eng-deploy", "eng-wiki"}, AllowedIDs: []string{"eng-deploy", "eng-wiki"}},
		}},
	}
	execs := []suite.Execution{
		{CaseID: "leave-policy", Persona: "alice", Stratum: "hr", Hits: []string{"hr-leave", "hr-handbook"}},
		// bob must be refused and gets an HR document: a disclosure.
		{CaseID: "leave-policy", Persona: "bob", Stratum: "hr", Hits: []string{"hr-leave"}},
		{CaseID: "salary-bands", Persona: "alice", Stratum: "hr", Hits: []string{}},
		{CaseID: "q3-revenue", Persona: "alice", Stratum: "finance", Hits: []string{"fin-q3", "fin-q3"}},
		{CaseID: "q3-revenue", Persona: "bob", Stratum: "finance", Err: context.DeadlineExceeded},
		{CaseID: "deploy-guide", Persona: "bob", Hits: []string{"eng-wiki", "other", "eng-deploy"}},
	}
	plan, err := suite.PlanCases(cases, 10, suite.Gates{MinRecall: ptr.To(0.5)})
	if err != nil {
		t.Fatalf("planning the fixture: %v", err)
	}
	res, err := suite.Score(plan, execs, nil)
	if err != nil {
		t.Fatalf("scoring the fixture: %v", err)
	}
	data, err := suite.ReportData(res, 0)
	if err != nil {
		t.Fatalf("report data: %v", err)
	}
	run := &v1alpha1.SuiteRun{
		ObjectMeta: metav1.ObjectMeta{Name: "hr-suite-1772359200", Namespace: "rag", UID: "5e1f-suiterun",
			CreationTimestamp: *at(0),
			Annotations:       map[string]string{annotationCompletedAt: t0.Add(4*time.Second + 120*time.Millisecond).Format(time.RFC3339Nano)}},
		Spec: v1alpha1.SuiteRunSpec{SuiteRef: v1alpha1.LocalObjectReference{Name: "hr-suite"}},
		Status: v1alpha1.SuiteRunStatus{
			Phase:     v1alpha1.SuiteRunFailed,
			StartTime: at(time.Second), CompletionTime: at(4 * time.Second),
			Conditions: []metav1.Condition{
				{Type: "Complete", Status: metav1.ConditionTrue, Reason: "Finished", Message: "the run finished", LastTransitionTime: *at(4 * time.Second)},
				{Type: conditionPassed, Status: metav1.ConditionFalse, Reason: "DisclosureDetected",
					Message: "2 of 6 executions returned or cited forbidden evidence; see failingCases", LastTransitionTime: *at(4 * time.Second)},
			},
			Executions:         ptr.To(int32(res.Executions)),
			Disclosures:        ptr.To(int32(res.Disclosures)),
			ProbeErrors:        ptr.To(int32(len(res.Errored))),
			Personas:           suite.PersonaResults(res),
			Gates:              suite.GateResults(res),
			FailingCases:       suite.FailingCases(res),
			ReportConfigMapRef: &v1alpha1.LocalObjectReference{Name: "hr-suite-1772359200-report"},
		},
	}
	evalSuite := &v1alpha1.EvalSuite{
		ObjectMeta: metav1.ObjectMeta{Name: "hr-suite", Namespace: "rag", Generation: 4, ManagedFields: written(-24 * time.Hour)},
		Spec: v1alpha1.EvalSuiteSpec{CorpusRef: v1alpha1.LocalObjectReference{Name: "hr-docs"}, K: 10, Parallelism: 4,
			Gates: v1alpha1.Gates{MinRecall: "0.5"}, Cases: cases},
	}
	return SuiteInput{Run: run, Suite: evalSuite, Corpus: canaryFixture().Corpus, ReportData: data, ReportFound: true}
}
