package controllers

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// TestSamplesApply creates every object in config/samples and reads each back
// from the API server: the samples users copy must be valid.
func TestSamplesApply(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "config", "samples", "ragcanary_*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples found: %v", err)
	}
	ns := newNamespace(t)
	kinds := map[string]bool{}
	for _, f := range files {
		for _, obj := range readObjects(t, f) {
			obj.SetNamespace(ns)
			if err := k8sClient.Create(context.Background(), obj); err != nil {
				t.Fatalf("%s: creating %s %q: %v", f, obj.GetKind(), obj.GetName(), err)
			}
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(obj.GroupVersionKind())
			if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(obj), got); err != nil {
				t.Fatalf("%s: reading back %s %q: %v", f, obj.GetKind(), obj.GetName(), err)
			}
			kinds[obj.GetKind()] = true
		}
	}
	for _, kind := range []string{"Corpus", "Persona", "RevocationCanary", "CanaryRun", "EvalSuite", "SuiteRun"} {
		if !kinds[kind] {
			t.Errorf("config/samples has no %s", kind)
		}
	}
}

// TestInvalidObjectsRejected sends objects a person could plausibly write
// wrong and checks the API server rejects each with a message that names the
// field and says what is wrong.
func TestInvalidObjectsRejected(t *testing.T) {
	ns := newNamespace(t)
	const canaryBase = `
apiVersion: ragcanary.dev/v1alpha1
kind: RevocationCanary
metadata: {name: c}
spec:
  corpusRef: {name: corpus}
  personaRef: {name: alice}
`
	const corpusBase = `
apiVersion: ragcanary.dev/v1alpha1
kind: Corpus
metadata: {name: c}
spec:
`
	const suiteBase = `
apiVersion: ragcanary.dev/v1alpha1
kind: EvalSuite
metadata: {name: s}
spec:
  corpusRef: {name: corpus}
`
	tests := []struct {
		name string
		// manifest is the object sent to the API server.
		manifest string
		// want are substrings the rejection message must contain: the field path and the reason.
		want []string
	}{
		{
			name:     "both schedule forms",
			manifest: canaryBase + "  schedule: {cron: '*/5 * * * *', every: 5m}\n",
			want:     []string{"spec.schedule", "set exactly one of cron or every"},
		},
		{
			name:     "no schedule form",
			manifest: canaryBase + "  schedule: {}\n",
			want:     []string{"spec.schedule", "set exactly one of cron or every"},
		},
		{
			name:     "negative interval",
			manifest: canaryBase + "  schedule: {every: -5m}\n",
			want:     []string{"spec.schedule.every", "at least 1s"},
		},
		{
			name:     "probe interval not smaller than exclusion timeout",
			manifest: canaryBase + "  schedule: {every: 5m}\n  probing: {interval: 10m, exclusionTimeout: 5m}\n",
			want:     []string{"spec.probing", "interval must be smaller than exclusionTimeout"},
		},
		{
			name:     "zero confirmations",
			manifest: canaryBase + "  schedule: {every: 5m}\n  probing: {confirmations: 0}\n",
			want:     []string{"spec.probing.confirmations", "greater than or equal to 1"},
		},
		{
			name:     "reference into another namespace",
			manifest: strings.Replace(canaryBase, "{name: corpus}", "{name: other/corpus}", 1) + "  schedule: {every: 5m}\n",
			want:     []string{"spec.corpusRef.name", "should match"},
		},
		{
			name:     "group revocation without a group",
			manifest: canaryBase + "  schedule: {every: 5m}\n  revocation: {method: RemoveFromGroup}\n",
			want:     []string{"spec.revocation", "group is required when method is RemoveFromGroup"},
		},
		{
			name:     "unknown revocation method",
			manifest: canaryBase + "  schedule: {every: 5m}\n  revocation: {method: Shred}\n",
			want:     []string{"spec.revocation.method", "Unsupported value"},
		},
		{
			name:     "control persona is the persona",
			manifest: canaryBase + "  schedule: {every: 5m}\n  controlPersonaRefs: [{name: alice}]\n",
			want:     []string{"spec", "controlPersonaRefs must not include personaRef"},
		},
		{
			name:     "unknown surface",
			manifest: canaryBase + "  schedule: {every: 5m}\n  probing: {surfaces: [Chat]}\n",
			want:     []string{"spec.probing.surfaces[0]", "Unsupported value"},
		},
		{
			name:     "corpus url not http",
			manifest: corpusBase + "  driver: {type: HTTP, http: {url: 'ftp://rag.example', credentialSecretRef: {name: s, key: k}}}\n",
			want:     []string{"spec.driver.http.url", "absolute http or https URL"},
		},
		{
			name:     "corpus url with credentials",
			manifest: corpusBase + "  driver: {type: HTTP, http: {url: 'https://user:pw@rag.example', credentialSecretRef: {name: s, key: k}}}\n",
			want:     []string{"spec.driver.http.url", "must not embed credentials"},
		},
		{
			name:     "http driver without http block",
			manifest: corpusBase + "  driver: {type: HTTP}\n",
			want:     []string{"spec.driver", "http is required when type is HTTP"},
		},
		{
			name:     "zero driver timeout",
			manifest: corpusBase + "  driver: {type: HTTP, timeout: 0s, http: {url: 'https://rag.example', credentialSecretRef: {name: s, key: k}}}\n",
			want:     []string{"spec.driver.timeout", "timeout must be positive"},
		},
		{
			name: "persona without credential",
			manifest: `
apiVersion: ragcanary.dev/v1alpha1
kind: Persona
metadata: {name: p}
spec: {subject: alice}
`,
			want: []string{"spec.credentialSecretRef", "Required value"},
		},
		{
			name:     "suite without cases",
			manifest: suiteBase,
			want:     []string{"spec", "set cases or caseSources"},
		},
		{
			name: "duplicate case IDs",
			manifest: suiteBase + `  cases:
  - {id: q1, question: a, expectations: [{persona: alice}]}
  - {id: q1, question: b, expectations: [{persona: alice}]}
`,
			want: []string{"spec.cases[1]", "Duplicate value"},
		},
		{
			name:     "recall threshold above one",
			manifest: suiteBase + "  gates: {minRecall: '1.5'}\n  cases: [{id: q, question: a, expectations: [{persona: alice}]}]\n",
			want:     []string{"spec.gates.minRecall", "should match"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := decodeOne(t, tt.manifest)
			obj.SetNamespace(ns)
			err := k8sClient.Create(context.Background(), obj)
			if err == nil {
				t.Fatalf("API server accepted an invalid object; want rejection mentioning %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("rejection message %q does not contain %q", err.Error(), w)
				}
			}
		})
	}
}

// TestRunSpecsAreImmutable checks a run's spec cannot be edited after
// creation: a run is the record of one measurement.
func TestRunSpecsAreImmutable(t *testing.T) {
	ns := newNamespace(t)
	run := decodeOne(t, `
apiVersion: ragcanary.dev/v1alpha1
kind: SuiteRun
metadata: {name: r}
spec: {suiteRef: {name: a}}
`)
	run.SetNamespace(ns)
	if err := k8sClient.Create(context.Background(), run); err != nil {
		t.Fatalf("creating run: %v", err)
	}
	if err := unstructured.SetNestedField(run.Object, "b", "spec", "suiteRef", "name"); err != nil {
		t.Fatal(err)
	}
	err := k8sClient.Update(context.Background(), run)
	if err == nil || !strings.Contains(err.Error(), "spec is immutable") {
		t.Fatalf("updating a run's spec: got %v, want an 'spec is immutable' rejection", err)
	}
}

func decodeOne(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		t.Fatalf("bad test manifest: %v", err)
	}
	return obj
}

func readObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		err := dec.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}
