package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/controllers/shared"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/targettest"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
	"github.com/ragcanary/ragcanary/internal/schedule"
	"github.com/ragcanary/ragcanary/internal/scoring"
	"github.com/ragcanary/ragcanary/internal/suite"
)

// Principals the test ragtarget knows the personas by.
const (
	aliceSubject   = "alice@example.com"
	mallorySubject = "mallory@example.com"
)

// Evidence planted in every suite test's ragtarget: alice may read both
// documents, mallory only the handbook. Short bodies are one chunk each.
const (
	salaryChunk   = "salary#0"
	handbookChunk = "handbook#0"
)

// suiteFixture is one test's ragtarget, corpus, personas and suite in a
// fresh namespace.
type suiteFixture struct {
	t      *testing.T
	ns     string
	target *targettest.Target
	suite  *v1alpha1.EvalSuite
	// created is the suite's creation time: schedules count from it.
	created time.Time
}

// newSuiteFixture starts a ragtarget with cfg, plants the documents,
// creates the corpus and personas, and the suite built by goldenSuite and
// then mutate.
func newSuiteFixture(t *testing.T, cfg ragtarget.Config, mutate func(*v1alpha1.EvalSuite)) *suiteFixture {
	t.Helper()
	return newSuiteFixtureIn(t, newNamespace(t), cfg, nil, mutate)
}

// newSuiteFixtureIn is newSuiteFixture in namespace ns; front, when set,
// turns the target's URL into the one the Corpus names (a recording proxy).
func newSuiteFixtureIn(t *testing.T, ns string, cfg ragtarget.Config, front func(string) string,
	mutate func(*v1alpha1.EvalSuite)) *suiteFixture {
	t.Helper()
	f := &suiteFixture{t: t, ns: ns, target: targettest.Start(t, fixtureConfig(cfg))}
	f.plant()
	url := f.target.URL
	if front != nil {
		url = front(url)
	}
	createSecret(t, f.ns, "corpus-source", "token", testSourceToken)
	createSecret(t, f.ns, "alice-cred", "token", testAliceToken)
	createSecret(t, f.ns, "mallory-cred", "token", testMalloryToken)
	f.create(objects.Corpus(f.ns, objects.CorpusName, url, objects.SourceSecret("corpus-source", objects.TokenKey),
		objects.CallTimeout(5*time.Second), objects.RateLimit(200, 200)))
	f.createPersona("alice", aliceSubject)
	f.createPersona("mallory", mallorySubject)
	s := goldenSuite(f.ns)
	if mutate != nil {
		mutate(s)
	}
	scheduleClock.SetTime(time.Now())
	f.create(s)
	t.Cleanup(func() {
		// Stop the suite so a later test moving the shared clock does not
		// make it create runs.
		_ = k8sClient.Delete(context.Background(), s)
	})
	f.suite, f.created = s, s.CreationTimestamp.UTC()
	return f
}

// plant writes the documents at the target's source and syncs them into
// its index at once.
func (f *suiteFixture) plant() {
	f.t.Helper()
	f.target.Plant(f.t,
		driver.Document{ID: "salary", Title: "Salary bands", Body: "Salary bands for 2026: engineers earn between 100k and 200k.",
			Principals: []string{aliceSubject}},
		driver.Document{ID: "handbook", Title: "Handbook", Body: "Vacation policy: employees receive twenty paid vacation days yearly.",
			Principals: []string{aliceSubject, mallorySubject}})
}

