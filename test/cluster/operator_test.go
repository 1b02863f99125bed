//go:build cluster

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/nodecluster"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/driver"
	httpdriver "github.com/ragcanary/ragcanary/internal/driver/http"
)

const (
	sampleCanary = "alice-grant-revocation"
	// scraperAccount is the ServiceAccount Prometheus scrapes with; the
	// chart binds it to the metrics reader role (chartValues).
	scraperAccount = "scraper"
	sourceToken    = "demo-source-token"
	runTimeout     = 4 * time.Minute
)

// The manager's Pod passes the restricted admission, runs the image make
// test-cluster built (by digest), as uid 65532 on a read-only root filesystem, and
// its probes pass.
func TestManagerPodRunsRestricted(t *testing.T) {
	pod := readyManagers(t, 1, 2*time.Minute)[0]
	st := pod.Status.ContainerStatuses[0]
	if !strings.Contains(st.ImageID, env.managerDigest) && !strings.Contains(st.Image, env.managerDigest) {
		t.Errorf("manager runs image %s (%s), want the digest make test-cluster wrote, %s", st.Image, st.ImageID, env.managerDigest)
	}
	pid := containerPID(t, st.ContainerID)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	if uid := field(string(status), "Uid:"); !strings.HasPrefix(uid, "65532\t65532") {
		t.Errorf("the manager's process runs as uid %q, want 65532", uid)
	}
	if opts := rootMountOptions(t, pid); !strings.HasPrefix(opts, "ro,") && opts != "ro" {
		t.Errorf("the manager's root filesystem is mounted %q, want read-only", opts)
	}
	// The namespace's label is enforced by the real admission: a Pod with
	// no securityContext (root allowed, privilege escalation, every
	// capability) is refused there.
	out, err := kubectlErr("-n", releaseNamespace, "run", "unrestricted", "--image=ragcanary/ragtarget:0.1.0",
		"--image-pull-policy=Never", "--restart=Never")
	if err == nil || !strings.Contains(out, `violates PodSecurity "restricted`) {
		t.Errorf("an unrestricted Pod in %s: %v %s, want refused by PodSecurity", releaseNamespace, err, out)
	}
	t.Logf("manager Pod %s Ready on image %s, pid %d uid 65532, root read-only", pod.Name, st.ImageID, pid)
}

// The sample canary, run by the operator's Pod against ragtarget's Pod
// through the Service's DNS name, meets its SLO with bounds that contain the
// lag ragtarget is configured with.
func TestCanaryReachesSLOMet(t *testing.T) {
	var canary v1alpha1.RevocationCanary
	testutil.EventuallyEvery(t, runTimeout, clusterPoll, "the sample canary's first verdict", func() error {
		if err := env.client.Get(context.Background(), client.ObjectKey{Namespace: canaryNamespace, Name: sampleCanary}, &canary); err != nil {
			return err
		}
		if canary.Status.LastRun == nil || canary.Status.LastRun.Verdict == "" {
			return fmt.Errorf("no run finished")
		}
		return nil
	})
	if canary.Status.LastRun.Verdict != v1alpha1.VerdictSLOMet {
		t.Fatalf("the sample canary's run %s: verdict %s, want SLOMet", canary.Status.LastRun.Name, canary.Status.LastRun.Verdict)
	}
	run := getRun(t, canaryNamespace, canary.Status.LastRun.Name)
	lower, upper, truth := assertBoundsContainTruth(t, run)
	t.Logf("run %s: SLOMet, search exclusion bounds [%s, %s]; ragtarget indexed the revocation %s after the request (ACL sync every %s)",
		run.Name, lower, upper, truth, aclSync)
}

