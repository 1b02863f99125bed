package controllers

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/controllers/canaryrun"
	"github.com/ragcanary/ragcanary/controllers/shared"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/kubetest"
	"github.com/ragcanary/ragcanary/internal/probe"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
	"github.com/ragcanary/ragcanary/internal/target"
)

// startOwnAPIServer starts a kube-apiserver and etcd for one test. The
// suite's manager reconciles every CanaryRun on the shared API server, so a
// test that stops and restarts "the operator" needs a server only its own
// operators watch.
func startOwnAPIServer(t *testing.T) (*rest.Config, client.Client) {
	t.Helper()
	env := startOwnEnv(t)
	c, err := client.New(env.Config, client.Options{Scheme: testScheme})
	if err != nil {
		t.Fatal(err)
	}
	return env.Config, c
}

// startOwnEnv starts an API server with the CRDs, stopped when the test ends.
func startOwnEnv(t *testing.T) *kubetest.Env {
	t.Helper()
	env, err := kubetest.Start("..", testScheme)
	if err != nil {
		t.Fatalf("starting an API server of the test's own: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping the test's API server: %v", err)
		}
	})
	return env
}

// testOperator is one operator process: a manager running the CanaryRun
// controller with its own probe engine and cache. Stopping it drops every
// in-memory probe state, as a crash or a rollout would; a new one can only
// rebuild from status.
type testOperator struct {
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	// synced is when the operator's cache finished its initial sync: from
	// then on it reconciles, so time before it is operator start-up.
	synced time.Time
	// probes is its probe engine, for tests that count probe rounds.
	probes *probe.Engine
}

func startTestOperator(t *testing.T, cfg *rest.Config, heartbeat time.Duration) *testOperator {
	t.Helper()
	return startOperatorWith(t, cfg, heartbeat, testDoor)
}

// startOperatorWith starts an operator whose door is built by door from
// the manager's API reader and the probe engine's limiters.
func startOperatorWith(t *testing.T, cfg *rest.Config, heartbeat time.Duration,
	door func(client.Reader, *target.Limiters) *target.Door) *testOperator {
	t.Helper()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 testScheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  shared.CacheOptions(""),
		// The suite's manager already registered the controller name.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.RealClock{}
	engine := probe.NewEngine(clk, target.NewLimiters(clk))
	if err := mgr.Add(engine); err != nil {
		t.Fatal(err)
	}
	r := &canaryrun.CanaryRunReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Secrets: mgr.GetAPIReader(),
		Door: door(mgr.GetAPIReader(), engine.Limiters()), Clock: clk, Probes: engine,
		Checkpoint: heartbeat, Recorder: mgr.GetEventRecorder("canaryrun-controller")}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	op := &testOperator{cancel: cancel, done: make(chan struct{}), probes: engine}
	go func() {
		defer close(op.done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("operator stopped: %v", err)
		}
	}()
	t.Cleanup(op.stop)
	syncCtx, cancelSync := context.WithTimeout(ctx, eventuallyTimeout)
	defer cancelSync()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		t.Fatal("operator cache did not sync")
	}
	op.synced = time.Now()
	return op
}

// stop ends the operator and waits until no reconcile or probe is in flight.
func (op *testOperator) stop() {
	op.once.Do(func() {
		op.cancel()
		<-op.done
	})
}

