// Package manifests reads Kubernetes manifests from files and serves them as
// a client.Reader, so `ragcanary eval` live mode resolves a suite, its
// corpus and personas through the same code (and the same door) as the
// cluster does.
package manifests

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// SecretEnvPrefix starts the environment variable holding a Secret key.
const SecretEnvPrefix = "RAGCANARY_SECRET_"

// InputError is invalid input: a file that is not a manifest, a duplicate
// object, no suite.
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

func inputErrorf(format string, args ...any) error {
	return &InputError{Msg: fmt.Sprintf(format, args...)}
}

// Set holds the objects of the given files, keyed by Go type,
// namespace and name. It serves them as a client.Reader so suite.Resolve
// and the corpus driver factory read them exactly as they read a cluster.
type Set struct {
	objs  map[objectKey]client.Object
	order []objectKey
	// suites are the EvalSuites found, with the file each came from.
	suites []*v1alpha1.EvalSuite
}

type objectKey struct {
	typ             reflect.Type
	namespace, name string
}

func keyOf(obj client.Object) objectKey {
	return objectKey{typ: reflect.TypeOf(obj).Elem(), namespace: obj.GetNamespace(), name: obj.GetName()}
}

// kinds are the manifests live mode reads; anything else is skipped.
var kinds = map[schema.GroupVersionKind]func() client.Object{
	v1alpha1.GroupVersion.WithKind("EvalSuite"):  func() client.Object { return &v1alpha1.EvalSuite{} },
	v1alpha1.GroupVersion.WithKind("Corpus"):     func() client.Object { return &v1alpha1.Corpus{} },
	v1alpha1.GroupVersion.WithKind("Persona"):    func() client.Object { return &v1alpha1.Persona{} },
	corev1.SchemeGroupVersion.WithKind("Secret"): func() client.Object { return &corev1.Secret{} },
	corev1.SchemeGroupVersion.WithKind("ConfigMap"): func() client.Object {
		return &corev1.ConfigMap{}
	},
}

