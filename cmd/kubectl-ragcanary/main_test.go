package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/kubetest"
)

// The plugin's tests run its commands, as a user would, against a real
// kube-apiserver and etcd (envtest) holding the CRDs. No controller runs:
// each test writes the runs' status through the status subresource, as the
// controller would, so it decides exactly what the plugin reads.
var (
	// k8sClient writes fixtures, as cluster admin.
	k8sClient client.Client
	// adminKubeconfig and readerKubeconfig are kubeconfig files for a
	// cluster admin and for a user who may read and annotate ragcanary
	// objects but has no access to Secrets (see readerRules).
	adminKubeconfig, readerKubeconfig string
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	scheme := kubetest.NewScheme()
	env, err := kubetest.Start(filepath.Join("..", ".."), scheme)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping envtest: %v\n", err)
		}
	}()
	if k8sClient, err = client.New(env.Config, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintf(os.Stderr, "creating client: %v\n", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "kubectl-ragcanary-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if adminKubeconfig, err = writeKubeconfig(env.Environment, dir, envtest.User{Name: "admin", Groups: []string{"system:masters"}}); err != nil {
		fmt.Fprintf(os.Stderr, "admin kubeconfig: %v\n", err)
		return 1
	}
	if err := grantReader(context.Background()); err != nil {
		fmt.Fprintf(os.Stderr, "granting the reader role: %v\n", err)
		return 1
	}
	if readerKubeconfig, err = writeKubeconfig(env.Environment, dir, envtest.User{Name: "ragcanary-reader"}); err != nil {
		fmt.Fprintf(os.Stderr, "reader kubeconfig: %v\n", err)
		return 1
	}
	return m.Run()
}

func writeKubeconfig(env *envtest.Environment, dir string, u envtest.User) (string, error) {
	user, err := env.AddUser(u, nil)
	if err != nil {
		return "", err
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, u.Name+".kubeconfig")
	return path, os.WriteFile(path, data, 0o600)
}

// readerRules are all the plugin needs: read ragcanary objects, annotate
// canaries and suites for run-now. No Secrets, no core objects at all.
var readerRules = []rbacv1.PolicyRule{
	{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"revocationcanaries", "evalsuites"}, Verbs: []string{"patch"}},
}

func grantReader(ctx context.Context) error {
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "ragcanary-reader"}, Rules: readerRules}
	if err := k8sClient.Create(ctx, role); err != nil {
		return err
	}
	return k8sClient.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "ragcanary-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "ragcanary-reader"}},
	})
}

// result is what one invocation printed and its exit code.
type result struct {
	stdout, stderr string
	code           int
}

// invocation is one command line run by a given user at a given time.
type invocation struct {
	kubeconfig string
	now        time.Time
	stdout     *testutil.LockedBuffer
	stderr     *testutil.LockedBuffer
}

func newInvocation(kubeconfig string, now time.Time) *invocation {
	return &invocation{kubeconfig: kubeconfig, now: now, stdout: &testutil.LockedBuffer{}, stderr: &testutil.LockedBuffer{}}
}

// run executes the plugin with args, exactly as main does, but with the
// kubeconfig, clock and outputs of the invocation.
func (in *invocation) run(args ...string) result {
	flags := genericclioptions.NewConfigFlags(true)
	o := &rootOptions{flags: flags, out: in.stdout, errOut: in.stderr, now: func() time.Time { return in.now }}
	code := execute(o, append([]string{"--kubeconfig", in.kubeconfig}, args...))
	return result{stdout: in.stdout.String(), stderr: in.stderr.String(), code: code}
}

// ragcanary runs the plugin as cluster admin at now.
func ragcanary(now time.Time, args ...string) result {
	return newInvocation(adminKubeconfig, now).run(args...)
}

// createNamespace creates a namespace with a fixed name, so golden output
// can show it.
func createNamespace(t *testing.T, name string) {
	t.Helper()
	if err := k8sClient.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run with -update if the change is intended)\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}

// waitTimeout bounds each wait for the API server or a command's output.
const waitTimeout = 20 * time.Second

// containsAll fails unless s contains every want.
func containsAll(t *testing.T, what, s string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, s)
		}
	}
}
