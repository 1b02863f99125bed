//go:build cluster

// Package cluster installs ragcanary as an operator on a real one-node
// Kubernetes built here (internal/dev/nodecluster: kubelet, containerd, runc,
// kube-proxy, CoreDNS) from the images make image builds, and checks what
// only a kubelet exercises: the restricted Pod, probes, the chart's RBAC and
// metrics Service, Pod and container death in the middle of a run, leader
// election, an upgrade and an uninstall. make test-cluster runs it (as
// root); the build tag keeps it out of go test ./....
package cluster

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/demo"
	"github.com/ragcanary/ragcanary/internal/dev/image"
	"github.com/ragcanary/ragcanary/internal/dev/nodecluster"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
)

// Where things are installed.
const (
	releaseName      = demo.ReleaseName
	releaseNamespace = demo.ReleaseNamespace
	canaryNamespace  = "canaries"
	leaseName        = "ragcanary.dev"
	// aclSync is ragtarget's --acl-sync-interval (hack/cluster/manifests):
	// a revocation reaches its index at most this long after the request.
	aclSync = 8 * time.Second
	// clusterDir is fixed so a run killed before its teardown is cleaned
	// up by the next (TestMain tears down what it finds there first).
	clusterDir = "/tmp/ragcanary-cluster-test"
	clusterID  = "test"
	// clusterBlock keeps the test's addresses apart from make
	// demo-cluster's (200).
	clusterBlock = 210
)

var env struct {
	root          string
	cluster       *nodecluster.Cluster
	client        client.Client
	managerDigest string
	pauseImage    string
	// startedToReady is the cluster's start until its node was Ready.
	startedToReady time.Duration
}

func TestMain(m *testing.M) {
	logf.SetLogger(logr.Discard())
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cluster tests:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return 1, err
	}
	env.root = root
	if err := nodecluster.Check(filepath.Join(root, "bin")); err != nil {
		return 1, err
	}
	for _, f := range clusterImages() {
		if _, err := os.Stat(f); err != nil {
			return 1, fmt.Errorf("%s missing: run 'make test-cluster', which builds the images", f)
		}
	}
	digest, err := os.ReadFile(filepath.Join(root, "bin", "cluster-test-images", "manager.digest"))
	if err != nil {
		return 1, err
	}
	env.managerDigest = strings.TrimSpace(string(digest))
	version, err := image.ChartAppVersion(root)
	if err != nil {
		return 1, err
	}
	env.pauseImage = image.Pause.Repository + ":" + version
	// A run killed before its teardown left its cluster: remove it first.
	if s, err := nodecluster.LoadState(clusterDir); err == nil {
		if err := nodecluster.Down(context.Background(), s); err != nil {
			return 1, fmt.Errorf("removing the cluster a previous run left: %w", err)
		}
	}
	c, err := startCluster()
	if err != nil {
		return 1, err
	}
	env.cluster = c
	defer func() {
		if env.cluster != nil {
			_ = env.cluster.Stop(context.Background())
		}
	}()
	if err := connect(); err != nil {
		return 1, err
	}
	if err := install(); err != nil {
		return 1, fmt.Errorf("installing: %w (cluster logs in %s/logs until teardown)", err, clusterDir)
	}
	code := m.Run()
	if env.cluster != nil {
		if err := env.cluster.Stop(context.Background()); err != nil {
			return 1, fmt.Errorf("teardown: %w", err)
		}
		env.cluster = nil
	}
	if left := nodecluster.Leftovers(state()); len(left) > 0 {
		return 1, fmt.Errorf("teardown left: %s", strings.Join(left, "; "))
	}
	return code, nil
}

func clusterImages() []string {
	return []string{
		filepath.Join(env.root, "bin", "cluster-test-images", image.Manager.Name+".oci.tar"),
		filepath.Join(env.root, "bin", "cluster-test-images", image.RagTarget.Name+".oci.tar"),
		filepath.Join(env.root, "bin", "cluster-test-images", image.Pause.Name+".oci.tar"),
	}
}

func state() nodecluster.State {
	return nodecluster.State{ID: clusterID, Block: clusterBlock, Dir: clusterDir}
}

func startCluster() (*nodecluster.Cluster, error) {
	ctx := context.Background()
	c, err := nodecluster.Start(ctx, nodecluster.Options{ID: clusterID, Block: clusterBlock, Dir: clusterDir,
		BinDir: filepath.Join(env.root, "bin"), Images: clusterImages(), PauseImage: env.pauseImage})
	if err != nil {
		return nil, err
	}
	if err := c.WaitReady(ctx); err != nil {
		_ = c.Stop(ctx)
		return nil, err
	}
	env.startedToReady = c.Ready.Sub(c.Started)
	fmt.Printf("cluster: started to Ready node in %s\n", env.startedToReady.Round(10*time.Millisecond))
	return c, nil
}

func connect() error {
	cfg, err := env.cluster.RESTConfig()
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	env.client, err = client.New(cfg, client.Options{Scheme: scheme})
	return err
}

// tools runs the repository's kubectl and helm against the cluster.
func tools() demo.Tools {
	return demo.Tools{Root: env.root, Kubeconfig: env.cluster.Kubeconfig, StateDir: clusterDir}
}