func (f *suiteFixture) create(obj client.Object) {
	f.t.Helper()
	if err := k8sClient.Create(context.Background(), obj); err != nil {
		f.t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

func (f *suiteFixture) createPersona(name, subject string) {
	f.t.Helper()
	f.create(objects.Persona(f.ns, name, subject))
}

// goldenSuite asks about salaries (hr: alice answers, mallory must be
// blocked, through the answer surface) and vacation (policy: both find the
// handbook, search only). On demand only, no schedule.
func goldenSuite(ns string) *v1alpha1.EvalSuite {
	return objects.EvalSuite(ns, "isolation", []v1alpha1.EvalCase{
		{ID: "salary-bands", Question: "What are the salary bands for engineers?", Stratum: "hr", AskAnswer: true,
			Expectations: []v1alpha1.Expectation{
				{Persona: "alice", RelevantIDs: []string{salaryChunk}, AllowedIDs: []string{salaryChunk, handbookChunk}},
				{Persona: "mallory", AllowedIDs: []string{handbookChunk}, MustAbstain: true},
			}},
		{ID: "vacation", Question: "How many vacation days?", Stratum: "policy",
			Expectations: []v1alpha1.Expectation{
				{Persona: "alice", RelevantIDs: []string{handbookChunk}, AllowedIDs: []string{salaryChunk, handbookChunk}},
				{Persona: "mallory", RelevantIDs: []string{handbookChunk}, AllowedIDs: []string{handbookChunk}},
			}},
	}, objects.TopK(5, 4))
}

// runNow sets the run-now annotation to token.
func (f *suiteFixture) runNow(token string) {
	f.t.Helper()
	f.patchSuite(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.AnnotationRunNow, token))
}

// poke changes an unrelated annotation so the controller reconciles now.
func (f *suiteFixture) poke() {
	f.t.Helper()
	f.patchSuite(fmt.Sprintf(`{"metadata":{"annotations":{"test.ragcanary.dev/poke":%q}}}`, strconv.FormatInt(time.Now().UnixNano(), 10)))
}

func (f *suiteFixture) patchSuite(patch string) {
	f.t.Helper()
	if err := k8sClient.Patch(context.Background(), f.suite, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		f.t.Fatalf("patching suite: %v", err)
	}
}

func (f *suiteFixture) getSuite() *v1alpha1.EvalSuite {
	f.t.Helper()
	var s v1alpha1.EvalSuite
	if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(f.suite), &s); err != nil {
		f.t.Fatalf("reading suite: %v", err)
	}
	return &s
}

// runs lists the suite's runs with the direct client.
func (f *suiteFixture) runs() []v1alpha1.SuiteRun {
	f.t.Helper()
	var list v1alpha1.SuiteRunList
	if err := k8sClient.List(context.Background(), &list, client.InNamespace(f.ns)); err != nil {
		f.t.Fatalf("listing runs: %v", err)
	}
	return list.Items
}

// waitFinishedRun waits until the named run finished and returns it.
func (f *suiteFixture) waitFinishedRun(name string) *v1alpha1.SuiteRun {
	f.t.Helper()
	var run v1alpha1.SuiteRun
	testutil.Eventually(f.t, eventuallyTimeout, "run "+name+" finished", func() error {
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: name}, &run); err != nil {
			return err
		}
		if !shared.SuiteRunFinished(&run) {
			return fmt.Errorf("phase is %q", run.Status.Phase)
		}
		return nil
	})
	return &run
}

// runOnce asks for a run with token and returns it finished.
func (f *suiteFixture) runOnce(token string) *v1alpha1.SuiteRun {
	f.t.Helper()
	f.runNow(token)
	return f.waitFinishedRun(runNowName(f.suite.Name, token))
}

func runNowName(suiteName, token string) string {
	return schedule.RunNowName(suiteName, token)
}

func personaRow(t *testing.T, run *v1alpha1.SuiteRun, persona, stratum string) v1alpha1.PersonaResult {
	t.Helper()
	for _, p := range run.Status.Personas {
		if p.Persona == persona && p.Stratum == stratum {
			return p
		}
	}
	t.Fatalf("no persona row %s/%q in %+v", persona, stratum, run.Status.Personas)
	return v1alpha1.PersonaResult{}
}

// rateOf is a status row's rate or mean, which every run records.
func rateOf(t *testing.T, p v1alpha1.PersonaResult, name string) v1alpha1.Ratio {
	t.Helper()
	r, ok := p.Rate(name)
	if !ok {
		t.Fatalf("%s/%q has no rate %s: %+v", p.Persona, p.Stratum, name, p.Rates)
	}
	return r
}

// countOf is a status row's count, which every run records.
func countOf(t *testing.T, p v1alpha1.PersonaResult, name string) int32 {
	t.Helper()
	n, ok := p.Count(name)
	if !ok {
		t.Fatalf("%s/%q has no count %s: %+v", p.Persona, p.Stratum, name, p.Counts)
	}
	return n
}

func requireCondition(t *testing.T, conds []metav1.Condition, condType string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	c := meta.FindStatusCondition(conds, condType)
	if c == nil || c.Status != status || c.Reason != reason {
		t.Fatalf("condition %s = %+v, want %s/%s", condType, c, status, reason)
	}
}

