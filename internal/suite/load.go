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
	"github.com/ragcanary/ragcanary/internal/scoring"
	"github.com/ragcanary/ragcanary/internal/target"
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
	// Fixture is the suite's fixture, nil without one.
	Fixture *Fixture
}

// Resolve loads and validates a suite's cases and checks that its corpus and
// every persona exist. A *Problem is for the user; other errors are transient.
func Resolve(ctx context.Context, r client.Reader, s *v1alpha1.EvalSuite) (*Definition, error) {
	cases, err := LoadCases(ctx, r, s)
	if err != nil {
		return nil, err
	}
	fixture, err := LoadFixture(ctx, r, s)
	if err != nil {
		return nil, err
	}
	def := &Definition{Cases: cases, Fixture: fixture}
	def.Corpus, def.Personas, err = ResolveRefs(ctx, r, s.Namespace, s.Spec.CorpusRef.Name, PersonaNames(cases), func(name string) string {
		return fmt.Sprintf("case %q", firstCaseFor(cases, name))
	})
	if err != nil {
		return nil, err
	}
	return def, nil
}

// ResolveRefs reads the corpus and the named personas: a run resumed from
// its plan reads these again (credentials are never frozen), not the
// suite. namedBy says what names a persona, for the message.
func ResolveRefs(ctx context.Context, r client.Reader, namespace, corpus string, personas []string,
	namedBy func(string) string) (*v1alpha1.Corpus, map[string]*v1alpha1.Persona, error) {
	c := &v1alpha1.Corpus{}
	err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: corpus}, c)
	if apierrors.IsNotFound(err) {
		return nil, nil, problem(v1alpha1.ReasonCorpusNotFound, "Corpus %q does not exist in namespace %q: create it or fix spec.corpusRef",
			corpus, namespace)
	}
	if err != nil {
		return nil, nil, err
	}
	out := map[string]*v1alpha1.Persona{}
	for _, name := range personas {
		p := &v1alpha1.Persona{}
		err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, p)
		if apierrors.IsNotFound(err) {
			return nil, nil, problem(v1alpha1.ReasonPersonaNotFound, "Persona %q, named by %s, does not exist in namespace %q",
				name, namedBy(name), namespace)
		}
		if err != nil {
			return nil, nil, err
		}
		out[name] = p
	}
	return c, out, nil
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
		return nil, origin, problem(v1alpha1.ReasonConfigMapNotFound, "ConfigMap %q named in spec.caseSources does not exist in namespace %q",
			src.ConfigMapRef.Name, namespace)
	}
	if err != nil {
		return nil, origin, err
	}
	data, ok := cm.Data[key]
	if !ok {
		return nil, origin, problem(v1alpha1.ReasonConfigMapNotFound, "ConfigMap %q has no key %q: add it or fix spec.caseSources",
			src.ConfigMapRef.Name, key)
	}
	cases, err := DecodeCases([]byte(data))
	if err != nil {
		return nil, origin, problem(v1alpha1.ReasonInvalidCases, "%s is not a JSON or YAML array of cases: %v", origin, err)
	}
	return cases, origin, nil
}

// DecodeCases strictly decodes a JSON or YAML array of cases, either as
// EvalSuite cases (expectations per persona) or in the v2 file format
// `ragcanary eval` reads (one persona per case, snake_case fields under
// expected). Unknown or duplicated fields are errors, so a typo cannot
// silently drop an expectation.
func DecodeCases(data []byte) ([]v1alpha1.EvalCase, error) {
	var cases []v1alpha1.EvalCase
	errSuite := yaml.UnmarshalStrict(data, &cases)
	if errSuite == nil {
		return cases, nil
	}
	var files []scoring.CaseV2
	if err := yaml.UnmarshalStrict(data, &files); err != nil || !fileFormat(files) {
		return nil, errSuite
	}
	return fromFileFormat(files)
}

// fileFormat reports whether decoded v2 file cases really are v2: every
// one names an expected action (an EvalSuite array decodes to nothing).
func fileFormat(files []scoring.CaseV2) bool {
	for _, f := range files {
		if f.Expected.Action == "" {
			return false
		}
	}
	return len(files) > 0
}

// fromFileFormat groups v2 file cases by ID into EvalSuite cases, one
// expectation per persona. The answer surface is asked: a v2 case is about
// what the system declares, which only the answer surface can say.
func fromFileFormat(files []scoring.CaseV2) ([]v1alpha1.EvalCase, error) {
	var out []v1alpha1.EvalCase
	index := map[string]int{}
	for _, f := range files {
		e := v1alpha1.Expectation{Persona: f.Persona, Action: v1alpha1.ExpectedAction(f.Expected.Action),
			AllowedEvidence: f.Expected.AllowedEvidence, RequiredEvidence: f.Expected.RequiredEvidence,
			RequiredAnyOf: f.Expected.RequiredAnyOf, ForbiddenEvidence: f.Expected.ForbiddenEvidence,
			SupersededEvidence: f.Expected.SupersededEvidence, ExpectedCitations: f.Expected.ExpectedCitations,
			InternalReason: v1alpha1.InternalReason(f.Expected.InternalReason), PublicResponseClass: f.Expected.PublicResponseClass,
			ForbiddenMarkers: f.Expected.ForbiddenMarkers}
		if i, ok := index[f.ID]; ok {
			if out[i].Question != f.Question || out[i].Stratum != f.Stratum || out[i].AsOf != f.AsOf {
				return nil, fmt.Errorf("case %q appears twice with a different question, stratum or as_of: give each question its own id", f.ID)
			}
			out[i].Expectations = append(out[i].Expectations, e)
			continue
		}
		index[f.ID] = len(out)
		out = append(out, v1alpha1.EvalCase{ID: f.ID, Question: f.Question, Stratum: f.Stratum, AsOf: f.AsOf,
			AskAnswer: true, Expectations: []v1alpha1.Expectation{e}})
	}
	return out, nil
}
