package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/controllers/shared"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/charttest"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/kubetest"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/targettest"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// TestSecretAccessScopedToSecretNamespaces runs every reconciler as the
// chart's ServiceAccount, holding exactly the RBAC the chart renders with
// secretNamespaces={team-a} and the Secret scope the chart passes the
// manager. The caches sync and reconcile (a Corpus in team-a goes from
// SecretNotFound to Ready when its Secret appears, which only the scoped
// Secret watch can tell it); a Corpus and a Persona in team-b are refused
// with SecretAccessDenied naming the namespace and the chart value.
func TestSecretAccessScopedToSecretNamespaces(t *testing.T) {
	t.Parallel() // its own API server and operator
	const release, operatorNS, granted, denied = "scoped", "ragcanary-system", "team-a", "team-b"
	cp := startControlPlane(t)
	for _, ns := range []string{operatorNS, granted, denied} {
		cp.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	chart := charttest.Objects(t, "..", release, operatorNS, "--set", "secretNamespaces={"+granted+"}", "--set", "operator.allowAnyTarget=true")
	sa := cp.applyIdentity(t, chart)
	saConfig := cp.serviceAccountConfig(t, sa)
	expectSecretReadForbidden(t, saConfig, denied)

	scope, ok := containerArg(t, chart, "--secret-namespaces")
	if !ok || scope != granted {
		t.Fatalf("the chart passes --secret-namespaces=%q (present: %v), want %q", scope, ok, granted)
	}
	cacheOpts, err := shared.ScopeSecrets(shared.CacheOptions(""), strings.Split(scope, ","))
	if err != nil {
		t.Fatal(err)
	}

	url := targettest.Start(t, fixtureConfig(ragtarget.Config{})).URL
	grantedCorpus := newCorpus(granted, "rt", url)
	deniedCorpus := newCorpus(denied, "rt", url)
	cp.create(t, grantedCorpus)
	cp.create(t, deniedCorpus)
	cp.createSecret(t, denied, "rt-source", testSourceToken)
	for _, ns := range []string{granted, denied} {
		cp.createSecret(t, ns, "alice-cred", testAliceToken)
		cp.create(t, objects.Persona(ns, "alice", aliceSubject))
	}
	stopped := runReconcilers(t, saConfig, cacheOpts)

	cp.waitReady(t, grantedCorpus, metav1.ConditionFalse, v1alpha1.ReasonSecretNotFound)
	cp.createSecret(t, granted, "rt-source", testSourceToken)
	cp.waitReady(t, grantedCorpus, metav1.ConditionTrue, v1alpha1.ReasonReachable)
	cp.waitReady(t, &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: granted, Name: "alice"}},
		metav1.ConditionTrue, v1alpha1.ReasonSecretFound)

	for _, obj := range []client.Object{deniedCorpus, &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: denied, Name: "alice"}}} {
		cond := cp.waitReady(t, obj, metav1.ConditionFalse, v1alpha1.ReasonSecretAccessDenied)
		if !strings.Contains(cond.Message, `"`+denied+`"`) || !strings.Contains(cond.Message, "secretNamespaces") {
			t.Errorf("%T %s: message %q does not name the namespace and the chart value secretNamespaces", obj, obj.GetNamespace(), cond.Message)
		}
	}
	select {
	case err := <-stopped:
		t.Fatalf("the manager stopped: %v", err)
	default:
	}
}

