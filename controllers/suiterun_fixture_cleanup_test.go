package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
	"github.com/ragcanary/ragcanary/internal/suite"
)

// withFixture gives the golden suite a one-document fixture readable by
// alice, with the given visibility timeout.
func withFixture(timeout time.Duration) func(*v1alpha1.EvalSuite) {
	return func(s *v1alpha1.EvalSuite) {
		s.Spec.Fixture = &v1alpha1.Fixture{
			VisibilityTimeout: &metav1.Duration{Duration: timeout},
			Documents: []v1alpha1.FixtureDocument{{ID: "zebra-memo", Title: "Zebra memo",
				Body: "Zebras graze on the striped meadow every morning.", Principals: []string{aliceSubject}}},
			Groups: []v1alpha1.FixtureGroup{{Name: "herd", Members: []string{aliceSubject}}},
		}
	}
}

// neverSyncing is a ragtarget whose index never picks up planted content on
// its own: a fixture planted there never becomes visible.
var neverSyncing = ragtarget.Config{ContentSyncInterval: time.Hour, ACLSyncInterval: time.Hour}

func (f *suiteFixture) createRun(name string) *v1alpha1.SuiteRun {
	f.t.Helper()
	run := objects.SuiteRun(f.ns, name, f.suite.Name)
	f.create(run)
	return run
}

// plantedDocs lists the source's documents under prefix.
func (f *suiteFixture) plantedDocs(prefix string) []string {
	var out []string
	for id := range f.target.SourceDocuments() {
		if strings.HasPrefix(id, prefix+"-") {
			out = append(out, id)
		}
	}
	return out
}

// TestFixtureNotVisibleFailsAndRemoves: a fixture the target never makes
// retrievable ends the run, within the suite's visibility timeout, as
// FixtureNotVisible naming the document — and the run still removes it.
func TestFixtureNotVisibleFailsAndRemoves(t *testing.T) {
	f := newSuiteFixture(t, neverSyncing, withFixture(2*time.Second))
	run := waitRunReleased(t, client.ObjectKeyFromObject(f.createRun("invisible-1")))
	c := meta.FindStatusCondition(run.Status.Conditions, v1alpha1.ConditionPassed)
	if run.Status.Phase != v1alpha1.SuiteRunFailed || c == nil || c.Reason != v1alpha1.ReasonFixtureNotVisible || !strings.Contains(c.Message, "zebra-memo") {
		t.Fatalf("phase %s, Passed %+v; want Failed with %s naming zebra-memo", run.Status.Phase, c, v1alpha1.ReasonFixtureNotVisible)
	}
	if run.Status.Executions != nil {
		t.Errorf("executions = %d, want unset: nothing was asked", *run.Status.Executions)
	}
	if fx := run.Status.Fixture; fx == nil || !fx.Removed {
		t.Errorf("status.fixture = %+v, want removed", fx)
	}
	if left := f.plantedDocs(run.Status.Fixture.Prefix); len(left) > 0 {
		t.Errorf("documents left at the target: %v", left)
	}
}

