package suite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// crdSchema reads the generated CRD of a kind and returns its schema.
func crdSchema(t *testing.T, file string) apiextensionsv1.JSONSchemaProps {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", file))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return *crd.Spec.Versions[0].Schema.OpenAPIV3Schema
}

// prop walks a dotted path of properties; "[]" steps into list items.
func prop(t *testing.T, s apiextensionsv1.JSONSchemaProps, path string) apiextensionsv1.JSONSchemaProps {
	t.Helper()
	for _, name := range strings.Split(path, ".") {
		if name == "[]" {
			if s.Items == nil || s.Items.Schema == nil {
				t.Fatalf("%s: not a list", path)
			}
			s = *s.Items.Schema
			continue
		}
		next, ok := s.Properties[name]
		if !ok {
			t.Fatalf("%s: no property %q", path, name)
		}
		s = next
	}
	return s
}

// TestBoundsMatchCRD keeps the ConfigMap checks and the CRD from drifting:
// every bound Validate enforces is the generated CRD's number, and the
// SuiteRun status fields that echo case data hold at least that much.
func TestBoundsMatchCRD(t *testing.T) {
	suite := prop(t, crdSchema(t, "ragcanary.dev_evalsuites.yaml"), "spec")
	run := prop(t, crdSchema(t, "ragcanary.dev_suiteruns.yaml"), "status")
	deref := func(p *int64) int64 {
		if p == nil {
			return -1
		}
		return *p
	}
	tests := []struct {
		// path is the field, from spec (EvalSuite) or status (SuiteRun).
		path string
		// got is the CRD's bound; want the constant Validate uses.
		got, want int64
	}{
		{"spec.cases maxItems", deref(prop(t, suite, "cases").MaxItems), maxCasesPerList},
		{"spec.caseSources maxItems", deref(prop(t, suite, "caseSources").MaxItems), maxCaseSources},
		{"id minLength", deref(prop(t, suite, "cases.[].id").MinLength), 1},
		{"id maxLength", deref(prop(t, suite, "cases.[].id").MaxLength), maxCaseIDLength},
		{"question minLength", deref(prop(t, suite, "cases.[].question").MinLength), 1},
		{"question maxLength", deref(prop(t, suite, "cases.[].question").MaxLength), maxQuestionLength},
		{"stratum maxLength", deref(prop(t, suite, "cases.[].stratum").MaxLength), maxStratumLength},
		{"expectations minItems", deref(prop(t, suite, "cases.[].expectations").MinItems), 1},
		{"expectations maxItems", deref(prop(t, suite, "cases.[].expectations").MaxItems), maxExpectations},
		{"persona minLength", deref(prop(t, suite, "cases.[].expectations.[].persona").MinLength), 1},
		{"persona maxLength", deref(prop(t, suite, "cases.[].expectations.[].persona").MaxLength), maxPersonaNameLength},
		{"relevantIDs maxItems", deref(prop(t, suite, "cases.[].expectations.[].relevantIDs").MaxItems), maxRelevantIDs},
		{"relevantIDs item maxLength", deref(prop(t, suite, "cases.[].expectations.[].relevantIDs.[]").MaxLength), maxEvidenceIDLength},
		{"allowedIDs maxItems", deref(prop(t, suite, "cases.[].expectations.[].allowedIDs").MaxItems), maxAllowedIDs},
		{"allowedIDs item maxLength", deref(prop(t, suite, "cases.[].expectations.[].allowedIDs.[]").MaxLength), maxEvidenceIDLength},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("EvalSuite %s = %d in the CRD, %d in Validate", tt.path, tt.got, tt.want)
		}
	}
	if got := prop(t, suite, "cases.[].expectations.[].persona").Pattern; got != personaNamePattern {
		t.Errorf("persona pattern = %q in the CRD, %q in Validate", got, personaNamePattern)
	}
	// Status echoes case IDs, personas and strata: a status bound below the
	// case bound would reject the final status patch of a valid suite.
	echoes := []struct {
		path string
		min  int64
	}{
		{"failingCases.[].caseID", maxCaseIDLength},
		{"failingCases.[].persona", maxPersonaNameLength},
		{"personas.[].persona", maxPersonaNameLength},
		{"personas.[].stratum", maxStratumLength},
	}
	for _, e := range echoes {
		if got := deref(prop(t, run, e.path).MaxLength); got < e.min {
			t.Errorf("SuiteRun status.%s maxLength = %d, below the case bound %d", e.path, got, e.min)
		}
	}
}