// A real Prometheus outside the cluster scrapes /metrics through the
// chart's metrics Service (its ClusterIP, through kube-proxy), with a
// ServiceAccount token the chart's reader role admits, and finds the run's
// series.
func TestMetricsThroughTheService(t *testing.T) {
	kubectl(t, "-n", releaseNamespace, "create", "serviceaccount", scraperAccount)
	token := strings.TrimSpace(kubectl(t, "-n", releaseNamespace, "create", "token", scraperAccount, "--duration=1h"))
	var svc corev1.Service
	if err := env.client.Get(context.Background(), client.ObjectKey{Namespace: releaseNamespace, Name: releaseName + "-ragcanary-metrics"}, &svc); err != nil {
		t.Fatal(err)
	}
	target := net.JoinHostPort(svc.Spec.ClusterIP, fmt.Sprint(svc.Spec.Ports[0].Port))
	prom := startPrometheus(t, target, token)
	query := fmt.Sprintf(`ragcanary_runs_total{namespace=%q,canary=%q}`, canaryNamespace, sampleCanary)
	testutil.EventuallyEvery(t, 2*time.Minute, clusterPoll, "the run's series scraped through the Service", func() error {
		n, err := promCount(prom, query)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("no series for %s yet", query)
		}
		return nil
	})
	if n, err := promCount(prom, `up{job="ragcanary"} == 1`); err != nil || n != 1 {
		t.Errorf("the scrape target is not up: %d series, %v", n, err)
	}
	t.Logf("Prometheus on the host scraped %s (the metrics Service) and found %s", target, query)
}

// Pod death in the middle of a run: with the run waiting for exclusion, the
// manager's Pod is deleted at once (--grace-period=0 --force) and, in a
// second run, its container is killed by the runtime. Each time the
// replacement resumes the run, its bounds still contain the configured lag,
// and ragtarget keeps no canary document.
func TestPodDeathMidRun(t *testing.T) {
	suspendSampleCanary(t, true)
	t.Cleanup(func() { suspendSampleCanary(t, false) })
	for _, how := range []string{"pod deleted", "container killed"} {
		t.Run(strings.ReplaceAll(how, " ", "-"), func(t *testing.T) {
			old := readyManagers(t, 1, 2*time.Minute)[0]
			run := startRun(t, "death-"+strings.Fields(how)[0])
			waitPhase(t, run, v1alpha1.PhaseAwaitingExclusion)
			pid := containerPID(t, old.Status.ContainerStatuses[0].ContainerID)
			killedAt := time.Now()
			if how == "pod deleted" {
				kubectl(t, "-n", releaseNamespace, "delete", "pod", old.Name, "--grace-period=0", "--force")
			} else {
				if _, err := env.cluster.Ctr(context.Background(), "tasks", "kill", "--signal", "SIGKILL", containerIDOf(old.Status.ContainerStatuses[0].ContainerID)); err != nil {
					t.Fatal(err)
				}
			}
			testutil.EventuallyEvery(t, time.Minute, clusterPoll, "the killed manager process gone", func() error {
				if syscall.Kill(pid, 0) == nil {
					return fmt.Errorf("pid %d still alive", pid)
				}
				return nil
			})
			before := getRun(t, canaryNamespace, run).ResourceVersion
			var resumed time.Duration
			testutil.EventuallyEvery(t, 2*time.Minute, clusterPoll, "the run written by the replacement manager", func() error {
				if getRun(t, canaryNamespace, run).ResourceVersion == before {
					return fmt.Errorf("not yet")
				}
				resumed = time.Since(killedAt)
				return nil
			})
			done := waitRunDone(t, run)
			lower, upper, truth := assertBoundsContainTruth(t, done)
			assertDocumentGone(t, done)
			t.Logf("%s at phase AwaitingExclusion; run resumed %s after the kill; finished %s verdict %s; bounds [%s, %s], revocation indexed at %s",
				how, resumed.Round(100*time.Millisecond), done.Status.Phase, done.Status.Verdict, lower, upper, truth)
		})
	}
}

