package controllers

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/ragcanary/ragcanary/controllers/shared"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/targettest"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// TestConfigMapsCachedAsMetadataOnly runs every reconciler with the
// operator's cache options, recording each object that enters the cache.
// A large ConfigMap nobody references, and the suite's own case ConfigMap,
// reach the cache only as metadata — through validation, a case edit and a
// run, which all read the cases — while the metadata watch still brings the
// suite back on an edit and the suite reads the edited data.
func TestConfigMapsCachedAsMetadataOnly(t *testing.T) {
	t.Parallel() // its own API server and operator
	const ns = "suites"
	cp := startControlPlane(t)
	cp.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	bulk := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unrelated-bulk"},
		Data:       map[string]string{"blob": strings.Repeat("x", 512<<10)},
	}
	cp.create(t, bulk)
	cases := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "more-cases"},
		Data:       map[string]string{"cases.yaml": yamlCases("handbook-owner")},
	}
	cp.create(t, cases)
	s := cp.createSuiteWithCaseSource(t, ns, cases.Name)

	seen := &cacheEntries{}
	opts := shared.CacheOptions("")
	opts.DefaultTransform = seen.recording(opts.DefaultTransform)
	runReconcilers(t, cp.config, opts)

	cp.waitReady(t, s, metav1.ConditionTrue, v1alpha1.ReasonOnDemand)
	// A duplicate case ID in the ConfigMap: only the metadata watch can
	// bring the suite back, and only a fresh read can see the duplicate.
	cases.Data["cases.yaml"] = yamlCases("vacation")
	if err := cp.admin.Update(context.Background(), cases); err != nil {
		t.Fatal(err)
	}
	cond := cp.waitReady(t, s, metav1.ConditionFalse, v1alpha1.ReasonInvalidCases)
	if !strings.Contains(cond.Message, `"vacation"`) {
		t.Errorf("message %q does not name the duplicate read from the edited ConfigMap", cond.Message)
	}
	cases.Data["cases.yaml"] = yamlCases("handbook-owner")
	if err := cp.admin.Update(context.Background(), cases); err != nil {
		t.Fatal(err)
	}
	cp.waitReady(t, s, metav1.ConditionTrue, v1alpha1.ReasonOnDemand)
	cp.runSuiteNow(t, s, "cached")

	for _, cm := range []*corev1.ConfigMap{bulk, cases} {
		key := client.ObjectKeyFromObject(cm)
		if !seen.metadata(key) {
			t.Errorf("ConfigMap %s never reached the cache as metadata: the suite watch does not cover it", key)
		}
		if seen.full(key) {
			t.Errorf("ConfigMap %s entered the cache as a full object, data and all", key)
		}
	}
}

// cacheEntries records the ConfigMaps that enter a cache, by how they are
// held: full objects (with their data) or metadata only.
type cacheEntries struct {
	mu           sync.Mutex
	fullKeys     map[types.NamespacedName]bool
	metadataKeys map[types.NamespacedName]bool
}

// recording wraps a cache transform, which sees every object an informer
// is about to store.
func (e *cacheEntries) recording(next toolscache.TransformFunc) toolscache.TransformFunc {
	return func(in any) (any, error) {
		e.record(in)
		return next(in)
	}
}

func (e *cacheEntries) record(in any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fullKeys == nil {
		e.fullKeys, e.metadataKeys = map[types.NamespacedName]bool{}, map[types.NamespacedName]bool{}
	}
	switch o := in.(type) {
	case *corev1.ConfigMap:
		e.fullKeys[client.ObjectKeyFromObject(o)] = true
	case *metav1.PartialObjectMetadata:
		if o.Kind == "ConfigMap" {
			e.metadataKeys[client.ObjectKeyFromObject(o)] = true
		}
	}
}

func (e *cacheEntries) full(key types.NamespacedName) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.fullKeys[key]
}

func (e *cacheEntries) metadata(key types.NamespacedName) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.metadataKeys[key]
}

// createSuiteWithCaseSource creates the golden suite with one more case
// from the named ConfigMap, and what it references: a corpus on a real
// ragtarget and the personas.
func (cp *controlPlane) createSuiteWithCaseSource(t *testing.T, ns, configMap string) *v1alpha1.EvalSuite {
	t.Helper()
	url := targettest.Start(t, fixtureConfig(ragtarget.Config{})).URL
	corpus := newCorpus(ns, "corpus", url)
	cp.createSecret(t, ns, corpus.Spec.Driver.HTTP.CredentialSecretRef.Name, testSourceToken)
	cp.create(t, corpus)
	for name, token := range map[string]string{"alice": testAliceToken, "mallory": testMalloryToken} {
		cp.createSecret(t, ns, name+"-cred", token)
		cp.create(t, objects.Persona(ns, name, name+"@example.com"))
	}
	s := goldenSuite(ns)
	s.Spec.CaseSources = []v1alpha1.CaseSource{{ConfigMapRef: v1alpha1.LocalObjectReference{Name: configMap}, Key: "cases.yaml"}}
	cp.create(t, s)
	return s
}

// runSuiteNow asks for a run with token and waits until it finished; a run
// reads the suite's cases as it starts.
func (cp *controlPlane) runSuiteNow(t *testing.T, s *v1alpha1.EvalSuite, token string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.AnnotationRunNow, token)
	if err := cp.admin.Patch(context.Background(), s, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
	name := runNowName(s.Name, token)
	testutil.Eventually(t, eventuallyTimeout, "run "+name+" finished", func() error {
		var run v1alpha1.SuiteRun
		if err := cp.admin.Get(context.Background(), client.ObjectKey{Namespace: s.Namespace, Name: name}, &run); err != nil {
			return err
		}
		if !shared.SuiteRunFinished(&run) {
			return fmt.Errorf("phase is %q", run.Status.Phase)
		}
		return nil
	})
}
