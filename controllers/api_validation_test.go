package controllers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// TestSamplesApply creates every object in config/samples and reads each back
// from the API server: the samples users copy must be valid.
func TestSamplesApply(t *testing.T) {
	t.Parallel()
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
// restOps is a REST source with the two required operations.
const restOps = "{url: 'https://forge.example/api/v1', operations: {createDocument: [{method: POST, path: /items}], deleteDocument: [{method: DELETE, path: '/items/{{.DocumentID}}'}]}}"

func TestInvalidObjectsRejected(t *testing.T) {
	t.Parallel()
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
	const runBase = `
apiVersion: ragcanary.dev/v1alpha1
kind: CanaryRun
metadata: {name: r}
spec:
  corpusRef: {name: corpus}
  personaRef: {name: alice}
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
			name:     "InFlight alone",
			manifest: canaryBase + "  schedule: {every: 5m}\n  probing: {surfaces: [InFlight]}\n",
			want:     []string{"spec.probing", "InFlight is measured beside another surface"},
		},
		{
			name:     "too many in-flight streams",
			manifest: canaryBase + "  schedule: {every: 5m}\n  probing: {surfaces: [Stream, InFlight], inFlightStreams: 5}\n",
			want:     []string{"spec.probing.inFlightStreams", "less than or equal to 4"},
		},
		{
			name:     "InFlight on a content-freshness canary",
			manifest: canaryBase + "  schedule: {every: 5m}\n  revocation: {method: UpdateContent}\n  probing: {surfaces: [Search, InFlight]}\n",
			want:     []string{"remove Conversation and InFlight from probing.surfaces"},
		},
		{
			name:     "negative post-revocation delivery SLO",
			manifest: corpusBase + "  driver: {type: HTTP, http: {url: 'http://x', credentialSecretRef: {name: s, key: k}}}\n  freshness: {postRevocationDeliverySLO: -1s}\n",
			want:     []string{"spec.freshness.postRevocationDeliverySLO", "must not be negative"},
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
			name:     "confirmations × interval equal to exclusion timeout",
			manifest: canaryBase + "  schedule: {every: 5m}\n  probing: {interval: 1m, confirmations: 5, exclusionTimeout: 5m}\n",
			want:     []string{"spec.probing", "confirmations × interval must be smaller than exclusionTimeout"},
		},
		{
			name:     "confirmations × interval above exclusion timeout",
			manifest: canaryBase + "  schedule: {every: 5m}\n  probing: {interval: 2m, confirmations: 3, exclusionTimeout: 5m}\n",
			want:     []string{"spec.probing", "confirmations × interval must be smaller than exclusionTimeout"},
		},
		{
			// confirmations is unset: its default of 3 makes 3 × 2m ≥ 5m.
			name:     "default confirmations × interval above exclusion timeout",
			manifest: canaryBase + "  schedule: {every: 5m}\n  probing: {interval: 2m, exclusionTimeout: 5m}\n",
			want:     []string{"spec.probing", "confirmations × interval must be smaller than exclusionTimeout"},
		},
		{
			// exclusionTimeout is unset: its default of 30m is below 3 × 11m.
			name:     "confirmations × interval above default exclusion timeout",
			manifest: canaryBase + "  schedule: {every: 5m}\n  probing: {interval: 11m, visibilityTimeout: 1h}\n",
			want:     []string{"spec.probing", "confirmations × interval must be smaller than exclusionTimeout"},
		},
		{
			name:     "run confirmations × interval above exclusion timeout",
			manifest: runBase + "  probing: {interval: 2m, confirmations: 3, exclusionTimeout: 5m}\n",
			want:     []string{"spec.probing", "confirmations × interval must be smaller than exclusionTimeout"},
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
			name:     "revocation group that rewrites the path",
			manifest: canaryBase + "  schedule: {every: 5m}\n  revocation: {method: RemoveFromGroup, group: '..'}\n",
			want:     []string{"spec.revocation.group", "should match"},
		},
		{
			name:     "revocation group with a slash",
			manifest: canaryBase + "  schedule: {every: 5m}\n  revocation: {method: RemoveFromGroup, group: 'eng/admins'}\n",
			want:     []string{"spec.revocation.group", "should match"},
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
			name:     "corpus url without a host",
			manifest: corpusBase + "  driver: {type: HTTP, http: {url: 'http:///x', credentialSecretRef: {name: s, key: k}}}\n",
			want:     []string{"spec.driver.http.url", "url must name a host"},
		},
		{
			name:     "corpus url with only a port",
			manifest: corpusBase + "  driver: {type: HTTP, http: {url: 'http://:8089/x', credentialSecretRef: {name: s, key: k}}}\n",
			want:     []string{"spec.driver.http.url", "url must name a host"},
		},
		{
			name:     "http driver without http block",
			manifest: corpusBase + "  driver: {type: HTTP}\n",
			want:     []string{"spec.driver", "http is required when type is HTTP"},
		},
		{
			name:     "rest driver without rest block",
			manifest: corpusBase + "  driver: {type: REST}\n  surfaces: {search: {type: HTTP, url: 'https://s.example/q', credentialHeader: {name: Authorization}, hits: /h, id: /id}}\n",
			want:     []string{"spec.driver", "rest is required when type is REST"},
		},
		{
			name: "rest and http blocks",
			manifest: corpusBase + "  driver: {type: REST, http: {url: 'https://rag.example', credentialSecretRef: {name: s, key: k}}, rest: " + restOps +
				"}\n  surfaces: {search: {type: HTTP, url: 'https://s.example/q', credentialHeader: {name: Authorization}, hits: /h, id: /id}}\n",
			want: []string{"spec.driver", "set only the block matching type"},
		},
		{
			name:     "rest source without surfaces",
			manifest: corpusBase + "  driver: {type: REST, rest: " + restOps + "}\n",
			want:     []string{"spec", "a REST source plants only: declare spec.surfaces.search or spec.surfaces.chat"},
		},
		{
			name: "rest basic auth without username",
			manifest: corpusBase + "  driver: {type: REST, rest: {url: 'https://forge.example/api', auth: {type: Basic, secretRef: {name: s, key: k}}, operations: {createDocument: [{method: POST}], deleteDocument: [{method: DELETE}]}}}\n" +
				"  surfaces: {search: {type: HTTP, url: 'https://s.example/q', credentialHeader: {name: Authorization}, hits: /h, id: /id}}\n",
			want: []string{"spec.driver.rest.auth", "username is required when type is Basic"},
		},
		{
			name: "rest request method",
			manifest: corpusBase + "  driver: {type: REST, rest: {url: 'https://forge.example/api', operations: {createDocument: [{method: TRACE}], deleteDocument: [{method: DELETE}]}}}\n" +
				"  surfaces: {search: {type: HTTP, url: 'https://s.example/q', credentialHeader: {name: Authorization}, hits: /h, id: /id}}\n",
			want: []string{"spec.driver.rest.operations.createDocument[0].method", "Unsupported value"},
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
			want: []string{"spec", "set exactly one of credentialSecretRef and oauth2"},
		},
		// Persona subjects and groups travel in request paths
		// (/v1/groups/{group}/members/{subject}); "..", "." or an escaped
		// slash would make the driver write somewhere else.
		{
			name:     "persona subject dot-dot",
			manifest: personaWith("{subject: '..'}"),
			want:     []string{"spec.subject", "should match"},
		},
		{
			name:     "persona subject dot",
			manifest: personaWith("{subject: '.'}"),
			want:     []string{"spec.subject", "should match"},
		},
		{
			name:     "persona subject with a slash",
			manifest: personaWith("{subject: 'a/b'}"),
			want:     []string{"spec.subject", "should match"},
		},
		{
			name:     "persona subject percent-encoded dot-dot",
			manifest: personaWith("{subject: '%2e%2e'}"),
			want:     []string{"spec.subject", "should match"},
		},
		{
			name:     "persona subject longer than the contract allows",
			manifest: personaWith("{subject: '" + strings.Repeat("a", 201) + "'}"),
			want:     []string{"spec.subject", "200"},
		},
		{
			name:     "persona group dot-dot",
			manifest: personaWith("{subject: alice, groups: [eng, '..']}"),
			want:     []string{"spec.groups[1]", "should match"},
		},
		{
			name:     "persona group with a slash",
			manifest: personaWith("{subject: alice, groups: ['a/b']}"),
			want:     []string{"spec.groups[0]", "should match"},
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
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := decodeOne(t, tt.manifest)
			obj.SetNamespace(ns)
			// A unique name, so an object wrongly accepted by one case does not
			// make the next case fail with "already exists" instead.
			obj.SetName(fmt.Sprintf("%s-%d", obj.GetName(), i))
			assertRejected(t, k8sClient.Create(context.Background(), obj), tt.want)
		})
	}
}

// assertRejected checks a create was refused with a message containing
// every one of want.
func assertRejected(t *testing.T, err error, want []string) {
	t.Helper()
	if err == nil {
		t.Fatalf("API server accepted an invalid object; want rejection mentioning %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("rejection message %q does not contain %q", err.Error(), w)
		}
	}
}

// TestValidObjectsAccepted sends objects next to the edges of the rules in
// TestInvalidObjectsRejected: the rules must not reject what people
// legitimately write.
func TestValidObjectsAccepted(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	canary := func(name, probing string) string {
		return `
apiVersion: ragcanary.dev/v1alpha1
kind: RevocationCanary
metadata: {name: ` + name + `}
spec:
  corpusRef: {name: corpus}
  personaRef: {name: alice}
  schedule: {every: 5m}
  probing: ` + probing + "\n"
	}
	corpus := func(name, url string) string {
		return `
apiVersion: ragcanary.dev/v1alpha1
kind: Corpus
metadata: {name: ` + name + `}
spec:
  driver: {type: HTTP, http: {url: '` + url + `', credentialSecretRef: {name: s, key: k}}}
`
	}
	tests := []struct {
		name string
		// manifest is the object sent to the API server; it must be stored.
		manifest string
	}{
		{name: "e-mail subject", manifest: personaNamed("email", "{subject: alice@example.com}")},
		{name: "prefixed subject", manifest: personaNamed("prefixed", "{subject: 'user:alice'}")},
		{name: "group-like subject", manifest: personaNamed("grouplike", "{subject: 'group:eng'}")},
		{name: "dotted subject", manifest: personaNamed("dotted", "{subject: a.b_c-d..e}")},
		{name: "longest subject", manifest: personaNamed("longest", "{subject: '"+strings.Repeat("a", 200)+"'}")},
		{name: "groups", manifest: personaNamed("groups", "{subject: alice, groups: ['group:eng', eng.team, 'ops@example.com']}")},
		{name: "revocation group", manifest: canary("group", "{}") + "  revocation: {method: RemoveFromGroup, group: 'group:canary-readers'}\n"},
		// 3 × 1m < 5m.
		{name: "confirmations × interval below exclusion timeout", manifest: canary("below", "{interval: 1m, confirmations: 3, exclusionTimeout: 5m}")},
		// Default confirmations: 3 × 1m59s < 6m.
		{name: "default confirmations × interval below exclusion timeout", manifest: canary("defaultconf", "{interval: 1m59s, exclusionTimeout: 6m}")},
		// Defaults only: 3 × 5s < 30m.
		{name: "default probing", manifest: canary("defaults", "{}")},
		// Sub-second intervals: 100 × 100ms = 10s < 10.001s.
		{name: "sub-second interval", manifest: canary("subsecond", "{interval: 100ms, confirmations: 100, exclusionTimeout: 10001ms}")},
		{name: "url with host and port", manifest: corpus("hostport", "http://ragtarget.rag.svc:8089")},
		{name: "url with host and path", manifest: corpus("hostpath", "https://rag.example/api/ragcanary")},
		{name: "url with IPv6 host", manifest: corpus("ipv6", "http://[::1]:8089")},
		{name: "rest source", manifest: `
apiVersion: ragcanary.dev/v1alpha1
kind: Corpus
metadata: {name: rest}
spec:
  driver:
    type: REST
    rest:
      url: https://forge.example/api/v1
      auth: {type: OAuth2ClientCredentials, tokenURL: 'https://login.example/token', clientID: ragcanary, scopes: [read], secretRef: {name: s, key: k}}
      values: {org: ragcanary}
      operations:
        createDocument:
          - {method: POST, path: '/orgs/{{.Values.org}}/repos', body: '{"name": {{json .DocumentID}}}', expect: [201], capture: {repo: /name}}
        deleteDocument:
          - {method: DELETE, path: '/repos/{{.Values.org}}/{{.Captured.repo}}'}
        grant:
          - {method: PUT, path: '/repos/{{.Values.org}}/{{.Captured.repo}}/collaborators/{{.Principal}}', headers: {X-Run: '{{.Run}}'}, query: {a: b}}
  surfaces: {search: {type: HTTP, url: 'https://forge.example/api/v1/repos/issues/search', method: GET, credentialHeader: {name: Authorization, prefix: 'token '}, hits: '', id: /number}}
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := decodeOne(t, tt.manifest)
			obj.SetNamespace(ns)
			if err := k8sClient.Create(context.Background(), obj); err != nil {
				t.Fatalf("API server rejected a valid object: %v", err)
			}
		})
	}
}

