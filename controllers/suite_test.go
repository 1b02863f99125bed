package controllers

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/controllers/shared"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ragcanary/ragcanary/internal/dev/testutil/kubetest"
)

// The envtest suite: one real kube-apiserver and etcd for the package, the
// CRDs from config/crd/bases, and a manager running every reconciler through
// SetupAll, exactly as cmd/manager wires them.
var (
	// k8sClient talks to the API server directly (no cache): tests assert on
	// what is stored, not on what the manager's cache has seen.
	k8sClient client.Client
	// restConfig reaches the test API server.
	restConfig *rest.Config
	// scheduleClock is the fake clock the scheduling reconcilers use; tests
	// step it to make runs due. Probes and lifecycle steps use real time.
	scheduleClock = clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	// testScheme knows the core kinds and ragcanary.dev/v1alpha1.
	testScheme = kubetest.NewScheme()
)

// timeouts for Eventually-style waits: bounded, never sleeps that make a test pass.
const (
	eventuallyTimeout = 20 * time.Second
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true), zap.Level(zapcore.Level(zapLevel()))))
	env, err := kubetest.Start("..", testScheme)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping envtest: %v\n", err)
		}
	}()
	cfg := env.Config
	restConfig = cfg

	k8sClient, err = client.New(cfg, client.Options{Scheme: testScheme})
	if err != nil {
		fmt.Fprintf(os.Stderr, "creating client: %v\n", err)
		return 1
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mgrDone, err := startManager(ctx, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting manager: %v\n", err)
		return 1
	}
	code := m.Run()
	cancel()
	<-mgrDone
	return code
}

// startManager runs a manager with every reconciler until ctx ends.
func startManager(ctx context.Context, cfg *rest.Config) (<-chan struct{}, error) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 testScheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  withoutShardTestNamespace(shared.CacheOptions("")),
	})
	if err != nil {
		return nil, err
	}
	opts := shared.Options{
		Door:          testDoor(mgr.GetAPIReader(), nil),
		ScheduleClock: scheduleClock,
	}
	if err := SetupAll(mgr, opts); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "manager stopped: %v\n", err)
		}
	}()
	return done, nil
}

// zapLevel keeps test output quiet unless RAGCANARY_TEST_VERBOSE is set.
func zapLevel() int8 {
	if os.Getenv("RAGCANARY_TEST_VERBOSE") != "" {
		return -1
	}
	return 2 // errors only
}

// newNamespace creates a fresh namespace so tests never see each other's objects.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}
	if err := k8sClient.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return ns.Name
}
