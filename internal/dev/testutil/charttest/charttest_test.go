package charttest_test

import (
	"path/filepath"
	"testing"

	"github.com/ragcanary/ragcanary/internal/dev/testutil/charttest"
)

var root = filepath.Join("..", "..", "..", "..")

// Decode keeps every object in order and leaves out empty documents,
// which helm writes for templates a value switched off.
func TestDecodeLeavesOutEmptyDocuments(t *testing.T) {
	objs, err := charttest.Decode("---\nkind: A\nmetadata: {name: a}\n---\n# switched off\n---\nkind: B\nmetadata: {name: b}\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs[0].GetKind() != "A" || objs[1].GetName() != "b" {
		t.Fatalf("decoded %v, want A/a then B/b", objs)
	}
}

// The chart renders into the namespace asked for, through bin/helm.
func TestObjectsRenderTheChart(t *testing.T) {
	objs := charttest.Objects(t, root, "rc", "chart-ns", "--set", "operator.allowedTargetURLs={https://rag.internal/}")
	var deployments int
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			deployments++
			if o.GetNamespace() != "chart-ns" {
				t.Errorf("Deployment in namespace %q, want chart-ns", o.GetNamespace())
			}
		}
	}
	if deployments != 1 {
		t.Fatalf("%d Deployments rendered, want 1", deployments)
	}
}
