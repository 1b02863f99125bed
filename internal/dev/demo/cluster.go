package demo

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// What InstallOnCluster puts on a one-node cluster (internal/dev/nodecluster),
// as a user following the README would: ragtarget as a Deployment and
// Service, the chart from the image make image built, the samples.
const (
	ReleaseName      = "rc"
	ReleaseNamespace = "ragcanary-system"
	// TargetURL is ragtarget's Service, by the name CoreDNS answers for it.
	TargetURL = "http://ragtarget.ragtarget.svc.cluster.local:8089"
	// RagtargetManifest is ragtarget's Deployment and Service.
	RagtargetManifest = "hack/cluster/manifests/ragtarget.yaml"
)

// ClusterSamples are the samples applied to a cluster's canary namespace,
// the corpus pointed at TargetURL.
var ClusterSamples = []string{
	"config/samples/ragcanary_v1alpha1_corpus.yaml",
	"config/samples/ragcanary_v1alpha1_persona.yaml",
	"config/samples/ragcanary_v1alpha1_revocationcanary.yaml",
	"config/samples/ragcanary_v1alpha1_corpus_surfaces.yaml",
	"config/samples/ragcanary_v1alpha1_evalsuite.yaml",
}

// Tools runs bin/kubectl and bin/helm of the repository at Root against
// Kubeconfig; helm keeps its cache and configuration in StateDir.
type Tools struct {
	Root, Kubeconfig, StateDir string
}

// Run runs bin/<name> and returns its combined output; a failure's error
// carries the output.
func (t Tools) Run(ctx context.Context, stdin []byte, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(t.Root, "bin", name), args...)
	helmHome := filepath.Join(t.StateDir, "helm")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+t.Kubeconfig,
		"HELM_CACHE_HOME="+helmHome, "HELM_CONFIG_HOME="+helmHome, "HELM_DATA_HOME="+helmHome)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// Kubectl runs bin/kubectl.
func (t Tools) Kubectl(ctx context.Context, args ...string) (string, error) {
	return t.Run(ctx, nil, "kubectl", args...)
}

// Helm runs bin/helm.
func (t Tools) Helm(ctx context.Context, args ...string) (string, error) {
	return t.Run(ctx, nil, "helm", args...)
}

// ChartValues install the manager image by its digest, never pulled,
// allowed to call ragtarget's Service by name.
func ChartValues(managerDigest string) []string {
	return []string{
		"--set", "image.digest=" + managerDigest,
		"--set", "image.pullPolicy=Never",
		"--set", "operator.allowedTargetURLs={" + TargetURL + "}",
	}
}

// InstallOnCluster deploys ragtarget, installs the chart into a namespace
// whose Pods the admission holds to the restricted profile, waits until
// both are available and applies the samples into samplesNamespace.
func (t Tools) InstallOnCluster(ctx context.Context, samplesNamespace string, values []string) error {
	steps := [][]string{
		{"kubectl", "apply", "-f", filepath.Join(t.Root, RagtargetManifest)},
		{"kubectl", "create", "namespace", ReleaseNamespace},
		{"kubectl", "label", "namespace", ReleaseNamespace, "pod-security.kubernetes.io/enforce=restricted"},
		append([]string{"helm", "install", ReleaseName, filepath.Join(t.Root, "charts", "ragcanary"), "-n", ReleaseNamespace}, values...),
		{"kubectl", "-n", "ragtarget", "wait", "--for=condition=Available", "deployment/ragtarget", "--timeout=180s"},
		{"kubectl", "-n", ReleaseNamespace, "wait", "--for=condition=Available", "deployment/" + ReleaseName + "-ragcanary", "--timeout=180s"},
	}
	for _, s := range steps {
		if _, err := t.Run(ctx, nil, s[0], s[1:]...); err != nil {
			return err
		}
	}
	return t.ApplySamples(ctx, samplesNamespace)
}

// ApplySamples creates ns and applies ClusterSamples into it.
func (t Tools) ApplySamples(ctx context.Context, ns string) error {
	if _, err := t.Kubectl(ctx, "create", "namespace", ns); err != nil {
		return err
	}
	for _, f := range ClusterSamples {
		data, err := os.ReadFile(filepath.Join(t.Root, f))
		if err != nil {
			return err
		}
		data = bytes.ReplaceAll(data, []byte("http://127.0.0.1:8089"), []byte(TargetURL))
		if _, err := t.Run(ctx, data, "kubectl", "apply", "-n", ns, "-f", "-"); err != nil {
			return err
		}
	}
	return nil
}

// RagtargetURL is ragtarget's Service as the host reaches it: its
// ClusterIP, through the cluster's route and kube-proxy.
func (t Tools) RagtargetURL(ctx context.Context) (string, error) {
	ip, err := t.Kubectl(ctx, "-n", "ragtarget", "get", "service", "ragtarget", "-o", "jsonpath={.spec.clusterIP}")
	if err != nil {
		return "", err
	}
	return "http://" + net.JoinHostPort(strings.TrimSpace(ip), "8089"), nil
}