// Two replicas: killing the leader (its Pod deleted at once) hands the
// lease to another replica — the standby, or the Pod replacing the leader if
// it asks first — which finishes the run. ragtarget's log shows no replica
// called it before the leader was killed or while it still did, so no run
// was probed by two Pods at once.
func TestLeaderElectionHandover(t *testing.T) {
	suspendSampleCanary(t, true)
	t.Cleanup(func() { suspendSampleCanary(t, false) })
	helm(t, "upgrade", releaseName, filepath.Join(env.root, "charts", "ragcanary"), "-n", releaseNamespace, "--reuse-values", "--set", "replicaCount=2")
	pods := readyManagers(t, 2, 3*time.Minute)
	var old string
	testutil.EventuallyEvery(t, time.Minute, clusterPoll, "a leader among the two Pods", func() error {
		name, _ := leader(t)
		for _, p := range pods {
			if p.Name == name {
				old = name
				return nil
			}
		}
		return fmt.Errorf("lease held by %q", name)
	})
	ips := map[string]string{}
	for _, p := range pods {
		ips[p.Name] = p.Status.PodIP
	}
	run := startRun(t, "handover")
	waitPhase(t, run, v1alpha1.PhaseAwaitingExclusion)
	killedAt := time.Now()
	kubectl(t, "-n", releaseNamespace, "delete", "pod", old, "--grace-period=0", "--force")
	var gap time.Duration
	var next string
	testutil.EventuallyEvery(t, time.Minute, clusterPoll, "another Pod holding the lease", func() error {
		name, _ := leader(t)
		if name == "" || name == old {
			return fmt.Errorf("lease held by %q", name)
		}
		next, gap = name, time.Since(killedAt)
		return nil
	})
	done := waitRunDone(t, run)
	lower, upper, _ := assertBoundsContainTruth(t, done)
	for _, p := range managerPods(t) {
		ips[p.Name] = p.Status.PodIP
	}
	var lastOld, firstNew time.Time
	others := 0
	for _, c := range targetCalls(t) {
		switch c.remoteIP {
		case ips[old]:
			lastOld = c.at
		case ips[next]:
			if firstNew.IsZero() {
				firstNew = c.at
			}
		default:
			for name, ip := range ips {
				if name != old && name != next && ip == c.remoteIP && !c.at.Before(killedAt.Add(-time.Minute)) {
					others++
				}
			}
		}
	}
	if firstNew.IsZero() {
		t.Fatalf("the new leader %s (%s) never called ragtarget", next, ips[next])
	}
	if !firstNew.After(lastOld) || firstNew.Before(killedAt) {
		t.Errorf("two Pods called ragtarget: the old leader last at %s, the new one first at %s (killed at %s)",
			lastOld.Format(time.StampMilli), firstNew.Format(time.StampMilli), killedAt.Format(time.StampMilli))
	}
	if others > 0 {
		t.Errorf("%d calls from a manager Pod that never held the lease", others)
	}
	role := "the standby"
	if _, was := ips[next]; !was || !podIn(pods, next) {
		role = "the leader's replacement Pod"
	}
	names := []string{}
	for _, p := range pods {
		names = append(names, p.Name)
	}
	_, lease := leader(t)
	t.Logf("replicas before the kill %v; lease acquired %s, %d transitions", names, lease.Spec.AcquireTime.Format(time.StampMilli), *lease.Spec.LeaseTransitions)
	t.Logf("leader %s killed; %s %s took the lease %s later; its first call to ragtarget %s after the old leader's last; run %s %s bounds [%s, %s]",
		old, role, next, gap.Round(100*time.Millisecond), firstNew.Sub(lastOld).Round(time.Millisecond), done.Status.Phase, done.Status.Verdict, lower, upper)
}

func podIn(pods []corev1.Pod, name string) bool {
	for _, p := range pods {
		if p.Name == name {
			return true
		}
	}
	return false
}

