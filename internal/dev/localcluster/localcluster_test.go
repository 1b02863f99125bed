package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
)

// gcTimeout bounds how long the garbage collector and the namespace
// controller may take on a loaded two-core machine; both act within a
// second or two when idle.
const gcTimeout = 90 * time.Second

// TestControlPlaneBehavesAsACluster starts the real control plane and
// checks what kube-controller-manager adds: owned objects are collected
// when their owner goes (core and custom kinds), a deleted namespace with a
// custom resource in it is emptied and ends, and Stop leaves no
// kube-controller-manager behind.
func TestControlPlaneBehavesAsACluster(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	began := time.Now()
	c, err := Start(Options{
		BinDir:     filepath.Join(root, "bin"),
		CRDDir:     filepath.Join(root, "config", "crd", "bases"),
		Kubeconfig: filepath.Join(dir, "kubeconfig"),
	})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = c.Stop()
		}
		if t.Failed() {
			data, _ := os.ReadFile(c.ControllerManager.LogPath)
			t.Logf("kube-controller-manager log:\n%s", data)
		}
	})
	kcm := c.ControllerManager
	t.Logf("control plane up in %s; kube-controller-manager pid %d healthy %s after exec, RSS %s",
		time.Since(began), kcm.PID, kcm.StartupTime, rss(kcm.PID))
	if err := CheckControllerManager(context.Background(), kcm.HealthzURL, kcm.CAFile); err != nil {
		t.Fatalf("kube-controller-manager not healthy after Start: %v", err)
	}
	if !strings.HasPrefix(kcm.HealthzURL, "https://127.0.0.1:") {
		t.Errorf("kube-controller-manager serves on %s, want loopback only", kcm.HealthzURL)
	}

	// Starting again while it runs is a no-op.
	if err := c.startControllerManager(Options{BinDir: filepath.Join(root, "bin"), ControllerManagerLog: kcm.LogPath}); err != nil {
		t.Fatal(err)
	}
	if c.ControllerManager.PID != kcm.PID {
		t.Errorf("a second start replaced kube-controller-manager (pid %d, was %d)", c.ControllerManager.PID, kcm.PID)
	}

	cl := newClient(t, c)
	t.Run("GarbageCollection", func(t *testing.T) { testGarbageCollection(t, cl) })
	t.Run("NamespaceDeletion", func(t *testing.T) { testNamespaceDeletion(t, cl) })

	t.Logf("kube-controller-manager RSS after the checks: %s", rss(kcm.PID))
	stopped = true
	// kcm first, timed on its own; Stop then finds it gone.
	stopBegan := time.Now()
	c.kcm.stop()
	kcmStopped := time.Since(stopBegan)
	if err := c.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	t.Logf("kube-controller-manager stopped in %s; the whole Stop took %s", kcmStopped, time.Since(stopBegan))
	if err := syscall.Kill(kcm.PID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("kube-controller-manager pid %d after Stop: kill(0) = %v, want no such process", kcm.PID, err)
	}
	if _, err := os.Stat(c.kcmDir); !os.IsNotExist(err) {
		t.Errorf("kube-controller-manager's credentials dir %s after Stop: %v, want removed", c.kcmDir, err)
	}
	if err := c.Stop(); err != nil {
		t.Errorf("a second Stop: %v", err)
	}
}