// TestCanaryRunRestartDuringExclusionLosesNoMeasurement stops the operator
// while the run awaits exclusion and the revoked token is still visible;
// the revocation reaches the index while no operator runs; a fresh operator
// rebuilds the run from status. The interval must still contain the true
// exclusion time, be computed from the persisted timestamps to the
// microsecond, and be wider only by the time nothing was observed.
func TestCanaryRunRestartDuringExclusionLosesNoMeasurement(t *testing.T) {
	t.Parallel() // its own API server and operator
	const (
		heartbeat = 250 * time.Millisecond
		interval  = 200 * time.Millisecond // crRunSpec's probe interval
	)
	cfg, c := startOwnAPIServer(t)
	// The revocation is held at the target until the first operator has
	// stopped, so it reaches the index while no operator runs.
	tg := startCRTargetWith(t, ragtarget.Config{}, crTargetOptions{hold: true})
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "restart-"}}
	crCreateIn(t, c, ns)
	crFixtureIn(t, c, ns.Name, tg.URL)
	run := crRunSpec(ns.Name, 20*time.Second, v1alpha1.SurfaceSearch)
	crCreateIn(t, c, run)

	first := startTestOperator(t, cfg, heartbeat)
	testutil.Eventually(t, eventuallyTimeout, "a sighting after the revocation persisted", func() error {
		got := crGetIn(t, c, run)
		if got.Status.Phase != v1alpha1.PhaseAwaitingExclusion {
			return fmt.Errorf("phase %q (%s)", got.Status.Phase, got.Status.Message)
		}
		if len(got.Status.Surfaces) == 0 || got.Status.Surfaces[0].LastPositiveStart == nil {
			return fmt.Errorf("no sighting persisted yet: %+v", got.Status.Surfaces)
		}
		return nil
	})
	first.stop()
	stoppedAt := time.Now()
	// What the restart can rebuild from: status as the first operator left it.
	before := crGetIn(t, c, run)
	if s, _ := tg.appliedRevocation(); !s.IsZero() {
		t.Fatalf("the revocation reached the index %s before the operator stopped; the run would not straddle the restart", stoppedAt.Sub(s))
	}
	tg.release()
	testutil.Eventually(t, eventuallyTimeout, "the revocation reached the index while the operator was down", func() error {
		if s, _ := tg.appliedRevocation(); s.IsZero() {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	restartedAt := time.Now()
	second := startTestOperator(t, cfg, heartbeat)
	startup := second.synced.Sub(restartedAt)

	got := crWaitDoneIn(t, c, run)
	crAssertSLOMet(t, got)
	// Timestamps that cannot be re-observed survive unchanged: the restart
	// neither re-shared nor re-revoked.
	for _, ts := range []struct {
		name          string
		before, after *metav1.MicroTime
	}{
		{"shareRequestedTime", before.Status.ShareRequestedTime, got.Status.ShareRequestedTime},
		{"visibleTime", before.Status.VisibleTime, got.Status.VisibleTime},
		{"revokeRequestedTime", before.Status.RevokeRequestedTime, got.Status.RevokeRequestedTime},
		{"revokeAcknowledgedTime", before.Status.RevokeAcknowledgedTime, got.Status.RevokeAcknowledgedTime},
	} {
		if ts.before == nil || ts.after == nil || !ts.before.Equal(ts.after) {
			t.Errorf("%s changed across the restart: %v → %v", ts.name, ts.before, ts.after)
		}
	}

	pre, m := crSurface(t, before, v1alpha1.SurfaceSearch), crSurface(t, got, v1alpha1.SurfaceSearch)
	if m.Bounds == nil || m.Bounds.Lower == nil || m.Bounds.Upper == nil || m.FirstNegativeEnd == nil {
		t.Fatalf("no complete measurement: %+v", m)
	}
	req, ack := got.Status.RevokeRequestedTime.Time, got.Status.RevokeAcknowledgedTime.Time
	// The lower bound comes from the sighting persisted before the stop, to
	// the microsecond; the upper bound from a negative the new operator saw.
	if m.LastPositiveStart == nil || !m.LastPositiveStart.Equal(pre.LastPositiveStart) {
		t.Errorf("lastPositiveStart %v, want %v as persisted before the restart", m.LastPositiveStart, pre.LastPositiveStart)
	}
	if want := pre.LastPositiveStart.Sub(ack); m.Bounds.Lower.Duration != want {
		t.Errorf("lower bound %s, want %s from the persisted sighting", m.Bounds.Lower.Duration, want)
	}
	if want := m.FirstNegativeEnd.Sub(req); m.Bounds.Upper.Duration != want {
		t.Errorf("upper bound %s, want %s from the persisted first negative", m.Bounds.Upper.Duration, want)
	}
	if !m.FirstNegativeEnd.After(restartedAt) {
		t.Errorf("first negative ended %s before the restart: nothing was probing then", restartedAt.Sub(m.FirstNegativeEnd.Time))
	}

	// The interval contains the true exclusion time.
	s, e := tg.appliedRevocation()
	lastSeen, firstGone := ack.Add(m.Bounds.Lower.Duration), req.Add(m.Bounds.Upper.Duration)
	if lastSeen.After(s) || firstGone.Before(e) {
		t.Errorf("interval [%s, %s] after the request does not contain the sync at [%s, %s]",
			lastSeen.Sub(req), firstGone.Sub(req), s.Sub(req), e.Sub(req))
	}
	// It is wider only by the time nothing durable was observed: since the
	// last persisted sighting (at most a heartbeat and a probe round before
	// the stop), the downtime, the new operator's start-up (cache sync) and
	// its first probe.
	// The slack absorbs scheduling on a loaded machine.
	const slack = time.Second
	unpersisted, downtime, resume := stoppedAt.Sub(lastSeen), restartedAt.Sub(stoppedAt), firstGone.Sub(restartedAt)
	width := firstGone.Sub(lastSeen)
	t.Logf("interval width %s = unpersisted %s + downtime %s + first probe after restart %s (of which start-up %s); true exclusion window %s",
		width, unpersisted, downtime, resume, startup, e.Sub(s))
	if unpersisted > heartbeat+interval+slack {
		t.Errorf("the last persisted sighting was %s before the stop, want within a heartbeat (%s) and a probe round", unpersisted, heartbeat)
	}
	if resume > startup+interval+slack {
		t.Errorf("the first negative after the restart ended %s after it, want within start-up (%s) and a probe round", resume, startup)
	}
	if width > downtime+startup+heartbeat+2*(interval+slack) {
		t.Errorf("interval width %s exceeds the downtime %s and start-up %s by more than a heartbeat and two probe rounds", width, downtime, startup)
	}
}

// TestDeletedBeforeFirstWriteRemovesPlantedDocument deletes a run whose
// planting reached the target while none of its status did: Planting's
// names wait for Sharing's write, and here every status write fails. The
// run's cleanup must still find the document, under the ID it derives, and
// remove it before the run goes.
func TestDeletedBeforeFirstWriteRemovesPlantedDocument(t *testing.T) {
	t.Parallel() // its own API server and operator
	cfg, c := startOwnAPIServer(t)
	tg := startCRTarget(t, ragtarget.Config{}, 0, false)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "unwritten-"}}
	crCreateIn(t, c, ns)
	crFixtureIn(t, c, ns.Name, tg.URL)

	var refused atomic.Int64
	failing := rest.CopyConfig(cfg)
	failing.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodPatch && strings.HasSuffix(req.URL.Path, "/canaryruns/run/status") {
				refused.Add(1)
				return &http.Response{StatusCode: http.StatusServiceUnavailable, Body: http.NoBody,
					Header: http.Header{"Content-Type": []string{"text/plain"}}, Request: req}, nil
			}
			return rt.RoundTrip(req)
		})
	}
	run := crRunSpec(ns.Name, 20*time.Second, v1alpha1.SurfaceSearch)
	run.Finalizers = []string{v1alpha1.FinalizerCanaryRun}
	crCreateIn(t, c, run)
	startTestOperator(t, failing, time.Minute)

	created := crGetIn(t, c, run)
	doc := canaryrun.DocumentID(created)
	testutil.Eventually(t, eventuallyTimeout, "the document planted while no status write succeeds", func() error {
		if _, ok := tg.SourceDocuments()[doc]; !ok {
			return fmt.Errorf("document %s not at the source yet (%d status writes refused)", doc, refused.Load())
		}
		if refused.Load() == 0 {
			return fmt.Errorf("no status write attempted yet")
		}
		return nil
	})
	if got := crGetIn(t, c, run); got.Status.DocumentID != "" || got.Status.Phase != "" {
		t.Fatalf("status was written (phase %q, document %q): the test does not cover an unwritten run", got.Status.Phase, got.Status.DocumentID)
	}

	if err := c.Delete(context.Background(), created); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, eventuallyTimeout, "the run gone after its cleanup", func() error {
		err := c.Get(context.Background(), client.ObjectKeyFromObject(run), &v1alpha1.CanaryRun{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("run still there: %v", err)
		}
		return nil
	})
	if _, ok := tg.SourceDocuments()[doc]; ok {
		t.Fatalf("document %s left at the source", doc)
	}
	if !tg.deleted(doc) {
		t.Fatalf("document %s was not deleted at the target", doc)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