// TestScopeSecretsWithinWatchedNamespace: with a watched namespace, Secrets
// are cached only where both allow, and a scope that leaves none is refused
// rather than watching no Secret at all.
func TestScopeSecretsWithinWatchedNamespace(t *testing.T) {
	opts, err := shared.ScopeSecrets(shared.CacheOptions("team-a"), []string{"team-a", "team-b"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for obj, by := range opts.ByObject {
		if _, ok := obj.(*corev1.Secret); ok {
			for ns := range by.Namespaces {
				got = append(got, ns)
			}
		}
	}
	if !slices.Equal(got, []string{"team-a"}) {
		t.Errorf("Secret cache namespaces = %v, want [team-a]", got)
	}
	if _, err := shared.ScopeSecrets(shared.CacheOptions("team-c"), []string{"team-a"}); err == nil {
		t.Error("a Secret scope outside the watched namespace was accepted")
	}
	if _, err := shared.ScopeSecrets(shared.CacheOptions(""), []string{"Team_A"}); err == nil {
		t.Error("an invalid namespace name was accepted")
	}
	if opts, err := shared.ScopeSecrets(shared.CacheOptions(""), nil); err != nil || len(opts.ByObject) != 0 {
		t.Errorf("no Secret scope: ByObject = %v, err = %v; want the options unchanged", opts.ByObject, err)
	}
}

// controlPlane is an API server of a test's own. A test that runs a second
// manager needs one: the package's manager reconciles every object of the
// shared API server, and two managers would race on the same status.
type controlPlane struct {
	config *rest.Config
	// admin reads and writes directly, uncached.
	admin client.Client
}

func startControlPlane(t *testing.T) *controlPlane {
	t.Helper()
	cfg, admin := startOwnAPIServer(t)
	return &controlPlane{config: cfg, admin: admin}
}

func (cp *controlPlane) create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := cp.admin.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// createSecret stores value in a credential Secret.
func (cp *controlPlane) createSecret(t *testing.T, ns, name, value string) {
	t.Helper()
	cp.create(t, objects.CredentialSecret(ns, name, value))
}

// waitReady waits until obj's Ready condition has status and reason, read
// from the API server.
func (cp *controlPlane) waitReady(t *testing.T, obj client.Object, status metav1.ConditionStatus, reason string) metav1.Condition {
	t.Helper()
	var cond metav1.Condition
	testutil.Eventually(t, eventuallyTimeout, fmt.Sprintf("%T %s/%s Ready=%s/%s", obj, obj.GetNamespace(), obj.GetName(), status, reason), func() error {
		if err := cp.admin.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		got := meta.FindStatusCondition(readyConditions(obj), v1alpha1.ConditionReady)
		if got == nil || got.Status != status || got.Reason != reason {
			return fmt.Errorf("condition is %+v", got)
		}
		cond = *got
		return nil
	})
	return cond
}

func readyConditions(obj client.Object) []metav1.Condition {
	switch o := obj.(type) {
	case *v1alpha1.Corpus:
		return o.Status.Conditions
	case *v1alpha1.Persona:
		return o.Status.Conditions
	case *v1alpha1.EvalSuite:
		return o.Status.Conditions
	}
	return nil
}

// identityKinds are the rendered objects that make up the operator's
// identity and what it may do.
var identityKinds = []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}

// applyIdentity creates the chart's ServiceAccount and RBAC objects, as an
// install would, and returns the ServiceAccount.
func (cp *controlPlane) applyIdentity(t *testing.T, chart []unstructured.Unstructured) *corev1.ServiceAccount {
	t.Helper()
	var sa *corev1.ServiceAccount
	for i := range chart {
		obj := &chart[i]
		if !slices.Contains(identityKinds, obj.GetKind()) {
			continue
		}
		cp.create(t, obj)
		if obj.GetKind() == "ServiceAccount" {
			sa = &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: obj.GetNamespace(), Name: obj.GetName()}}
		}
	}
	if sa == nil {
		t.Fatal("the chart rendered no ServiceAccount")
	}
	return sa
}

// serviceAccountConfig reaches the API server with a token the API server
// issued for sa: what the operator's Pod gets.
func (cp *controlPlane) serviceAccountConfig(t *testing.T, sa *corev1.ServiceAccount) *rest.Config {
	t.Helper()
	token, err := kubetest.ServiceAccountToken(context.Background(), cp.admin, sa.Namespace, sa.Name, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(cp.config)
	cfg.BearerToken = token
	return cfg
}

// expectSecretReadForbidden checks that the identity really is limited:
// without it the test would pass with an identity that may read anything.
func expectSecretReadForbidden(t *testing.T, cfg *rest.Config, ns string) {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: testScheme})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "any"}, &corev1.Secret{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("reading a Secret in %s as the operator: %v, want Forbidden", ns, err)
	}
}

// containerArg returns the value of flag in the rendered Deployment's
// manager container.
func containerArg(t *testing.T, chart []unstructured.Unstructured, flag string) (string, bool) {
	t.Helper()
	for _, obj := range chart {
		if obj.GetKind() != "Deployment" {
			continue
		}
		containers, _, err := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
		if err != nil || len(containers) == 0 {
			t.Fatalf("the rendered Deployment has no containers: %v", err)
		}
		args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
		for _, arg := range args {
			if v, ok := strings.CutPrefix(arg, flag+"="); ok {
				return v, true
			}
		}
		return "", false
	}
	t.Fatal("the chart rendered no Deployment")
	return "", false
}

// runReconcilers runs every reconciler, wired as SetupAll wires them, in a
// manager reaching the API server with cfg, until the test ends. The
// returned channel receives the manager's error if it stops early.
func runReconcilers(t *testing.T, cfg *rest.Config, cacheOpts cache.Options) <-chan error {
	t.Helper()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 testScheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cacheOpts,
		// The package's manager already registered the controller names.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	opts, err := completeOptions(mgr, shared.Options{Door: testDoor(mgr.GetAPIReader(), nil)})
	if err != nil {
		t.Fatal(err)
	}
	if err := setupReconcilers(mgr, opts); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			stopped <- err
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return stopped
}
