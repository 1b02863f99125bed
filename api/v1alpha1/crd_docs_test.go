package v1alpha1_test

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// TestEveryFieldIsDocumented walks the generated CRDs: every field of every
// kind must carry a description, because 'kubectl explain' is how users
// learn the API.
func TestEveryFieldIsDocumented(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) != 6 {
		t.Fatalf("want the 6 generated CRDs, found %d (%v)", len(files), err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, v := range crd.Spec.Versions {
			root := *v.Schema.OpenAPIV3Schema
			// The API server publishes metadata as ObjectMeta with its own
			// documentation; the CRD schema only says it is an object.
			delete(root.Properties, "metadata")
			var missing []string
			undocumented(root, crd.Spec.Names.Kind, &missing)
			sort.Strings(missing)
			for _, m := range missing {
				t.Errorf("%s has no description: add a doc comment to the Go field", m)
			}
		}
	}
}

// undocumented collects the paths of properties without a description.
func undocumented(s apiextensionsv1.JSONSchemaProps, path string, missing *[]string) {
	for name, p := range s.Properties {
		child := path + "." + name
		if p.Description == "" {
			*missing = append(*missing, child)
		}
		undocumented(p, child, missing)
	}
	if s.Items != nil && s.Items.Schema != nil {
		undocumented(*s.Items.Schema, path+"[]", missing)
	}
}
