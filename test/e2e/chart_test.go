package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	psapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"github.com/ragcanary/ragcanary/internal/dev/testutil/charttest"
	"github.com/ragcanary/ragcanary/internal/manager"
)

const (
	chartDir         = "charts/ragcanary"
	releaseNamespace = "ragcanary-system"
	// prometheusOperatorModule ships the ServiceMonitor and PrometheusRule
	// CRDs; the Go module proxy serves them with the module's source.
	prometheusOperatorModule = "github.com/prometheus-operator/prometheus-operator@v0.85.0"
)

// allToggles turns on every optional part of the chart.
var allToggles = []string{
	"--set", "serviceMonitor.enabled=true",
	"--set", "prometheusRule.enabled=true",
	"--set", "grafanaDashboard.enabled=true",
	"--set", "networkPolicy.enabled=true",
	"--set", "replicaCount=2",
	"--set", "secretNamespaces={team-a,team-b}",
	"--set", "operator.allowedTargetURLs={https://rag.internal/}",
}

// render renders the chart as the e2e release, CRDs included.
func render(t *testing.T, extra ...string) string {
	t.Helper()
	out, err := charttest.Render(env.root, "rc", releaseNamespace, append([]string{"--include-crds"}, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// requiredValues are what an install must set: the target allowlist.
var requiredValues = []string{"--set", "operator.allowedTargetURLs={https://rag.internal/}"}

// TestHelmLint lints the chart with its defaults and with every toggle on.
func TestHelmLint(t *testing.T) {
	for _, args := range [][]string{requiredValues, allToggles, {"--set", "operator.allowAnyTarget=true"}} {
		if out, err := charttest.Helm(env.root, append([]string{"lint", "--strict", chartDir}, args...)...); err != nil {
			t.Errorf("helm lint %v: %v\n%s", args, err, out)
		}
	}
}

// TestChartSchemaRejectsBadValues: values.schema.json turns mistakes into
// errors at install time.
func TestChartSchemaRejectsBadValues(t *testing.T) {
	for _, bad := range [][]string{
		{"--set", "replicaCount=-1"},
		{"--set", "operator.allowedTargetURLs={ftp://x}"},
		// The allowlist is required: without it the operator would not start.
		{},
		{"--set", "operator.allowAnyTarget=false"},
		{"--set", "operator.rateLimit.requestsPerSecond=0"},
		{"--set", "notAValue=true"},
	} {
		if _, err := charttest.Helm(env.root, append([]string{"template", "rc", chartDir}, bad...)...); err == nil {
			t.Errorf("helm template %v succeeded; want a schema error", bad)
		}
	}
}

// TestChartAppliesToControlPlane applies the rendered chart, every toggle on,
// with a server-side dry run against the local control plane.
func TestChartAppliesToControlPlane(t *testing.T) {
	installMonitoringCRDs(t)
	for _, ns := range []string{releaseNamespace, "team-a", "team-b"} {
		ensureNamespace(t, ns)
	}
	manifest := render(t, allToggles...)
	out := kubectl(t, strings.NewReader(manifest), "apply", "--dry-run=server", "-f", "-")
	for _, kind := range []string{"deployment.apps/rc-ragcanary", "servicemonitor.monitoring.coreos.com/rc-ragcanary",
		"prometheusrule.monitoring.coreos.com/rc-ragcanary", "configmap/rc-ragcanary-dashboard", "networkpolicy.networking.k8s.io/rc-ragcanary"} {
		if !strings.Contains(out, kind) {
			t.Errorf("dry-run output does not mention %s:\n%s", kind, out)
		}
	}
}

// TestChartPodIsRestricted evaluates the rendered pod template with the
// Kubernetes Pod Security Standards checks at the restricted level, and the
// hardening the restricted profile does not itself require.
func TestChartPodIsRestricted(t *testing.T) {
	dep := renderedDeployment(t)
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	results := evaluator.EvaluatePod(psapi.LevelVersion{Level: psapi.LevelRestricted, Version: psapi.LatestVersion()},
		&dep.Spec.Template.ObjectMeta, &dep.Spec.Template.Spec)
	if agg := policy.AggregateCheckResults(results); !agg.Allowed {
		t.Errorf("pod violates the restricted profile: %s", agg.ForbiddenDetail())
	}
	for _, c := range dep.Spec.Template.Spec.Containers {
		sc := c.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("container %s: root filesystem is writable", c.Name)
		}
	}
}

// TestChartBundlesGeneratedFiles: the chart ships exactly the CRDs and RBAC
// rules generated from the API and controller markers.
func TestChartBundlesGeneratedFiles(t *testing.T) {
	for src, dst := range map[string]string{"config/rbac/role.yaml": "charts/ragcanary/files/role.yaml"} {
		assertSameFile(t, src, dst)
	}
	crds, _ := filepath.Glob(filepath.Join(env.root, "config/crd/bases/*.yaml"))
	if len(crds) != 6 {
		t.Fatalf("found %d CRDs in config/crd/bases, want 6", len(crds))
	}
	for _, c := range crds {
		assertSameFile(t, filepath.Join("config/crd/bases", filepath.Base(c)), filepath.Join("charts/ragcanary/crds", filepath.Base(c)))
	}
}

func assertSameFile(t *testing.T, a, b string) {
	t.Helper()
	da, errA := os.ReadFile(filepath.Join(env.root, a))
	db, errB := os.ReadFile(filepath.Join(env.root, b))
	if errA != nil || errB != nil || !bytes.Equal(da, db) {
		t.Errorf("%s and %s differ (run 'make manifests')", a, b)
	}
}

func renderedDeployment(t *testing.T) *appsv1.Deployment {
	t.Helper()
	obj := object(t, renderedObjects(t, allToggles...), "Deployment", "")
	raw, _ := json.Marshal(obj.Object)
	var dep appsv1.Deployment
	if err := json.Unmarshal(raw, &dep); err != nil {
		t.Fatal(err)
	}
	return &dep
}

// installMonitoringCRDs installs the ServiceMonitor and PrometheusRule CRDs
// from the prometheus-operator module, fetched through the Go module proxy.
func installMonitoringCRDs(t *testing.T) {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", prometheusOperatorModule).Output()
	if err != nil {
		t.Fatalf("go mod download %s: %v", prometheusOperatorModule, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download %s: no module directory (%v)", prometheusOperatorModule, err)
	}
	for _, crd := range []string{"monitoring.coreos.com_servicemonitors.yaml", "monitoring.coreos.com_prometheusrules.yaml"} {
		kubectl(t, nil, "apply", "--server-side", "-f", filepath.Join(mod.Dir, "example/prometheus-operator-crd", crd))
	}
	kubectl(t, nil, "wait", "--for=condition=Established", "--timeout=60s",
		"crd/servicemonitors.monitoring.coreos.com", "crd/prometheusrules.monitoring.coreos.com")
}

func kubectl(t *testing.T, stdin io.Reader, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(env.root, "bin/kubectl"), append([]string{"--kubeconfig", env.kubeconfig}, args...)...)
	cmd.Stdin = stdin
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// ensureNamespace creates ns unless it exists (the test may run again in
// the same process).
func ensureNamespace(t *testing.T, ns string) {
	t.Helper()
	err := env.client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
}

// TestChartPassesTargetAddressRanges: the address ranges reach the
// manager's flags, and the schema refuses what is not a CIDR.
func TestChartPassesTargetAddressRanges(t *testing.T) {
	out := render(t, append(requiredValues,
		"--set", "operator.deniedTargetCIDRs={169.254.0.0/16,10.0.0.0/8}",
		"--set", "operator.allowedTargetCIDRs={10.1.0.0/16}")...)
	for _, want := range []string{"--denied-target-cidrs=169.254.0.0/16,10.0.0.0/8", "--allowed-target-cidrs=10.1.0.0/16"} {
		if !strings.Contains(out, want) {
			t.Errorf("the rendered chart does not pass %s", want)
		}
	}
	if strings.Contains(render(t, requiredValues...), "target-cidrs") {
		t.Error("the defaults render a CIDR flag; the manager's own defaults should apply")
	}
	if _, err := charttest.Helm(env.root, append([]string{"template", "rc", chartDir, "--set", "operator.deniedTargetCIDRs={metadata}"}, requiredValues...)...); err == nil {
		t.Error("a denied range that is not a CIDR was accepted")
	}
}

// TestChartScrapesMetricsWithAToken: by default the manager serves metrics
// over TLS, the ServiceMonitor scrapes https with a bearer token on the
// Service's https port, the manager may review tokens and access, and
// scrapers get a metrics-reader ClusterRole; a certificate Secret replaces
// skipping verification with its CA; metrics.secure=false is plain HTTP.
func TestChartScrapesMetricsWithAToken(t *testing.T) {
	monitor := append([]string{"--set", "serviceMonitor.enabled=true"}, requiredValues...)
	objs := renderedObjects(t, monitor...)
	ep := firstEndpoint(t, objs)
	for field, want := range map[string]any{
		"scheme": "https", "port": "https", "bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
	} {
		if got := ep[field]; got != want {
			t.Errorf("ServiceMonitor endpoint %s = %v, want %v", field, got, want)
		}
	}
	if skip, _, _ := unstructured.NestedBool(ep, "tlsConfig", "insecureSkipVerify"); !skip {
		t.Error("the ServiceMonitor verifies the manager's self-signed certificate and would fail every scrape")
	}
	if name := servicePortName(t, objs); name != "https" {
		t.Errorf("the metrics Service port is named %q, want https", name)
	}
	assertArg(t, objs, "--metrics-secure=true")
	reader := object(t, objs, "ClusterRole", "rc-ragcanary-metrics-reader")
	rules, _, _ := unstructured.NestedSlice(reader.Object, "rules")
	if fmt.Sprint(rules) != fmt.Sprint([]any{map[string]any{"nonResourceURLs": []any{"/metrics"}, "verbs": []any{"get"}}}) {
		t.Errorf("metrics-reader rules = %v, want get on /metrics only", rules)
	}
	managerRules := fmt.Sprint(object(t, objs, "ClusterRole", "rc-ragcanary-manager").Object["rules"])
	for _, want := range []string{"tokenreviews", "subjectaccessreviews"} {
		if !strings.Contains(managerRules, want) {
			t.Errorf("the manager's ClusterRole does not grant %s: %s", want, managerRules)
		}
	}

	withCert := append([]string{"--set", "metrics.certSecret=rc-metrics-tls", "--set", "serviceMonitor.tokenSecret.name=prometheus-token"}, monitor...)
	objs = renderedObjects(t, withCert...)
	ep = firstEndpoint(t, objs)
	if ca, _, _ := unstructured.NestedString(ep, "tlsConfig", "ca", "secret", "name"); ca != "rc-metrics-tls" {
		t.Errorf("with metrics.certSecret the ServiceMonitor verifies against CA Secret %q", ca)
	}
	if skip, _, _ := unstructured.NestedBool(ep, "tlsConfig", "insecureSkipVerify"); skip {
		t.Error("with metrics.certSecret the ServiceMonitor still skips verification")
	}
	if cred, _, _ := unstructured.NestedString(ep, "authorization", "credentials", "name"); cred != "prometheus-token" || ep["bearerTokenFile"] != nil {
		t.Errorf("with serviceMonitor.tokenSecret the endpoint authorization is %v, bearerTokenFile %v", ep["authorization"], ep["bearerTokenFile"])
	}
	assertArg(t, objs, "--metrics-cert-path=/etc/ragcanary/metrics-certs")
	installMonitoringCRDs(t)
	ensureNamespace(t, releaseNamespace)
	kubectl(t, strings.NewReader(render(t, withCert...)), "apply", "--dry-run=server", "-f", "-")

	objs = renderedObjects(t, append([]string{"--set", "metrics.secure=false"}, monitor...)...)
	ep = firstEndpoint(t, objs)
	if ep["scheme"] == "https" || ep["bearerTokenFile"] != nil || ep["port"] != servicePortName(t, objs) {
		t.Errorf("with metrics.secure=false the endpoint is %v", ep)
	}
	assertArg(t, objs, "--metrics-secure=false")
}

// renderedObjects renders the chart as render does and decodes every object.
func renderedObjects(t *testing.T, args ...string) []unstructured.Unstructured {
	t.Helper()
	return charttest.Objects(t, env.root, "rc", releaseNamespace, append([]string{"--include-crds"}, args...)...)
}

func object(t *testing.T, objs []unstructured.Unstructured, kind, name string) unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && (name == "" || o.GetName() == name) {
			return o
		}
	}
	t.Fatalf("the rendered chart has no %s %s", kind, name)
	return unstructured.Unstructured{}
}

func firstEndpoint(t *testing.T, objs []unstructured.Unstructured) map[string]any {
	t.Helper()
	eps, _, _ := unstructured.NestedSlice(object(t, objs, "ServiceMonitor", "").Object, "spec", "endpoints")
	if len(eps) == 0 {
		t.Fatal("the ServiceMonitor has no endpoint")
	}
	return eps[0].(map[string]any)
}

func servicePortName(t *testing.T, objs []unstructured.Unstructured) any {
	t.Helper()
	ports, _, _ := unstructured.NestedSlice(object(t, objs, "Service", "rc-ragcanary-metrics").Object, "spec", "ports")
	if len(ports) != 1 {
		t.Fatalf("the metrics Service has %d ports, want 1", len(ports))
	}
	return ports[0].(map[string]any)["name"]
}

func assertArg(t *testing.T, objs []unstructured.Unstructured, want string) {
	t.Helper()
	containers, _, _ := unstructured.NestedSlice(object(t, objs, "Deployment", "").Object, "spec", "template", "spec", "containers")
	if !strings.Contains(fmt.Sprint(containers), want) {
		t.Errorf("the manager is not started with %s", want)
	}
}

// TestChartSizesTheManagerMemory: the container has a memory limit and the
// manager learns it through the downward API under the name it reads, so
// its Go memory limit follows the container's.
func TestChartSizesTheManagerMemory(t *testing.T) {
	dep := renderedDeployment(t)
	c := dep.Spec.Template.Spec.Containers[0]
	if c.Resources.Limits.Memory().IsZero() {
		t.Fatal("the manager container has no memory limit")
	}
	for _, e := range c.Env {
		if e.Name != manager.MemoryLimitEnv {
			continue
		}
		ref := e.ValueFrom
		if ref == nil || ref.ResourceFieldRef == nil || ref.ResourceFieldRef.Resource != "limits.memory" ||
			ref.ResourceFieldRef.ContainerName != c.Name {
			t.Fatalf("%s is %+v, want the container's limits.memory from the downward API", e.Name, e.ValueFrom)
		}
		return
	}
	t.Errorf("the manager container has no %s", manager.MemoryLimitEnv)
}

// TestChartShardsReplicas: sharding.enabled with two replicas renders a
// Deployment of two that elects a leader and shards, names each replica
// by its Pod, and grants what the shards need: Leases in the release
// namespace (the shard Leases and the leader's), and patch on every
// sharded kind, which carries the owner and drain labels. A replica's
// drain on SIGTERM is bounded below the Pod's grace period. Sharding without
// leader election is refused: nobody would assign the shares.
func TestChartShardsReplicas(t *testing.T) {
	objs := renderedObjects(t, append([]string{"--set", "replicaCount=2", "--set", "sharding.enabled=true"}, requiredValues...)...)
	dep := object(t, objs, "Deployment", "")
	// Decoded YAML numbers may be int64 or float64: compare as text.
	if n, _, _ := unstructured.NestedFieldNoCopy(dep.Object, "spec", "replicas"); fmt.Sprint(n) != "2" {
		t.Errorf("the Deployment has %v replicas, want 2", n)
	}
	assertArg(t, objs, "--sharding=true")
	assertArg(t, objs, "--leader-elect=true")
	assertArg(t, objs, "--leader-election-namespace="+releaseNamespace)
	assertArg(t, objs, "fieldPath:metadata.name")
	// A replica stopped by SIGTERM drains within the Pod's grace period.
	assertArg(t, objs, "--shard-drain-timeout=10s")
	if g, _, _ := unstructured.NestedFieldNoCopy(dep.Object, "spec", "template", "spec", "terminationGracePeriodSeconds"); fmt.Sprint(g) != "30" {
		t.Errorf("the Pod's grace period is %v, want 30", g)
	}
	if _, err := charttest.Helm(env.root, append([]string{"template", "rc", chartDir, "--set", "sharding.enabled=true",
		"--set", "sharding.drainSeconds=20", "--set", "terminationGracePeriodSeconds=20"}, requiredValues...)...); err == nil {
		t.Error("a drain as long as the grace period rendered; want it refused")
	}

	role := object(t, objs, "Role", "rc-ragcanary-leader-election")
	if role.GetNamespace() != releaseNamespace {
		t.Errorf("the Lease Role is in namespace %q, want %s", role.GetNamespace(), releaseNamespace)
	}
	if !grants(role, "coordination.k8s.io", "leases", "get", "list", "watch", "create", "update") {
		t.Errorf("the Lease Role does not let the replicas hold and watch Leases: %v", role.Object["rules"])
	}
	cluster := object(t, objs, "ClusterRole", "rc-ragcanary-manager")
	for _, kind := range []string{"revocationcanaries", "canaryruns", "evalsuites", "suiteruns"} {
		if !grants(cluster, "ragcanary.dev", kind, "get", "list", "watch", "patch") {
			t.Errorf("the manager's ClusterRole cannot read and label %s", kind)
		}
	}

	if _, err := charttest.Helm(env.root, append([]string{"template", "rc", chartDir, "--set", "sharding.enabled=true",
		"--set", "leaderElection.enabled=false"}, requiredValues...)...); err == nil {
		t.Error("sharding without leader election rendered; want it refused")
	}
}

// grants reports whether one of role's rules allows every verb on
// resource in group.
func grants(role unstructured.Unstructured, group, resource string, verbs ...string) bool {
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	for _, r := range rules {
		rule, _ := r.(map[string]any)
		groups, _, _ := unstructured.NestedStringSlice(rule, "apiGroups")
		resources, _, _ := unstructured.NestedStringSlice(rule, "resources")
		allowed, _, _ := unstructured.NestedStringSlice(rule, "verbs")
		if slices.Contains(groups, group) && slices.Contains(resources, resource) && containsAll(allowed, verbs) {
			return true
		}
	}
	return false
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
