// Package suite holds what the EvalSuite and SuiteRun controllers share
// besides scheduling: loading and validating a suite's cases (inline and
// from ConfigMaps), executing every case × persona against a corpus, and
// turning the scoring engine's report into SuiteRun status.
//
// Loading and validation are the same code for both controllers, so a suite
// the EvalSuite controller calls Ready is exactly a suite a run can execute.
package suite

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/target"
)

// Reasons a suite cannot run; each is a condition reason the user acts on.
const (
	ReasonInvalidCases      = "InvalidCases"
	ReasonConfigMapNotFound = "ConfigMapNotFound"
	ReasonPersonaNotFound   = "PersonaNotFound"
	ReasonCorpusNotFound    = "CorpusNotFound"
)

// DefaultCasesKey is the ConfigMap key read when a case source names none,
// matching the CRD default.
const DefaultCasesKey = "cases.json"

// maxProblemsInMessage bounds a condition message listing many bad cases.
const maxProblemsInMessage = 5

// Problem is a suite the user must fix: the door's intent-typed problem,
// so suite, corpus and credential problems map to conditions in one place.
// It is never retried with backoff: a spec or ConfigMap change brings the
// suite back.
type Problem = target.Problem

func problem(reason, format string, args ...any) *Problem {
	return target.Stall(reason, format, args...)
}

// Definition is a suite resolved against the cluster: every case, the
// corpus, and each persona the cases name.
type Definition struct {
	Cases    []v1alpha1.EvalCase
	Corpus   *v1alpha1.Corpus
	Personas map[string]*v1alpha1.Persona
}

// Resolve loads and validates a suite's cases and checks that its corpus and
// every persona exist. A *Problem is for the user; other errors are transient.
func Resolve(ctx context.Context, r client.Reader, s *v1alpha1.EvalSuite) (*Definition, error) {
	cases, err := LoadCases(ctx, r, s)
	if err != nil {
		return nil, err
	}
	def := &Definition{Cases: cases, Corpus: &v1alpha1.Corpus{}, Personas: map[string]*v1alpha1.Persona{}}
	err = r.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Spec.CorpusRef.Name}, def.Corpus)
	if apierrors.IsNotFound(err) {
		return nil, problem(ReasonCorpusNotFound, "Corpus %q does not exist in namespace %q: create it or fix spec.corpusRef",
			s.Spec.CorpusRef.Name, s.Namespace)
	}
	if err != nil {
		return nil, err
	}
	for _, name := range PersonaNames(cases) {
		p := &v1alpha1.Persona{}
		err := r.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: name}, p)
		if apierrors.IsNotFound(err) {
			return nil, problem(ReasonPersonaNotFound, "Persona %q, named by case %q, does not exist in namespace %q",
				name, firstCaseFor(cases, name), s.Namespace)
		}
		if err != nil {
			return nil, err
		}
		def.Personas[name] = p
	}
	return def, nil
}

// PersonaNames lists the distinct personas the cases name, sorted.
func PersonaNames(cases []v1alpha1.EvalCase) []string {
	var names []string
	for _, c := range cases {
		for _, e := range c.Expectations {
			names = append(names, e.Persona)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

func firstCaseFor(cases []v1alpha1.EvalCase, persona string) string {
	for _, c := range cases {
		for _, e := range c.Expectations {
			if e.Persona == persona {
				return c.ID
			}
		}
	}
	return ""
}

// LoadCases returns the inline cases followed by each case source's, in
// spec order, validated as one suite.
func LoadCases(ctx context.Context, r client.Reader, s *v1alpha1.EvalSuite) ([]v1alpha1.EvalCase, error) {
	cases := slices.Clone(s.Spec.Cases)
	origins := make([]string, len(cases))
	for i := range origins {
		origins[i] = "spec.cases"
	}
	for _, src := range s.Spec.CaseSources {
		loaded, origin, err := loadSource(ctx, r, s.Namespace, src)
		if err != nil {
			return nil, err
		}
		cases = append(cases, loaded...)
		for range loaded {
			origins = append(origins, origin)
		}
	}
	if err := Validate(cases, origins); err != nil {
		return nil, err
	}
	return cases, nil
}

// loadSource reads and decodes one ConfigMap key.
func loadSource(ctx context.Context, r client.Reader, namespace string, src v1alpha1.CaseSource) ([]v1alpha1.EvalCase, string, error) {
	key := src.Key
	if key == "" {
		key = DefaultCasesKey
	}
	origin := fmt.Sprintf("ConfigMap %q key %q", src.ConfigMapRef.Name, key)
	var cm corev1.ConfigMap
	err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: src.ConfigMapRef.Name}, &cm)
	if apierrors.IsNotFound(err) {
		return nil, origin, problem(ReasonConfigMapNotFound, "ConfigMap %q named in spec.caseSources does not exist in namespace %q",
			src.ConfigMapRef.Name, namespace)
	}
	if err != nil {
		return nil, origin, err
	}
	data, ok := cm.Data[key]
	if !ok {
		return nil, origin, problem(ReasonConfigMapNotFound, "ConfigMap %q has no key %q: add it or fix spec.caseSources",
			src.ConfigMapRef.Name, key)
	}
	cases, err := DecodeCases([]byte(data))
	if err != nil {
		return nil, origin, problem(ReasonInvalidCases, "%s is not a JSON or YAML array of cases: %v", origin, err)
	}
	return cases, origin, nil
}

// DecodeCases strictly decodes a JSON or YAML array of EvalCase: unknown or
// duplicated fields are errors, so a typo cannot silently drop an expectation.
func DecodeCases(data []byte) ([]v1alpha1.EvalCase, error) {
	var cases []v1alpha1.EvalCase
	if err := yaml.UnmarshalStrict(data, &cases); err != nil {
		return nil, err
	}
	return cases, nil
}
