// Package charttest renders the project's Helm chart for tests with the
// repository's bin/helm, so every test that reads the chart's manifest
// (RBAC, metrics, the e2e install) renders and decodes it one way.
package charttest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// ChartDir is the chart's folder below the repository root.
const ChartDir = "charts/ragcanary"

// Helm runs root's bin/helm (built by 'make test') with args in root,
// returning what it wrote; an error carries its output.
func Helm(root string, args ...string) (string, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	cmd := exec.Command(filepath.Join(abs, "bin", "helm"), args...)
	cmd.Dir = abs
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("helm %s (bin/helm is built by 'make test'): %w: %s", args[0], err,
			strings.TrimSpace(stderr.String()+"\n"+out.String()))
	}
	return out.String(), nil
}

// Render renders the chart as release in namespace, args adding values.
func Render(root, release, namespace string, args ...string) (string, error) {
	return Helm(root, append([]string{"template", release, ChartDir, "--namespace", namespace}, args...)...)
}

// Decode splits a manifest into its objects, leaving out empty documents.
func Decode(manifest string) ([]unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	var objs []unstructured.Unstructured
	for {
		var obj unstructured.Unstructured
		err := dec.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decoding the rendered chart: %w", err)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}

// RenderObjects renders the chart as Render does and decodes it.
func RenderObjects(root, release, namespace string, args ...string) ([]unstructured.Unstructured, error) {
	out, err := Render(root, release, namespace, args...)
	if err != nil {
		return nil, err
	}
	return Decode(out)
}

// MetricsReader are the values that let an install render (a target
// allowlist) and bind the chart's metrics-reader ClusterRole to the
// ServiceAccount namespace/name, as a cluster's Prometheus is bound.
func MetricsReader(namespace, name string) []string {
	return []string{"--set", "operator.allowedTargetURLs={https://rag.internal/}",
		"--set", "metrics.readerSubjects[0].kind=ServiceAccount",
		"--set", "metrics.readerSubjects[0].name=" + name,
		"--set", "metrics.readerSubjects[0].namespace=" + namespace}
}

// Objects renders the chart and decodes it, failing t on an error.
func Objects(t testing.TB, root, release, namespace string, args ...string) []unstructured.Unstructured {
	t.Helper()
	objs, err := RenderObjects(root, release, namespace, args...)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}