// TestRunDocumentIDFollowsContract checks status.documentID, which the
// controller writes and the driver puts in request paths, is held to the
// contract's document ID pattern by the API server too.
func TestRunDocumentIDFollowsContract(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	run := decodeOne(t, `
apiVersion: ragcanary.dev/v1alpha1
kind: CanaryRun
metadata: {name: r}
spec:
  corpusRef: {name: corpus}
  personaRef: {name: alice}
`)
	run.SetNamespace(ns)
	if err := k8sClient.Create(context.Background(), run); err != nil {
		t.Fatalf("creating run: %v", err)
	}
	// A merge patch, not an update: the controller may have written status
	// since the run was created.
	patch := client.RawPatch(types.MergePatchType, []byte(`{"status":{"documentID":".."}}`))
	err := k8sClient.Status().Patch(context.Background(), run, patch)
	if err == nil || !strings.Contains(err.Error(), "status.documentID") || !strings.Contains(err.Error(), "should match") {
		t.Fatalf("writing canaryrun.DocumentID '..': got %v, want a 'status.documentID ... should match' rejection", err)
	}
}

// TestRunSpecsAreImmutable checks a run's spec cannot be edited after
// creation: a run is the record of one measurement.
func TestRunSpecsAreImmutable(t *testing.T) {
	t.Parallel()
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

// personaWith is a Persona manifest named p with the given flow-style spec
// and a credential reference.
func personaWith(spec string) string { return personaNamed("p", spec) }

func personaNamed(name, spec string) string {
	obj := map[string]any{}
	if err := yaml.Unmarshal([]byte(spec), &obj); err != nil {
		panic("bad test persona spec: " + err.Error())
	}
	obj["credentialSecretRef"] = map[string]any{"name": "s", "key": "k"}
	out, err := yaml.Marshal(map[string]any{
		"apiVersion": "ragcanary.dev/v1alpha1", "kind": "Persona",
		"metadata": map[string]any{"name": name}, "spec": obj,
	})
	if err != nil {
		panic(err)
	}
	return string(out)
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