// TestSuiteRunPassesWhenEveryPersonaSeesItsEvidence runs the golden suite
// against a correctly filtering ragtarget: the run passes, every ratio
// carries its counts, undefined ones stay unset, and the report ConfigMap
// holds the offline JSON schema.
func TestSuiteRunPassesWhenEveryPersonaSeesItsEvidence(t *testing.T) {
	f := newSuiteFixture(t, ragtarget.Config{}, nil)
	run := f.runOnce("pass")

	if run.Status.Phase != v1alpha1.SuiteRunSucceeded {
		t.Fatalf("phase = %s, want Succeeded; status %+v", run.Status.Phase, run.Status)
	}
	requireCondition(t, run.Status.Conditions, v1alpha1.ConditionPassed, metav1.ConditionTrue, v1alpha1.ReasonSuitePassed)
	requireCondition(t, run.Status.Conditions, v1alpha1.ConditionComplete, metav1.ConditionTrue, v1alpha1.ReasonFinished)
	if ptr.Deref(run.Status.Executions, -1) != 4 || ptr.Deref(run.Status.Disclosures, -1) != 0 || ptr.Deref(run.Status.ProbeErrors, -1) != 0 {
		t.Errorf("executions/disclosures/probeErrors = %d/%d/%d, want 4/0/0",
			ptr.Deref(run.Status.Executions, -1), ptr.Deref(run.Status.Disclosures, -1), ptr.Deref(run.Status.ProbeErrors, -1))
	}
	for _, g := range run.Status.Gates {
		if !g.Passed {
			t.Errorf("gate %s failed: %+v", g.Name, g)
		}
	}

	alice := personaRow(t, run, "alice", "")
	if r := rateOf(t, alice, "recall_at_k"); r.Value == nil || *r.Value != "1" || r.Denominator != 2 {
		t.Errorf("alice recall = %+v, want 1 over 2 cases", r)
	}
	if r := rateOf(t, alice, scoring.FigureUtility); r.Numerator != "2" || r.Denominator != 2 {
		t.Errorf("alice utility = %+v, want 2/2", r)
	}
	// alice has no required-block case: her disclosure rate is undefined.
	if r := rateOf(t, alice, scoring.FigureDisclosureRate); r.Value != nil || r.Denominator != 0 {
		t.Errorf("alice disclosure rate = %+v, want undefined (no value, 0 denominator)", r)
	}
	// Her affected answers are counted all the same: zero, not unset.
	for _, p := range run.Status.Personas {
		if n := countOf(t, p, scoring.FigureAffectedAnswers); n != 0 {
			t.Errorf("%s/%q affected_answers = %d, want 0", p.Persona, p.Stratum, n)
		}
	}
	// Within the hr stratum mallory only has a required-block case: every
	// answerable ratio is undefined, the disclosure rate is 0/1.
	malloryHR := personaRow(t, run, "mallory", "hr")
	for _, name := range []string{scoring.FigureUtility, "false_block_rate", "recall_at_k", "mrr_at_k"} {
		if r := rateOf(t, malloryHR, name); r.Value != nil {
			t.Errorf("mallory/hr %s = %q, want unset (undefined)", name, *r.Value)
		}
	}
	if r := rateOf(t, malloryHR, scoring.FigureDisclosureRate); r.Value == nil || *r.Value != "0" || r.Denominator != 1 {
		t.Errorf("mallory/hr disclosure rate = %+v, want 0/1", r)
	}

	checkReport(t, f.ns, run, []string{"salary-bands/alice", "salary-bands/mallory", "vacation/alice", "vacation/mallory"})
	checkPersonaGauge(t, "ragcanary_suite_utility_ratio", f.ns, "alice", ptr.To(1.0))
	checkPersonaGauge(t, "ragcanary_suite_disclosure_rate_ratio", f.ns, "alice", nil)

	// The suite summarises its latest run.
	testutil.Eventually(t, eventuallyTimeout, "suite lastRun and Passed", func() error {
		s := f.getSuite()
		if s.Status.LastRun == nil || s.Status.LastRun.Name != run.Name || !s.Status.LastRun.Passed {
			return fmt.Errorf("lastRun is %+v", s.Status.LastRun)
		}
		if !meta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.ConditionPassed) {
			return fmt.Errorf("conditions are %+v", s.Status.Conditions)
		}
		return nil
	})

	// Deleting the suite drops its series.
	if err := k8sClient.Delete(context.Background(), f.suite); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, eventuallyTimeout, "suite series forgotten", func() error {
		if n := len(gatherSeries(t, "ragcanary_suite_runs_total", f.ns)); n != 0 {
			return fmt.Errorf("%d series left", n)
		}
		return nil
	})
}