func newClient(t *testing.T, c *Cluster) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(c.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// testGarbageCollection deletes owners and waits for their dependents to
// go: a ConfigMap owned by a ConfigMap, and a Persona owned by a Corpus
// (custom kinds, found through discovery).
func testGarbageCollection(t *testing.T, cl client.Client) {
	ctx := context.Background()
	const ns = "gc"
	mustCreate(t, cl, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	cases := []struct {
		name            string
		owner           client.Object
		dependent       client.Object
		ownerKind       string
		ownerAPIVersion string
	}{
		{
			name:      "ConfigMap",
			owner:     &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}},
			dependent: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dependent"}},
			ownerKind: "ConfigMap", ownerAPIVersion: "v1",
		},
		{
			name:      "CustomResource",
			owner:     objects.Corpus(ns, "owner", "http://127.0.0.1:1/"),
			dependent: objects.Persona(ns, "dependent", "alice@example.com"),
			ownerKind: "Corpus", ownerAPIVersion: v1alpha1.GroupVersion.String(),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mustCreate(t, cl, tc.owner)
			tc.dependent.SetOwnerReferences([]metav1.OwnerReference{{
				APIVersion: tc.ownerAPIVersion, Kind: tc.ownerKind, Name: tc.owner.GetName(), UID: tc.owner.GetUID(),
			}})
			mustCreate(t, cl, tc.dependent)
			if err := cl.Delete(ctx, tc.owner); err != nil {
				t.Fatal(err)
			}
			testutil.Eventually(t, gcTimeout, "the dependent collected", func() error {
				return gone(ctx, cl, tc.dependent)
			})
		})
	}
}

// testNamespaceDeletion deletes a namespace holding a custom resource and
// waits until the namespace itself is gone, which needs the namespace
// controller to delete the resource and remove the namespace's finalizer.
func testNamespaceDeletion(t *testing.T, cl client.Client) {
	ctx := context.Background()
	const ns = "doomed"
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	mustCreate(t, cl, nsObj)
	cr := objects.Corpus(ns, "kb", "http://127.0.0.1:1/")
	mustCreate(t, cl, cr)
	if err := cl.Delete(ctx, nsObj); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, gcTimeout, "the namespace gone", func() error {
		if err := gone(ctx, cl, nsObj); err != nil {
			var got corev1.Namespace
			if cl.Get(ctx, client.ObjectKeyFromObject(nsObj), &got) == nil {
				return fmt.Errorf("phase %s, conditions %+v", got.Status.Phase, got.Status.Conditions)
			}
			return err
		}
		return nil
	})
	if err := gone(ctx, cl, cr); err != nil {
		t.Errorf("the corpus in the deleted namespace: %v", err)
	}
}

func mustCreate(t *testing.T, cl client.Client, obj client.Object) {
	t.Helper()
	if err := cl.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// gone is nil once obj is not found; an error reading it is not absence.
func gone(ctx context.Context, cl client.Client, obj client.Object) error {
	probe := obj.DeepCopyObject().(client.Object)
	err := cl.Get(ctx, client.ObjectKeyFromObject(obj), probe)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	default:
		return fmt.Errorf("%s still exists (deletion requested: %v)", obj.GetName(), probe.GetDeletionTimestamp() != nil)
	}
}

// rss is a process's resident set size as /proc reports it.
func rss(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// helperEnv makes the test binary act as a parent that starts a child with
// spawn and then waits to be killed (TestChildDiesWithParent).
const helperEnv = "LOCALCLUSTER_SPAWN_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		spawnHelper()
		return
	}
	os.Exit(m.Run())
}

// spawnHelper starts `sleep` as kcm is started, prints its pid and blocks.
func spawnHelper() {
	p, err := spawn("sleep", []string{"600"}, os.Stderr)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println(p.pid)
	<-p.done
}

// TestChildDiesWithParent: a process started like kube-controller-manager
// does not outlive a parent killed without running any shutdown code (a
// test binary killed on timeout, a SIGKILLed hack/localcluster).
func TestChildDiesWithParent(t *testing.T) {
	parent := exec.Command(os.Args[0], "-test.run=^$")
	parent.Env = append(os.Environ(), helperEnv+"=1")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := out.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		t.Fatalf("helper printed %q: %v", buf[:n], err)
	}
	if !alive(child) {
		t.Fatalf("the child %d is not running before its parent is killed", child)
	}
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	testutil.EventuallyTrue(t, 10*time.Second, "the child gone after its parent was killed", func() bool { return !alive(child) })
}

// alive is true while pid runs; a zombie waiting for init to reap it has
// already ended.
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	i := strings.LastIndexByte(string(data), ')')
	return i < 0 || i+2 >= len(data) || data[i+2] != 'Z'
}