// TestDeletedRunRemovesFixture: a run deleted while it waits for its
// fixture keeps its finalizer until the planted document is removed.
func TestDeletedRunRemovesFixture(t *testing.T) {
	f := newSuiteFixture(t, neverSyncing, withFixture(8*time.Second))
	run := f.createRun("deleted-1")
	key := client.ObjectKeyFromObject(run)
	var prefix string
	testutil.Eventually(t, eventuallyTimeout, "fixture planted", func() error {
		if err := k8sClient.Get(context.Background(), key, run); err != nil {
			return err
		}
		if run.Status.Fixture == nil {
			return errors.New("status.fixture unset")
		}
		prefix = run.Status.Fixture.Prefix
		if len(f.plantedDocs(prefix)) == 0 {
			return errors.New("nothing planted yet")
		}
		return nil
	})
	if err := k8sClient.Delete(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	if err := k8sClient.Get(context.Background(), key, run); err != nil || run.DeletionTimestamp.IsZero() {
		t.Fatalf("run deleted at once (%v): the finalizer must hold it until the fixture is removed", err)
	}
	testutil.Eventually(t, eventuallyTimeout, "run gone with its fixture removed", func() error {
		err := k8sClient.Get(context.Background(), key, &v1alpha1.SuiteRun{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("run still exists (%v)", err)
		}
		if left := f.plantedDocs(prefix); len(left) > 0 {
			return fmt.Errorf("left at the target: %v", left)
		}
		return nil
	})
}

// TestInvalidFixtureAndV2CasesMarkTheSuite: overlapping versions and a v2
// ConfigMap case with an unknown action each make the suite not Ready with
// InvalidCases naming the document or case and the field.
func TestInvalidFixtureAndV2CasesMarkTheSuite(t *testing.T) {
	f := newSuiteFixture(t, ragtarget.Config{}, func(s *v1alpha1.EvalSuite) {
		withFixture(time.Minute)(s)
		s.Spec.Fixture.Documents = append(s.Spec.Fixture.Documents,
			v1alpha1.FixtureDocument{ID: "rule-v1", VersionOf: "rule", Body: "old", ValidTo: "2026-08-01T00:00:00Z"},
			v1alpha1.FixtureDocument{ID: "rule-v2", VersionOf: "rule", Body: "new", ValidFrom: "2026-07-01T00:00:00Z"})
	})
	c := f.waitSuiteCondition(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonInvalidCases)
	if !strings.Contains(c.Message, `versions "rule-v1" and "rule-v2" of document "rule" have overlapping validity intervals`) {
		t.Errorf("message %q does not name the versions and the field", c.Message)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "v2-cases"},
		Data: map[string]string{"cases.yaml": `
- id: hotel
  question: What is the hotel limit?
  persona: alice
  expected: {action: refuse, allowed_evidence: []}
`}}
	f.create(cm)
	f.patchSuite(`{"spec":{"fixture":null,"caseSources":[{"configMapRef":{"name":"v2-cases"},"key":"cases.yaml"}]}}`)
	testutil.Eventually(t, eventuallyTimeout, "InvalidCases naming the v2 case", func() error {
		c := meta.FindStatusCondition(f.getSuite().Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Reason != v1alpha1.ReasonInvalidCases || !strings.Contains(c.Message, `case "hotel"`) ||
			!strings.Contains(c.Message, `action "refuse" is unknown`) {
			return fmt.Errorf("Ready is %+v", c)
		}
		return nil
	})
}

// TestFixtureFromConfigMap: fixture documents may come from a ConfigMap;
// the suite waits for it (ConfigMapNotFound), is re-evaluated when it
// appears (the watch indexes fixture sources), derives evidence from it,
// and names the ConfigMap when its content is wrong.
func TestFixtureFromConfigMap(t *testing.T) {
	f := newSuiteFixture(t, ragtarget.Config{}, func(s *v1alpha1.EvalSuite) {
		s.Spec.Fixture = &v1alpha1.Fixture{Sources: []v1alpha1.FixtureSource{{ConfigMapRef: v1alpha1.LocalObjectReference{Name: "policy-fixture"}}}}
		s.Spec.Cases = append(s.Spec.Cases, v1alpha1.EvalCase{ID: "zebras", Question: "Where do zebras graze?", AskAnswer: true,
			Expectations: []v1alpha1.Expectation{{Persona: "alice", Action: "answer", RequiredEvidence: []string{"zebra-memo"}}}})
	})
	f.waitSuiteCondition(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonConfigMapNotFound)
	f.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "policy-fixture"},
		Data: map[string]string{suite.DefaultFixtureKey: `
documents:
  - id: zebra-memo
    body: Zebras graze on the striped meadow every morning.
    principals: ["` + aliceSubject + `"]
`}})
	// Ready only if zebra-memo, known from the ConfigMap alone, is derived
	// into alice's allowed evidence: requiredEvidence must lie inside it.
	f.waitSuiteCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonOnDemand)
	var cm corev1.ConfigMap
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "policy-fixture"}, &cm); err != nil {
		t.Fatal(err)
	}
	cm.Data[suite.DefaultFixtureKey] = "documents:\n  - {id: zebra-memo, body: x, principal: typo}\n"
	if err := k8sClient.Update(context.Background(), &cm); err != nil {
		t.Fatal(err)
	}
	c := f.waitSuiteCondition(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonInvalidCases)
	if !strings.Contains(c.Message, `ConfigMap "policy-fixture" key "fixture.yaml"`) || !strings.Contains(c.Message, "principal") {
		t.Errorf("message %q does not name the ConfigMap key and the unknown field", c.Message)
	}
}
