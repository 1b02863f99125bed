package controllers

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/controllers/canaryrun"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/kubetest"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// secretsDoc documents the Secrets a run creates and how to release their
// finalizers by hand; the commands the test runs must be the ones it shows.
const secretsDoc = "../docs/secrets.md"

// Commands of docs/secrets.md, as written there.
const (
	releaseRunCommand         = `kubectl patch canaryrun <run> -n <namespace> --type=merge -p '{"metadata":{"finalizers":null}}'`
	releaseCleanupCommand     = `kubectl patch secret <run>-cleanup -n <namespace> --type=merge -p '{"metadata":{"finalizers":null}}'`
	listOperatorSecretCommand = `kubectl get secrets -n <namespace> -l app.kubernetes.io/managed-by=ragcanary -o name`
)

// startOwnControlPlane is startOwnAPIServer with a kubectl for an admin
// user: the test runs the documented commands as a person would.
func startOwnControlPlane(t *testing.T) (*kubetest.Env, client.Client, func(args ...string) (string, error)) {
	t.Helper()
	env := startOwnEnv(t)
	c, err := client.New(env.Config, client.Options{Scheme: testScheme})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubectl, err := admin.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		stdout, stderr, err := kubectl.Run(args...)
		out, _ := io.ReadAll(stdout)
		msg, _ := io.ReadAll(stderr)
		if err != nil {
			return string(out), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, msg)
		}
		return string(out), nil
	}
	return env, c, run
}

// documentedArgs checks docs/secrets.md shows command and returns its kubectl
// arguments with the placeholders filled in. Commands hold one quoted
// argument at most, the patch body after -p.
func documentedArgs(t *testing.T, doc, command string, fill map[string]string) []string {
	t.Helper()
	if !strings.Contains(doc, command) {
		t.Fatalf("%s does not show the command the test runs:\n%s", secretsDoc, command)
	}
	for k, v := range fill {
		command = strings.ReplaceAll(command, k, v)
	}
	head, body, quoted := strings.Cut(command, " '")
	args := strings.Fields(head)
	if args[0] != "kubectl" {
		t.Fatalf("not a kubectl command: %s", command)
	}
	args = args[1:]
	if quoted {
		args = append(args, strings.TrimSuffix(body, "'"))
	}
	return args
}

// TestRunSecretsAreLabelledAndTheirFinalizersReleasedByHand: a planted run's
// Secrets say what they are; once the operator is gone, the run and its
// cleanup Secret being deleted stay (their finalizers hold them, as they
// hold a namespace deletion), and the commands docs/secrets.md gives let
// both go.
func TestRunSecretsAreLabelledAndTheirFinalizersReleasedByHand(t *testing.T) {
	t.Parallel() // its own API server and operator
	doc, err := os.ReadFile(secretsDoc)
	if err != nil {
		t.Fatal(err)
	}
	env, c, kubectl := startOwnControlPlane(t)
	// The revocation never reaches the index: the run stays in flight.
	tg := startCRTargetWith(t, ragtarget.Config{}, crTargetOptions{hold: true})
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "secrets-"}}
	crCreateIn(t, c, ns)
	crFixtureIn(t, c, ns.Name, tg.URL)
	run := crRunSpec(ns.Name, time.Minute, v1alpha1.SurfaceSearch)
	crCreateIn(t, c, run)

	op := startTestOperator(t, env.Config, 250*time.Millisecond)
	testutil.Eventually(t, eventuallyTimeout, "the run planted its canary", func() error {
		got := crGetIn(t, c, run)
		if got.Status.DocumentID == "" || got.Status.Phase == v1alpha1.PhasePlanting || got.Status.Phase == "" {
			return fmt.Errorf("phase %q (%s)", got.Status.Phase, got.Status.Message)
		}
		return nil
	})
	got := crGetIn(t, c, run)
	tokenKey := client.ObjectKey{Namespace: ns.Name, Name: got.Status.TokenSecretName}
	cleanupKey := client.ObjectKey{Namespace: ns.Name, Name: canaryrun.RecipeSecretName(got)}
	for _, key := range []client.ObjectKey{tokenKey, cleanupKey} {
		var s corev1.Secret
		if err := c.Get(context.Background(), key, &s); err != nil {
			t.Fatalf("reading Secret %s: %v", key.Name, err)
		}
		if s.Labels[v1alpha1.LabelManagedBy] != "ragcanary" || s.Labels[v1alpha1.LabelRun] != run.Name {
			t.Errorf("Secret %s labels %v, want %s=ragcanary and %s=%s", key.Name, s.Labels, v1alpha1.LabelManagedBy, v1alpha1.LabelRun, run.Name)
		}
		if !metav1.IsControlledBy(&s, got) {
			t.Errorf("Secret %s is not owned by the run", key.Name)
		}
	}
	fill := map[string]string{"<namespace>": ns.Name, "<run>": run.Name}
	out, err := kubectl(documentedArgs(t, string(doc), listOperatorSecretCommand, fill)...)
	if err != nil {
		t.Fatal(err)
	}
	listed := strings.Fields(out)
	slices.Sort(listed)
	if want := []string{"secret/" + cleanupKey.Name, "secret/" + tokenKey.Name}; !slices.Equal(listed, want) {
		t.Errorf("the documented listing shows %q, want only the run's Secrets %q", listed, want)
	}

	// The operator is uninstalled; then the run and its Secrets are deleted.
	op.stop()
	cleanup := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: cleanupKey.Name}}
	for _, obj := range []client.Object{got, cleanup} {
		if err := c.Delete(context.Background(), obj); err != nil {
			t.Fatalf("deleting %T %s: %v", obj, obj.GetName(), err)
		}
	}
	heldRun := crGetIn(t, c, run)
	var heldSecret corev1.Secret
	if err := c.Get(context.Background(), cleanupKey, &heldSecret); err != nil {
		t.Fatalf("the cleanup Secret went without its finalizer released: %v", err)
	}
	if heldRun.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(heldRun, v1alpha1.FinalizerCanaryRun) {
		t.Errorf("run deletionTimestamp %v finalizers %v: want held by %s", heldRun.DeletionTimestamp, heldRun.Finalizers, v1alpha1.FinalizerCanaryRun)
	}
	if heldSecret.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(&heldSecret, canaryrun.RecipeFinalizer) {
		t.Errorf("cleanup Secret deletionTimestamp %v finalizers %v: want held by %s", heldSecret.DeletionTimestamp, heldSecret.Finalizers, canaryrun.RecipeFinalizer)
	}

	for _, command := range []string{releaseRunCommand, releaseCleanupCommand} {
		if _, err := kubectl(documentedArgs(t, string(doc), command, fill)...); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, eventuallyTimeout, "the run and its cleanup Secret are gone", func() error {
		for _, obj := range []client.Object{&v1alpha1.CanaryRun{}, &corev1.Secret{}} {
			key := client.ObjectKeyFromObject(run)
			if _, ok := obj.(*corev1.Secret); ok {
				key = cleanupKey
			}
			if err := c.Get(context.Background(), key, obj); !apierrors.IsNotFound(err) {
				return fmt.Errorf("%T %s: %v (finalizers %v)", obj, key.Name, err, obj.GetFinalizers())
			}
		}
		return nil
	})
}