// helm upgrade changing a flag rolls the Deployment; the run in progress
// finishes once, with one canary document planted for it.
func TestUpgradeKeepsTheRun(t *testing.T) {
	suspendSampleCanary(t, true)
	t.Cleanup(func() { suspendSampleCanary(t, false) })
	before := deployment(t).Generation
	run := startRun(t, "upgrade")
	created := time.Now()
	waitPhase(t, run, v1alpha1.PhaseAwaitingExclusion)
	helm(t, "upgrade", releaseName, filepath.Join(env.root, "charts", "ragcanary"), "-n", releaseNamespace, "--reuse-values", "--set", "operator.logLevel=debug")
	testutil.EventuallyEvery(t, 3*time.Minute, clusterPoll, "the upgraded Deployment rolled out", func() error {
		d := deployment(t)
		if d.Generation == before || d.Status.ObservedGeneration < d.Generation {
			return fmt.Errorf("generation %d observed %d", d.Generation, d.Status.ObservedGeneration)
		}
		want := *d.Spec.Replicas
		if d.Status.UpdatedReplicas != want || d.Status.ReadyReplicas != want || d.Status.Replicas != want {
			return fmt.Errorf("updated %d ready %d of %d", d.Status.UpdatedReplicas, d.Status.ReadyReplicas, d.Status.Replicas)
		}
		// The old Pods are gone, not only outnumbered.
		for _, p := range managerPods(t) {
			if !strings.Contains(strings.Join(p.Spec.Containers[0].Args, " "), "--zap-log-level=debug") {
				return fmt.Errorf("Pod %s still runs the old arguments", p.Name)
			}
		}
		return nil
	})
	done := waitRunDone(t, run)
	if done.Status.Verdict == "" {
		t.Errorf("run %s finished without a verdict: %s", run, done.Status.Message)
	}
	// Every document planted meanwhile belongs to a run that says so (the
	// sample canary's run started before it was suspended may be one); a
	// run planted twice would leave a document no run names.
	var runs v1alpha1.CanaryRunList
	if err := env.client.List(context.Background(), &runs, client.InNamespace(canaryNamespace)); err != nil {
		t.Fatal(err)
	}
	owner := map[string]string{}
	for _, r := range runs.Items {
		owner[r.Status.DocumentID] = r.Name
	}
	ours := 0
	for _, c := range targetCalls(t) {
		if c.method != http.MethodPut || !c.at.After(created.Add(-time.Second)) || strings.Count(c.path, "/") != 3 || !strings.HasPrefix(c.path, "/v1/documents/") {
			continue
		}
		doc := strings.TrimPrefix(c.path, "/v1/documents/")
		switch owner[doc] {
		case "":
			t.Errorf("document %s planted during the run belongs to no run", doc)
		case run:
			ours++
		}
	}
	if ours == 0 {
		t.Errorf("no document planted for run %s (%s) in ragtarget's log", run, done.Status.DocumentID)
	}
	assertDocumentGone(t, done)
	t.Logf("upgrade rolled %d Pods during the run's exclusion wait; run %s %s, one document", *deployment(t).Spec.Replicas, done.Status.Phase, done.Status.Verdict)
}

