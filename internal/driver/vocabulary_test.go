package driver_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/contract"
)

// root is the repository root, from this package's directory.
var root = filepath.Join("..", "..")

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// contractMethods is the RevocationMethod enum of the driver contract.
func contractMethods(t *testing.T) []string {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Enum []string `json:"enum"`
			} `json:"schemas"`
		} `json:"components"`
	}
	readYAML(t, "api/contract/driver.v1.yaml", &doc)
	enum := doc.Components.Schemas["RevocationMethod"].Enum
	if len(enum) == 0 {
		t.Fatal("the contract defines no RevocationMethod enum")
	}
	return enum
}

// crdEnums collects every enum of a property named name in a CRD's
// schema, wherever it sits.
func crdEnums(t *testing.T, path, name string) [][]string {
	var crd map[string]any
	readYAML(t, path, &crd)
	var out [][]string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if props, ok := x["properties"].(map[string]any); ok {
				if p, ok := props[name].(map[string]any); ok {
					if enum, ok := p["enum"].([]any); ok {
						var e []string
						for _, s := range enum {
							e = append(e, s.(string))
						}
						out = append(out, e)
					}
				}
			}
			for k, c := range x {
				// A search surface's method, and a REST source request's,
				// is an HTTP method, not a revocation method.
				if k == "surfaces" || k == "rest" {
					continue
				}
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(crd)
	return out
}

// TestRevocationMethodsAreTheContracts walks the contract's enum: the Go
// vocabulary, the generated contract client and every CRD field naming a
// method list exactly those words (the CRDs with the operator's own
// methods after them), so a method added to the contract
// fails here until it exists everywhere.
func TestRevocationMethodsAreTheContracts(t *testing.T) {
	want := contractMethods(t)
	var goNames []string
	for _, m := range v1alpha1.RevocationMethods {
		goNames = append(goNames, string(m))
	}
	if !slices.Equal(goNames, want) {
		t.Errorf("v1alpha1.RevocationMethods = %v, the contract's enum is %v", goNames, want)
	}
	for _, m := range want {
		if !contract.RevocationMethod(m).Valid() {
			t.Errorf("the generated contract client does not know %q: run make generate", m)
		}
	}
	if contract.RevocationMethod("Teleport").Valid() {
		t.Error("the generated client accepts a method the contract does not define")
	}
	// A canary may also name the methods the operator makes itself; no
	// driver reports those (the door refuses a method outside the
	// contract's), and the contract does not define them.
	canary := slices.Clone(want)
	for _, m := range v1alpha1.OperatorRevocationMethods {
		if slices.Contains(want, string(m)) {
			t.Errorf("operator method %s is in the contract's enum", m)
		}
		canary = append(canary, string(m))
	}
	for _, crd := range []string{"ragcanary.dev_revocationcanaries.yaml", "ragcanary.dev_canaryruns.yaml", "ragcanary.dev_corpora.yaml"} {
		for _, name := range []string{"method", "revocationMethods"} {
			for _, enum := range crdEnums(t, filepath.Join("config", "crd", "bases", crd), name) {
				if !slices.Equal(enum, canary) {
					t.Errorf("%s: %s enum %v, want the contract's and the operator's %v", crd, name, enum, canary)
				}
			}
		}
	}
	if n := len(crdEnums(t, "config/crd/bases/ragcanary.dev_revocationcanaries.yaml", "method")); n == 0 {
		t.Error("found no method enum in the RevocationCanary CRD: the walk is broken")
	}
}