// checkReport reads the run's report ConfigMap and checks it is valid JSON
// with the offline report's keys and the expected case IDs.
func checkReport(t *testing.T, ns string, run *v1alpha1.SuiteRun, wantCases []string) map[string]any {
	t.Helper()
	if run.Status.ReportConfigMapRef == nil {
		t.Fatal("status.reportConfigMapRef is unset")
	}
	var cm corev1.ConfigMap
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: run.Status.ReportConfigMapRef.Name}, &cm); err != nil {
		t.Fatalf("reading report: %v", err)
	}
	// Owned by the suite, not the run: pruning runs must not delete it.
	if len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].Kind != "EvalSuite" || cm.OwnerReferences[0].Name != run.Spec.SuiteRef.Name {
		t.Errorf("report ConfigMap owners = %+v, want the EvalSuite only", cm.OwnerReferences)
	}
	if cm.Annotations[v1alpha1.AnnotationRunUID] != string(run.UID) {
		t.Errorf("report ConfigMap names run %q, want %q", cm.Annotations[v1alpha1.AnnotationRunUID], run.UID)
	}
	// The frozen evidence is stored as ragcanary eval --replay reads it.
	ev, err := scoring.ReadEvidence(strings.NewReader(cm.Data[v1alpha1.ReportKeyEvidence]))
	if err != nil {
		t.Fatalf("stored evidence does not read back: %v", err)
	}
	if ev.CasesHash != run.Status.CasesHash || ev.CasesHash == "" {
		t.Errorf("evidence cases hash %q, status casesHash %q", ev.CasesHash, run.Status.CasesHash)
	}
	var report map[string]any
	if err := json.Unmarshal([]byte(cm.Data[v1alpha1.ReportKeyReport]), &report); err != nil {
		t.Fatalf("report is not JSON: %v", err)
	}
	for _, key := range []string{"k", "passed", "gates", "summary", "cases"} {
		if _, ok := report[key]; !ok {
			t.Errorf("report lacks key %q", key)
		}
	}
	var got []string
	cases, _ := report["cases"].([]any)
	for _, c := range cases {
		m, _ := c.(map[string]any)
		id, _ := m["id"].(string)
		got = append(got, id)
	}
	if !slices.Equal(got, wantCases) {
		t.Errorf("report cases = %v, want %v", got, wantCases)
	}
	return report
}

// TestSuiteRunFailsWhenTheTargetLeaks runs the same suite against a
// ragtarget that ignores access lists: mallory retrieves the salary chunk,
// the run fails with the disclosure counted and the case listed.
func TestSuiteRunFailsWhenTheTargetLeaks(t *testing.T) {
	f := newSuiteFixture(t, ragtarget.Config{FilterMode: ragtarget.FilterNone}, nil)
	run := f.runOnce("leak")

	if run.Status.Phase != v1alpha1.SuiteRunFailed {
		t.Fatalf("phase = %s, want Failed", run.Status.Phase)
	}
	requireCondition(t, run.Status.Conditions, v1alpha1.ConditionPassed, metav1.ConditionFalse, v1alpha1.ReasonDisclosureDetected)
	if got := ptr.Deref(run.Status.Disclosures, 0); got < 1 {
		t.Errorf("disclosures = %d, want ≥ 1", got)
	}
	mallory := personaRow(t, run, "mallory", "")
	if r := rateOf(t, mallory, scoring.FigureDisclosureRate); r.Value == nil || *r.Value != "1" || r.Numerator != "1" || r.Denominator != 1 {
		t.Errorf("mallory disclosure rate = %+v, want 1/1", r)
	}
	found := false
	for _, fc := range run.Status.FailingCases {
		if fc.CaseID == "salary-bands" && fc.Persona == "mallory" && slices.Contains(fc.ForbiddenIDs, salaryChunk) {
			found = true
		}
	}
	if !found {
		t.Errorf("failingCases %+v do not list salary-bands/mallory with %s", run.Status.FailingCases, salaryChunk)
	}
	// Every leak of mallory's, in the required block or in an answerable
	// case, is an affected answer; the rate above kept its denominator.
	disclosed := int32(0)
	for _, fc := range run.Status.FailingCases {
		if fc.Persona == "mallory" && fc.Disclosed {
			disclosed++
		}
	}
	if got := countOf(t, mallory, scoring.FigureAffectedAnswers); got < 1 || got != disclosed {
		t.Errorf("mallory affected_answers = %d, want the %d failing cases flagged disclosed (at least 1)", got, disclosed)
	}
	checkPersonaGauge(t, "ragcanary_suite_affected_answers", f.ns, "mallory", ptr.To(float64(disclosed)))
	if g := gate(run, "no_forbidden"); g == nil || g.Passed {
		t.Errorf("no_forbidden gate = %+v, want failed", g)
	}
	checkPersonaGauge(t, "ragcanary_suite_disclosure_rate_ratio", f.ns, "mallory", ptr.To(1.0))
	waitEvent(t, f.ns, run.Name, v1alpha1.ReasonDisclosureDetected)
}