// TestValidateCRDBounds holds ConfigMap cases to the CRD's numbers, at and
// just past each bound, counting characters as the API server does.
func TestValidateCRDBounds(t *testing.T) {
	ids := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("d%d", i)
		}
		return out
	}
	personas := func(n int) []v1alpha1.Expectation {
		out := make([]v1alpha1.Expectation, n)
		for i := range out {
			out[i] = v1alpha1.Expectation{Persona: fmt.Sprintf("p%d", i)}
		}
		return out
	}
	tests := []struct {
		name string
		// edit changes a valid case.
		edit func(c *v1alpha1.EvalCase)
		// want is a substring of the message; "" means valid.
		want string
	}{
		{name: "stratum at the bound", edit: func(c *v1alpha1.EvalCase) { c.Stratum = strings.Repeat("s", 63) }},
		// 63 two-byte characters are 126 bytes: the CRD counts characters.
		{name: "multibyte stratum at the bound", edit: func(c *v1alpha1.EvalCase) { c.Stratum = strings.Repeat("é", 63) }},
		{name: "stratum over the bound", edit: func(c *v1alpha1.EvalCase) { c.Stratum = strings.Repeat("s", 80) },
			want: `case "c" in ConfigMap "cm" key "k": stratum is 80 characters, more than 63`},
		{name: "id at the bound", edit: func(c *v1alpha1.EvalCase) { c.ID = strings.Repeat("i", 128) }},
		{name: "id over the bound", edit: func(c *v1alpha1.EvalCase) { c.ID = strings.Repeat("i", 129) },
			want: "id is 129 characters, more than 128"},
		{name: "empty id", edit: func(c *v1alpha1.EvalCase) { c.ID = "" }, want: `case #1 in ConfigMap "cm" key "k": id must not be empty`},
		{name: "question at the bound", edit: func(c *v1alpha1.EvalCase) { c.Question = strings.Repeat("q", 4096) }},
		{name: "question over the bound", edit: func(c *v1alpha1.EvalCase) { c.Question = strings.Repeat("q", 4097) },
			want: "question is 4097 characters, more than 4096"},
		{name: "blank question", edit: func(c *v1alpha1.EvalCase) { c.Question = " " }, want: "question must not be empty"},
		{name: "32 expectations", edit: func(c *v1alpha1.EvalCase) { c.Expectations = personas(32) }},
		{name: "33 expectations", edit: func(c *v1alpha1.EvalCase) { c.Expectations = personas(33) },
			want: "expectations must list 1 to 32 personas, got 33"},
		{name: "no expectations", edit: func(c *v1alpha1.EvalCase) { c.Expectations = nil },
			want: "expectations must list 1 to 32 personas, got 0"},
		{name: "persona name at the bound", edit: func(c *v1alpha1.EvalCase) {
			c.Expectations[0].Persona = strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 61)
		}},
		{name: "persona name over the bound", edit: func(c *v1alpha1.EvalCase) { c.Expectations[0].Persona = strings.Repeat("a", 254) },
			want: "expectations[0].persona is 254 characters, more than 253"},
		{name: "persona name not a DNS name", edit: func(c *v1alpha1.EvalCase) { c.Expectations[0].Persona = "Alice_Smith" },
			want: `expectations[0].persona "Alice_Smith" must be a lowercase DNS subdomain name`},
		{name: "empty persona", edit: func(c *v1alpha1.EvalCase) { c.Expectations[0].Persona = "" },
			want: "expectations[0].persona must not be empty"},
		{name: "100 relevant IDs", edit: func(c *v1alpha1.EvalCase) {
			c.Expectations[0].RelevantIDs, c.Expectations[0].AllowedIDs = ids(100), ids(100)
		}},
		{name: "101 relevant IDs", edit: func(c *v1alpha1.EvalCase) {
			c.Expectations[0].RelevantIDs, c.Expectations[0].AllowedIDs = ids(101), ids(101)
		}, want: `persona "alice": relevantIDs holds 101 IDs, more than 100`},
		{name: "500 allowed IDs", edit: func(c *v1alpha1.EvalCase) { c.Expectations[0].AllowedIDs = ids(500) }},
		{name: "501 allowed IDs", edit: func(c *v1alpha1.EvalCase) { c.Expectations[0].AllowedIDs = ids(501) },
			want: `persona "alice": allowedIDs holds 501 IDs, more than 500`},
		{name: "evidence ID at the bound", edit: func(c *v1alpha1.EvalCase) {
			c.Expectations[0].AllowedIDs = []string{strings.Repeat("e", 256)}
		}},
		{name: "evidence ID over the bound", edit: func(c *v1alpha1.EvalCase) {
			c.Expectations[0].AllowedIDs = []string{"a#0", strings.Repeat("e", 257)}
		}, want: `persona "alice": allowedIDs[1] is 257 characters, more than 256`},
		{name: "empty evidence ID", edit: func(c *v1alpha1.EvalCase) { c.Expectations[0].RelevantIDs = []string{""} },
			want: "relevantIDs[0] must not be empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := v1alpha1.EvalCase{ID: "c", Question: "q", Expectations: []v1alpha1.Expectation{
				{Persona: "alice", AllowedIDs: []string{"a#0"}}}}
			tt.edit(&c)
			err := Validate([]v1alpha1.EvalCase{c}, []string{`ConfigMap "cm" key "k"`})
			checkInvalid(t, err, tt.want)
		})
	}
}