// The documented uninstall order — custom resources first, then the release
// — leaves no finalizer holding a namespace. With the operator removed
// first, a namespace with a run stays Terminating until the documented
// commands release the finalizers.
func TestUninstall(t *testing.T) {
	const orphans = "canaries-orphaned"
	if err := applySamples(orphans); err != nil {
		t.Fatal(err)
	}
	run := startRunIn(t, orphans, "orphan")
	waitPhaseIn(t, orphans, run, v1alpha1.PhaseAwaitingVisibility, v1alpha1.PhaseAwaitingExclusion)

	// The documented order for canaryNamespace: its runs and canaries
	// first, then the release, then the namespace.
	kubectl(t, "-n", canaryNamespace, "delete", "revocationcanaries,canaryruns,suiteruns,evalsuites", "--all", "--wait=true", "--timeout=180s")
	helm(t, "uninstall", releaseName, "-n", releaseNamespace, "--wait", "--timeout=120s")
	testutil.EventuallyEvery(t, time.Minute, clusterPoll, "the manager Pods gone", func() error {
		if n := len(managerPods(t)); n > 0 {
			return fmt.Errorf("%d left", n)
		}
		return nil
	})
	kubectl(t, "delete", "namespace", canaryNamespace, "--wait=false")
	waitNamespaceGone(t, canaryNamespace)

	// The operator gone first: the namespace with a live run is held.
	kubectl(t, "delete", "namespace", orphans, "--wait=false")
	testutil.EventuallyEvery(t, 2*time.Minute, clusterPoll, "the orphaned namespace held by finalizers", func() error {
		var ns corev1.Namespace
		if err := env.client.Get(context.Background(), client.ObjectKey{Name: orphans}, &ns); err != nil {
			return err
		}
		for _, c := range ns.Status.Conditions {
			if c.Type == corev1.NamespaceFinalizersRemaining && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("conditions %+v", ns.Status.Conditions)
	})
	// docs/secrets.md's commands, verbatim in shape.
	for _, kind := range []string{"canaryruns", "revocationcanaries", "suiteruns"} {
		for _, name := range strings.Fields(kubectl(t, "get", kind, "-n", orphans, "-o", "name")) {
			kubectl(t, "patch", name, "-n", orphans, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
		}
	}
	for _, s := range strings.Fields(kubectl(t, "get", "secrets", "-n", orphans, "-l", "app.kubernetes.io/managed-by=ragcanary", "-o", "name")) {
		kubectl(t, "patch", s, "-n", orphans, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	}
	waitNamespaceGone(t, orphans)
}

// Nothing was ever pulled: no Pod event says Pulling, and containerd's log
// has no pull (every registry goes to a closed port in the node anyway).
func TestNoImageWasPulled(t *testing.T) {
	var events corev1.EventList
	if err := env.client.List(context.Background(), &events); err != nil {
		t.Fatal(err)
	}
	pulledPresent := 0
	for _, e := range events.Items {
		switch e.Reason {
		case "Pulling", "ErrImagePull", "ErrImageNeverPull":
			t.Errorf("event %s %s/%s: %s", e.Reason, e.InvolvedObject.Namespace, e.InvolvedObject.Name, e.Message)
		case "Pulled":
			if strings.Contains(e.Message, "already present on machine") {
				pulledPresent++
			}
		}
	}
	if pulledPresent == 0 {
		t.Errorf("no event says an image was already present: the events tell nothing")
	}
	log, err := os.ReadFile(env.cluster.LogPath("containerd"))
	if err != nil {
		t.Fatal(err)
	}
	for _, needle := range []string{"PullImage", "fetch failed", "failed to resolve"} {
		if strings.Contains(string(log), needle) {
			t.Errorf("containerd's log mentions %q: an image pull was attempted", needle)
		}
	}
	t.Logf("%d containers started from images already present; no pull", pulledPresent)

	// The control: a Pod naming an image that is not here makes the
	// kubelet ask for a pull, which goes to the trap — no name resolved —
	// and shows in the log the assertions above read.
	const ns = "pull-trap"
	kubectl(t, "create", "namespace", ns)
	t.Cleanup(func() { _, _ = kubectlErr("delete", "namespace", ns, "--wait=false") })
	kubectl(t, "-n", ns, "run", "absent", "--image=registry.invalid/absent:1", "--image-pull-policy=IfNotPresent", "--restart=Never")
	testutil.EventuallyEvery(t, time.Minute, clusterPoll, "the absent image's pull refused", func() error {
		var pod corev1.Pod
		if err := env.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "absent"}, &pod); err != nil {
			return err
		}
		for _, st := range pod.Status.ContainerStatuses {
			if w := st.State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") {
				if !strings.Contains(w.Message, "127.0.0.1:1") {
					t.Errorf("the pull went elsewhere than the trap: %s", w.Message)
				}
				return nil
			}
		}
		return fmt.Errorf("container statuses %+v", pod.Status.ContainerStatuses)
	})
	log, err = os.ReadFile(env.cluster.LogPath("containerd"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "PullImage") {
		t.Errorf("containerd's log does not show the control's pull: the check above could not see one either")
	}
}

// Teardown removes every process, mount, namespace, iptables chain, cgroup
// and file the cluster made; a second start then works.
func TestSecondStartAfterTeardown(t *testing.T) {
	if err := env.cluster.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	env.cluster = nil
	assertNothingLeft(t)
	c, err := startCluster()
	if err != nil {
		t.Fatalf("second start: %v", err)
	}
	env.cluster = c
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	env.cluster = nil
	assertNothingLeft(t)
}

func assertNothingLeft(t *testing.T) {
	t.Helper()
	if left := nodecluster.Leftovers(state()); len(left) > 0 {
		t.Errorf("teardown left: %s", strings.Join(left, "; "))
	}
	out, err := exec.Command("iptables-save").CombinedOutput()
	if err != nil {
		t.Fatalf("iptables-save: %v %s", err, out)
	}
	if strings.Contains(string(out), "KUBE-") {
		t.Errorf("the host has Kubernetes iptables chains:\n%s", out)
	}
}

func suspendSampleCanary(t *testing.T, suspend bool) {
	t.Helper()
	var c v1alpha1.RevocationCanary
	key := client.ObjectKey{Namespace: canaryNamespace, Name: sampleCanary}
	if err := env.client.Get(context.Background(), key, &c); err != nil {
		if apierrors.IsNotFound(err) && !suspend {
			return
		}
		t.Fatal(err)
	}
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.Suspend = &suspend
	if err := env.client.Patch(context.Background(), &c, patch); err != nil {
		t.Fatal(err)
	}
}

// startRun creates a one-off run of the sample canary's shape.
func startRun(t *testing.T, name string) string { return startRunIn(t, canaryNamespace, name) }

func startRunIn(t *testing.T, ns, name string) string {
	t.Helper()
	name = fmt.Sprintf("%s-%d", name, time.Now().UnixNano()%100000)
	manifest := fmt.Sprintf(`apiVersion: ragcanary.dev/v1alpha1
kind: CanaryRun
metadata: {name: %s, namespace: %s}
spec:
  corpusRef: {name: ragtarget}
  personaRef: {name: alice}
  controlPersonaRefs: [{name: mallory}]
  revocation: {method: RemoveGrant}
  probing: {interval: 1s, confirmations: 3, visibilityTimeout: 2m, exclusionTimeout: 5m, surfaces: [Search]}
  exclusionSLO: 1m
`, name, ns)
	if _, err := kubectlIn([]byte(manifest), "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	return name
}

func getRun(t *testing.T, ns, name string) *v1alpha1.CanaryRun {
	t.Helper()
	var run v1alpha1.CanaryRun
	if err := env.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &run); err != nil {
		t.Fatal(err)
	}
	return &run
}

func waitPhase(t *testing.T, run string, phases ...v1alpha1.CanaryPhase) {
	t.Helper()
	waitPhaseIn(t, canaryNamespace, run, phases...)
}

func waitPhaseIn(t *testing.T, ns, run string, phases ...v1alpha1.CanaryPhase) {
	t.Helper()
	testutil.EventuallyEvery(t, 2*time.Minute, clusterPoll, fmt.Sprintf("run %s in %v", run, phases), func() error {
		got := getRun(t, ns, run).Status.Phase
		for _, p := range phases {
			if got == p {
				return nil
			}
		}
		if got == v1alpha1.PhaseSucceeded || got == v1alpha1.PhaseFailed {
			t.Fatalf("run %s finished (%s) before reaching %v", run, got, phases)
		}
		return fmt.Errorf("phase %q", got)
	})
}

func waitRunDone(t *testing.T, run string) *v1alpha1.CanaryRun {
	t.Helper()
	var got *v1alpha1.CanaryRun
	testutil.EventuallyEvery(t, runTimeout, clusterPoll, "run "+run+" finished", func() error {
		got = getRun(t, canaryNamespace, run)
		if got.Status.Phase != v1alpha1.PhaseSucceeded && got.Status.Phase != v1alpha1.PhaseFailed {
			return fmt.Errorf("phase %s", got.Status.Phase)
		}
		return nil
	})
	if got.Status.Phase != v1alpha1.PhaseSucceeded {
		t.Fatalf("run %s %s: %s", run, got.Status.Phase, got.Status.Message)
	}
	return got
}

func searchBounds(t *testing.T, run *v1alpha1.CanaryRun) (lower, upper time.Duration) {
	t.Helper()
	for _, m := range run.Status.Surfaces {
		if m.Surface == v1alpha1.SurfaceSearch {
			if !m.Excluded || m.Bounds == nil || m.Bounds.Lower == nil || m.Bounds.Upper == nil {
				t.Fatalf("run %s search: not excluded with both bounds: %+v", run.Name, m)
			}
			return m.Bounds.Lower.Duration, m.Bounds.Upper.Duration
		}
	}
	t.Fatalf("run %s: no search measurement", run.Name)
	return 0, 0
}

// assertBoundsContainTruth: ragtarget's log says when the ACL sync that
// applied the run's revocation began and ended; the measured interval must
// contain that (a 50ms allowance for the log's millisecond times), and it
// came within the configured sync interval of the request.
func assertBoundsContainTruth(t *testing.T, run *v1alpha1.CanaryRun) (lower, upper, truth time.Duration) {
	t.Helper()
	lower, upper = searchBounds(t, run)
	if run.Status.RevokeRequestedTime == nil {
		t.Fatalf("run %s has no revocation request time", run.Name)
	}
	req := run.Status.RevokeRequestedTime.Time
	began, ended := indexed(t, "acl", run.Status.DocumentID, req)
	const slack = 50 * time.Millisecond
	if lower > ended.Sub(req)+slack || upper < began.Sub(req)-slack {
		t.Errorf("run %s: bounds [%s, %s] miss the revocation's indexing, [%s, %s] after the request",
			run.Name, lower, upper, began.Sub(req), ended.Sub(req))
	}
	if ended.Sub(req) > aclSync+time.Second {
		t.Errorf("run %s: the revocation reached the index %s after the request, past the %s ACL sync", run.Name, ended.Sub(req), aclSync)
	}
	return lower, upper, ended.Sub(req)
}

// assertDocumentGone: the run's canary document is gone from ragtarget's
// source, asked from the host through the Service.
func assertDocumentGone(t *testing.T, run *v1alpha1.CanaryRun) {
	t.Helper()
	drv := sourceDriver(t)
	err := drv.Grant(context.Background(), run.Status.DocumentID, "nobody@example.com")
	if err == nil || !driver.IsPermanent(err) {
		t.Errorf("granting on run %s's document %s after cleanup: %v, want not found", run.Name, run.Status.DocumentID, err)
	}
}

func sourceDriver(t *testing.T) *httpdriver.Driver {
	t.Helper()
	var svc corev1.Service
	if err := env.client.Get(context.Background(), client.ObjectKey{Namespace: "ragtarget", Name: "ragtarget"}, &svc); err != nil {
		t.Fatal(err)
	}
	drv, err := httpdriver.New(httpdriver.Config{BaseURL: "http://" + net.JoinHostPort(svc.Spec.ClusterIP, "8089"), SourceToken: sourceToken, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return drv
}

func waitNamespaceGone(t *testing.T, name string) {
	t.Helper()
	testutil.EventuallyEvery(t, 3*time.Minute, clusterPoll, "namespace "+name+" deleted", func() error {
		var ns corev1.Namespace
		err := env.client.Get(context.Background(), client.ObjectKey{Name: name}, &ns)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("phase %s, conditions %+v", ns.Status.Phase, ns.Status.Conditions)
	})
}

func containerIDOf(id string) string { return strings.TrimPrefix(id, "containerd://") }

// containerPID is the host PID of a container's process, from containerd.
func containerPID(t *testing.T, containerID string) int {
	t.Helper()
	out, err := env.cluster.Ctr(context.Background(), "tasks", "list")
	if err != nil {
		t.Fatal(err)
	}
	id := containerIDOf(containerID)
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == id {
			var pid int
			if _, err := fmt.Sscan(f[1], &pid); err == nil && pid > 0 {
				return pid
			}
		}
	}
	t.Fatalf("container %s not among containerd's tasks:\n%s", id, out)
	return 0
}

func field(status, name string) string {
	for _, line := range strings.Split(status, "\n") {
		if strings.HasPrefix(line, name) {
			return strings.TrimSpace(strings.TrimPrefix(line, name))
		}
	}
	return ""
}

// rootMountOptions are the mount options of / as the process sees it.
func rootMountOptions(t *testing.T, pid int) string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 5 && f[4] == "/" {
			return f[5]
		}
	}
	t.Fatalf("no root mount in %d's mountinfo", pid)
	return ""
}