// install puts ragtarget, the chart (with a scraper bound to its metrics
// reader role) and the samples on the cluster, as make demo-cluster does.
func install() error {
	if err := tools().InstallOnCluster(context.Background(), canaryNamespace, chartValues()); err != nil {
		return err
	}
	// The first run now, not at the first scheduled time.
	_, err := kubectlErr("-n", canaryNamespace, "annotate", "revocationcanary/"+sampleCanary, "ragcanary.dev/run-now=test-start")
	return err
}

func chartValues() []string {
	return append(demo.ChartValues(env.managerDigest),
		"--set", "metrics.readerSubjects[0].kind=ServiceAccount",
		"--set", "metrics.readerSubjects[0].name="+scraperAccount,
		"--set", "metrics.readerSubjects[0].namespace="+releaseNamespace)
}

func applySamples(ns string) error { return tools().ApplySamples(context.Background(), ns) }

func kubectlErr(args ...string) (string, error) {
	return tools().Kubectl(context.Background(), args...)
}

func kubectlIn(stdin []byte, args ...string) (string, error) {
	return tools().Run(context.Background(), stdin, "kubectl", args...)
}

func helmErr(args ...string) (string, error) { return tools().Helm(context.Background(), args...) }

func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := kubectlErr(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func helm(t *testing.T, args ...string) string {
	t.Helper()
	out, err := helmErr(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// clusterPoll spaces re-checks of a real cluster's state: each asks the
// API server (or runs a command), so they are further apart than
// testutil.PollInterval.
const clusterPoll = 200 * time.Millisecond

// managerPods are the manager's Pods, running or not.
func managerPods(t *testing.T) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := env.client.List(context.Background(), &pods, client.InNamespace(releaseNamespace),
		client.MatchingLabels{"app.kubernetes.io/component": "manager"}); err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

func podReady(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// readyManagers waits until want manager Pods are Ready and returns them.
func readyManagers(t *testing.T, want int, timeout time.Duration) []corev1.Pod {
	t.Helper()
	var ready []corev1.Pod
	testutil.EventuallyEvery(t, timeout, clusterPoll, fmt.Sprintf("%d Ready manager Pods", want), func() error {
		ready = ready[:0]
		pods := managerPods(t)
		for i := range pods {
			if podReady(&pods[i]) {
				ready = append(ready, pods[i])
			}
		}
		if len(ready) != want || len(pods) != want {
			return fmt.Errorf("%d Ready of %d", len(ready), len(pods))
		}
		return nil
	})
	return ready
}

// leader is the Pod holding the leader lease (its identity starts with the
// Pod's name, the hostname).
func leader(t *testing.T) (string, *coordinationv1.Lease) {
	t.Helper()
	var lease coordinationv1.Lease
	if err := env.client.Get(context.Background(), client.ObjectKey{Namespace: releaseNamespace, Name: leaseName}, &lease); err != nil {
		t.Fatalf("leader lease: %v", err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		return "", &lease
	}
	pod, _, _ := strings.Cut(*lease.Spec.HolderIdentity, "_")
	return pod, &lease
}

func deployment(t *testing.T) *appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	if err := env.client.Get(context.Background(), client.ObjectKey{Namespace: releaseNamespace, Name: releaseName + "-ragcanary"}, &d); err != nil {
		t.Fatal(err)
	}
	return &d
}

// call is one request ragtarget logged (--log-level=debug).
type call struct {
	at           time.Time
	method, path string
	remoteIP     string
	status       string
}

// syncLine is ragtarget's debug line for a sync that changed the index.
var syncLine = regexp.MustCompile(`^time=(\S+) level=DEBUG msg="index sync applied" kind=(\S+) began=(\S+) documents=(\S+)`)

// indexed is when a sync of kind that began at or after since changed doc:
// the sync's start and the time it logged, after publishing the change.
func indexed(t *testing.T, kind, doc string, since time.Time) (began, ended time.Time) {
	t.Helper()
	out := kubectl(t, "-n", "ragtarget", "logs", "deployment/ragtarget", "--tail=-1")
	for _, line := range strings.Split(out, "\n") {
		m := syncLine.FindStringSubmatch(line)
		if m == nil || m[2] != kind || !slices.Contains(strings.Split(m[4], ","), doc) {
			continue
		}
		b, err1 := time.Parse(time.RFC3339Nano, m[3])
		e, err2 := time.Parse(time.RFC3339Nano, m[1])
		if err1 != nil || err2 != nil || b.Before(since) {
			continue
		}
		return b, e
	}
	t.Fatalf("ragtarget logged no %s sync of %s after %s", kind, doc, since.Format(time.StampMilli))
	return
}

var callLine = regexp.MustCompile(`^time=(\S+) level=DEBUG msg=call method=(\S+) path=(\S+) remote=(\S+) status=(\d+)`)

// targetCalls are the calls ragtarget logged, read through the API server
// (kubectl logs goes to the kubelet).
func targetCalls(t *testing.T) []call {
	t.Helper()
	out := kubectl(t, "-n", "ragtarget", "logs", "deployment/ragtarget", "--tail=-1")
	var calls []call
	s := bufio.NewScanner(strings.NewReader(out))
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		m := callLine.FindStringSubmatch(s.Text())
		if m == nil {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			continue
		}
		host := m[4]
		if i := strings.LastIndexByte(host, ':'); i > 0 {
			host = host[:i]
		}
		calls = append(calls, call{at: at, method: m[2], path: m[3], remoteIP: host, status: m[5]})
	}
	return calls
}