// checkInvalid asserts err is nil when want is "", else an InvalidCases
// problem containing want.
func checkInvalid(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("Validate = %v, want nil", err)
		}
		return
	}
	var p *Problem
	if !errors.As(err, &p) || p.Reason != v1alpha1.ReasonInvalidCases || !strings.Contains(p.Message, want) {
		t.Fatalf("Validate = %v, want InvalidCases containing %q", err, want)
	}
}

// caseList builds n valid cases with IDs prefix-0 … prefix-(n-1).
func caseList(prefix string, n int) []v1alpha1.EvalCase {
	out := make([]v1alpha1.EvalCase, n)
	for i := range out {
		out[i] = v1alpha1.EvalCase{ID: fmt.Sprintf("%s-%d", prefix, i), Question: "q",
			Expectations: []v1alpha1.Expectation{{Persona: "alice"}}}
	}
	return out
}

// TestLoadCasesConfigMapLimits loads cases as the controllers do, from
// ConfigMaps, and checks the case-count limits and a CRD bound end to end.
func TestLoadCasesConfigMapLimits(t *testing.T) {
	longStratum := caseList("s", 2)
	longStratum[1].Stratum = strings.Repeat("x", 80)
	tests := []struct {
		name string
		// sources are the ConfigMaps' cases, one ConfigMap each.
		sources [][]v1alpha1.EvalCase
		// inline are spec.cases.
		inline []v1alpha1.EvalCase
		// want is a substring of the InvalidCases message; "" means valid.
		want string
	}{
		{name: "a full list per source", inline: caseList("in", 200),
			sources: [][]v1alpha1.EvalCase{caseList("a", 200), caseList("b", 200)}},
		{name: "one source over the list bound", sources: [][]v1alpha1.EvalCase{caseList("a", 10), caseList("b", 201)},
			want: `ConfigMap "cm-1" key "cases.json" holds 201 cases, more than the 200`},
		{name: "an 80-character stratum", sources: [][]v1alpha1.EvalCase{longStratum},
			want: `case "s-1" in ConfigMap "cm-0" key "cases.json": stratum is 80 characters, more than 63`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, objs := suiteWithSources(t, tt.inline, tt.sources)
			r := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objs...).Build()
			cases, err := LoadCases(context.Background(), r, s)
			checkInvalid(t, err, tt.want)
			if want := len(tt.inline) + sum(tt.sources); err == nil && len(cases) != want {
				t.Errorf("loaded %d cases, want %d", len(cases), want)
			}
		})
	}
}

func sum(lists [][]v1alpha1.EvalCase) int {
	n := 0
	for _, l := range lists {
		n += len(l)
	}
	return n
}

// suiteWithSources builds a suite with the inline cases and one ConfigMap
// per source, named cm-<i>, under the default key.
func suiteWithSources(t *testing.T, inline []v1alpha1.EvalCase, sources [][]v1alpha1.EvalCase) (*v1alpha1.EvalSuite, []client.Object) {
	t.Helper()
	s := &v1alpha1.EvalSuite{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}}
	s.Spec.Cases = inline
	var objs []client.Object
	for i, cases := range sources {
		raw, err := json.Marshal(cases)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("cm-%d", i)
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Data: map[string]string{DefaultCasesKey: string(raw)}})
		s.Spec.CaseSources = append(s.Spec.CaseSources, v1alpha1.CaseSource{ConfigMapRef: v1alpha1.LocalObjectReference{Name: name}})
	}
	return s, objs
}

// TestValidateTotalCaseLimit: the total across sources is bounded even if
// each list is within its own bound.
func TestValidateTotalCaseLimit(t *testing.T) {
	var cases []v1alpha1.EvalCase
	var origins []string
	for src := range maxCaseSources + 2 {
		for _, c := range caseList(fmt.Sprintf("src%d", src), maxCasesPerList) {
			cases = append(cases, c)
			origins = append(origins, fmt.Sprintf("source %d", src))
		}
	}
	checkInvalid(t, Validate(cases[:MaxSuiteCases], origins[:MaxSuiteCases]), "")
	checkInvalid(t, Validate(cases[:MaxSuiteCases+1], origins[:MaxSuiteCases+1]),
		fmt.Sprintf("the suite has %d cases across spec.cases and caseSources, more than the %d allowed", MaxSuiteCases+1, MaxSuiteCases))
}