// Load decodes every document of every file strictly.
func Load(files []string, notes io.Writer) (*Set, error) {
	m := &Set{objs: map[objectKey]client.Object{}}
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, inputErrorf("%v", err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for doc := 1; ; doc++ {
			raw, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, inputErrorf("%s: document %d: not YAML: %v", path, doc, err)
			}
			if err := m.add(path, doc, raw, notes); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// add decodes one document. A Secret's decoding error is reported without
// the decoder's text, which could quote part of a value.
func (m *Set) add(path string, doc int, raw []byte, notes io.Writer) error {
	where := fmt.Sprintf("%s: document %d", path, doc)
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(raw, &tm); err != nil {
		return inputErrorf("%s: not a Kubernetes manifest: %v", where, err)
	}
	if tm.APIVersion == "" && tm.Kind == "" {
		var anything any
		if err := yaml.Unmarshal(raw, &anything); err == nil && anything == nil {
			return nil // an empty document, such as a trailing "---"
		}
		return inputErrorf("%s: not a Kubernetes manifest: apiVersion and kind are missing", where)
	}
	newObj, ok := kinds[schema.FromAPIVersionAndKind(tm.APIVersion, tm.Kind)]
	if !ok {
		fmt.Fprintf(notes, "ragcanary eval: %s: ignoring %s %s\n", where, tm.APIVersion, tm.Kind)
		return nil
	}
	obj := newObj()
	if err := yaml.UnmarshalStrict(raw, obj); err != nil {
		if tm.Kind == "Secret" {
			return inputErrorf("%s: Secret %q is not a valid Secret manifest (check field names and that data values are base64)",
				where, nameOf(raw))
		}
		return inputErrorf("%s: invalid %s: %v", where, tm.Kind, err)
	}
	if obj.GetName() == "" {
		return inputErrorf("%s: %s has no metadata.name", where, tm.Kind)
	}
	if sec, ok := obj.(*corev1.Secret); ok {
		mergeStringData(sec)
	}
	if s, ok := obj.(*v1alpha1.EvalSuite); ok {
		m.suites = append(m.suites, s)
	}
	key := keyOf(obj)
	if _, dup := m.objs[key]; dup {
		return inputErrorf("%s: %s %q appears twice in the given files", where, tm.Kind, obj.GetName())
	}
	m.objs[key] = obj
	m.order = append(m.order, key)
	return nil
}

// nameOf reads metadata.name alone, for a message about a broken object.
func nameOf(raw []byte) string {
	var meta struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	_ = yaml.Unmarshal(raw, &meta)
	return meta.Metadata.Name
}

// mergeStringData applies stringData over data, as the API server does.
func mergeStringData(s *corev1.Secret) {
	if len(s.StringData) == 0 {
		return
	}
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
}

// Suite is the one EvalSuite of the given files.
func (m *Set) Suite() (*v1alpha1.EvalSuite, error) {
	switch len(m.suites) {
	case 1:
		return m.suites[0], nil
	case 0:
		return nil, inputErrorf("no EvalSuite (apiVersion %s) in the given files", v1alpha1.GroupVersion)
	default:
		return nil, inputErrorf("%d EvalSuites in the given files; live mode runs exactly one", len(m.suites))
	}
}

// NormalizeNamespaces puts objects without a namespace into the suite's
// (or "default"), as kubectl apply would. Objects in another namespace stay
// there and, as in a cluster, are not found by the suite.
func (m *Set) NormalizeNamespaces(suiteNS string) {
	if suiteNS == "" {
		suiteNS = metav1.NamespaceDefault
	}
	objs := make(map[objectKey]client.Object, len(m.objs))
	for i, key := range m.order {
		obj := m.objs[key]
		if obj.GetNamespace() == "" {
			obj.SetNamespace(suiteNS)
		}
		m.order[i] = keyOf(obj)
		objs[m.order[i]] = obj
	}
	m.objs = objs
}

// SecretEnvName is the environment variable that supplies key of Secret
// name: RAGCANARY_SECRET_<NAME>_<KEY>, upper case, '-' and '.' as '_'.
func SecretEnvName(name, key string) string {
	norm := strings.NewReplacer("-", "_", ".", "_").Replace
	return SecretEnvPrefix + strings.ToUpper(norm(name)) + "_" + strings.ToUpper(norm(key))
}

// OverlayEnv puts every credential that the environment supplies for a
// Corpus or Persona reference into the Secret it names, over any value a
// manifest gave: the pipeline's secret store wins over a file. Setting the
// variable is the user's explicit choice, so such a Secret counts as
// labelled for ragcanary; a Secret manifest must carry the label itself.
func (m *Set) OverlayEnv(env func(string) (string, bool)) {
	for _, ref := range m.secretRefs() {
		value, ok := env(SecretEnvName(ref.name, ref.key))
		if !ok || value == "" {
			continue
		}
		key := objectKey{typ: reflect.TypeFor[corev1.Secret](), namespace: ref.namespace, name: ref.name}
		sec, _ := m.objs[key].(*corev1.Secret)
		if sec == nil {
			sec = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ref.namespace, Name: ref.name}}
			m.objs[key] = sec
			m.order = append(m.order, key)
		}
		if sec.Data == nil {
			sec.Data = map[string][]byte{}
		}
		sec.Data[ref.key] = []byte(value)
		if sec.Labels == nil {
			sec.Labels = map[string]string{}
		}
		sec.Labels[v1alpha1.LabelCredential] = v1alpha1.LabelCredentialValue
	}
}

type secretRef struct{ namespace, name, key string }

func (m *Set) secretRefs() []secretRef {
	var refs []secretRef
	for _, key := range m.order {
		switch o := m.objs[key].(type) {
		case *v1alpha1.Corpus:
			for _, r := range o.Spec.SecretRefs() {
				refs = append(refs, secretRef{o.Namespace, r.Ref.Name, r.Ref.Key})
			}
		case *v1alpha1.Persona:
			for _, r := range o.Spec.SecretRefs() {
				refs = append(refs, secretRef{o.Namespace, r.Ref.Name, r.Ref.Key})
			}
		}
	}
	return refs
}

// Credential returns a Secret key's value. The error names the Secret, the
// key and the variable to set, never a value.
func (m *Set) Credential(namespace string, ref v1alpha1.SecretKeyReference) ([]byte, error) {
	key := objectKey{typ: reflect.TypeFor[corev1.Secret](), namespace: namespace, name: ref.Name}
	if sec, ok := m.objs[key].(*corev1.Secret); ok && len(sec.Data[ref.Key]) > 0 {
		return sec.Data[ref.Key], nil
	}
	return nil, fmt.Errorf("missing credential: Secret %q key %q is neither set in $%s nor in a Secret manifest in the given files",
		ref.Name, ref.Key, SecretEnvName(ref.Name, ref.Key))
}

// Get implements client.Reader over the loaded objects.
func (m *Set) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	stored, ok := m.objs[objectKey{typ: reflect.TypeOf(obj).Elem(), namespace: key.Namespace, name: key.Name}]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: reflect.TypeOf(obj).Elem().Name()}, key.Name)
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(stored.DeepCopyObject()).Elem())
	return nil
}

// List implements client.Reader; nothing in live mode lists.
func (m *Set) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("listing is not supported in live mode")
}