// startPrometheus runs Debian's prometheus on the host's loopback,
// scraping target over HTTPS with token.
func startPrometheus(t *testing.T, target, token string) string {
	t.Helper()
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
scrape_configs:
  - job_name: ragcanary
    scheme: https
    tls_config: {insecure_skip_verify: true}
    authorization: {credentials_file: %q}
    static_configs: [{targets: [%q]}]
`, tokenFile, target)
	cfgFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command("prometheus", "--config.file="+cfgFile, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"), "--web.listen-address="+addr)
	logFile, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	t.Cleanup(func() {
		if t.Failed() {
			log, _ := os.ReadFile(logFile.Name())
			t.Logf("prometheus log:\n%s", log)
		}
	})
	if err := cmd.Start(); err != nil {
		t.Fatalf("prometheus: %v (make test-cluster installs Debian's prometheus)", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	u := "http://" + addr
	testutil.EventuallyEvery(t, time.Minute, clusterPoll, "prometheus ready", func() error {
		resp, err := http.Get(u + "/-/ready")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%d", resp.StatusCode)
		}
		return nil
	})
	return u
}

// promCount is the number of series an instant query returns.
func promCount(base, query string) (int, error) {
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Data   struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return 0, err
	}
	if body.Status != "success" {
		return 0, fmt.Errorf("query %s: %s", query, body.Status)
	}
	return len(body.Data.Result), nil
}