// TestSuiteRunProbeErrorsNeverPass injects a 503 into every persona call:
// the executions are probe errors, not empty results, and the run fails.
func TestSuiteRunProbeErrorsNeverPass(t *testing.T) {
	f := newSuiteFixture(t, ragtarget.Config{Faults: ragtarget.Faults{ErrorRate: 1, Scope: ragtarget.FaultScopePersona}}, nil)
	run := f.runOnce("faulty")

	if run.Status.Phase != v1alpha1.SuiteRunFailed {
		t.Fatalf("phase = %s, want Failed", run.Status.Phase)
	}
	requireCondition(t, run.Status.Conditions, v1alpha1.ConditionPassed, metav1.ConditionFalse, v1alpha1.ReasonProbeErrors)
	if ptr.Deref(run.Status.ProbeErrors, -1) != 4 || ptr.Deref(run.Status.Executions, -1) != 4 {
		t.Errorf("probeErrors/executions = %d/%d, want 4/4", ptr.Deref(run.Status.ProbeErrors, -1), ptr.Deref(run.Status.Executions, -1))
	}
	// Nothing was scored: no persona row may exist, so nothing can read as
	// "abstained correctly".
	if len(run.Status.Personas) != 0 {
		t.Errorf("personas = %+v, want none: failed executions are never scored", run.Status.Personas)
	}
	if g := gate(run, suite.GateProbeErrors); g == nil || g.Passed || g.Value != "4" {
		t.Errorf("probe error gate = %+v, want failed with 4", g)
	}
	report := checkReport(t, f.ns, run, nil)
	if report["passed"] != false {
		t.Errorf("report passed = %v, want false", report["passed"])
	}
}

func gate(run *v1alpha1.SuiteRun, name string) *v1alpha1.GateResult {
	for i := range run.Status.Gates {
		if run.Status.Gates[i].Name == name {
			return &run.Status.Gates[i]
		}
	}
	return nil
}

// waitEvent waits for an event with reason about the named object.
func waitEvent(t *testing.T, ns, name, reason string) {
	t.Helper()
	testutil.Eventually(t, eventuallyTimeout, "event "+reason, func() error {
		var list eventsv1.EventList
		if err := k8sClient.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Reason == reason {
				return nil
			}
		}
		return fmt.Errorf("no %s event among %d", reason, len(list.Items))
	})
}

// checkPersonaGauge checks a per-persona suite gauge for the namespace:
// want nil means the series must be absent.
func checkPersonaGauge(t *testing.T, name, ns, persona string, want *float64) {
	t.Helper()
	read := func() *float64 {
		var got *float64
		for _, m := range gatherSeries(t, name, ns) {
			if labelValue(m, "persona") == persona {
				v := m.GetGauge().GetValue()
				got = &v
			}
		}
		return got
	}
	if want == nil {
		if got := read(); got != nil {
			t.Errorf("%s{persona=%s} = %v, want absent", name, persona, *got)
		}
		return
	}
	// The controller records the gauge right after it writes the run's
	// status, which the caller has just read: wait for it, bounded.
	testutil.Eventually(t, eventuallyTimeout, fmt.Sprintf("%s{persona=%s} = %v", name, persona, *want), func() error {
		if got := read(); got == nil || *got != *want {
			return fmt.Errorf("got %v", got)
		}
		return nil
	})
}

// gatherSeries reads the series of one metric for a namespace from the
// manager's registry.
func gatherSeries(t *testing.T, name, ns string) []*dto.Metric {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering metrics: %v", err)
	}
	var out []*dto.Metric
	for _, fam := range families {
		if fam.GetName() != name {
			continue
		}
		for _, m := range fam.GetMetric() {
			if labelValue(m, "namespace") == ns {
				out = append(out, m)
			}
		}
	}
	return out
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
