package controllers

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/controllers/shared"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
	"github.com/ragcanary/ragcanary/internal/metrics"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
	"github.com/ragcanary/ragcanary/internal/shard"
	"github.com/ragcanary/ragcanary/internal/target"
)

// shardTestNamespace and shardSuiteNamespace are where the sharded
// replicas of TestShardedReplicas and TestShardedSuiteMoves work; the
// suite's own manager leaves them alone, or it would act on the same
// canaries and suites.
const (
	shardTestNamespace  = "ragcanary-shard-test"
	shardSuiteNamespace = "ragcanary-shard-suite"
)

func withoutShardTestNamespace(opts cache.Options) cache.Options {
	opts.DefaultFieldSelector = fields.AndSelectors(
		fields.OneTermNotEqualSelector("metadata.namespace", shardTestNamespace),
		fields.OneTermNotEqualSelector("metadata.namespace", shardSuiteNamespace))
	return opts
}

// probeLog records, per request reaching the target, the replica named in
// its User-Agent and when it started and ended.
type probeLog struct {
	mu       sync.Mutex
	requests []probeRequest
}

type probeRequest struct {
	replica    string
	agent      string
	path       string
	start, end time.Time
}

// front is a reverse proxy to the target that records every request.
func (l *probeLog) front(t *testing.T, upstream string) string {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := probeRequest{agent: r.UserAgent(), path: r.URL.Path, start: time.Now()}
		if i := strings.LastIndex(req.agent, " ("); i > 0 && strings.HasSuffix(req.agent, ")") {
			req.replica = req.agent[i+2 : len(req.agent)-1]
		}
		proxy.ServeHTTP(w, r)
		req.end = time.Now()
		l.mu.Lock()
		l.requests = append(l.requests, req)
		l.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func (l *probeLog) snapshot() []probeRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]probeRequest(nil), l.requests...)
}

func (l *probeLog) count(replica string) int {
	n := 0
	for _, r := range l.snapshot() {
		if r.replica == replica {
			n++
		}
	}
	return n
}

// forgetLog records the canaries a replica forgot, with how many of their
// series were left right after.
type forgetLog struct {
	mu     sync.Mutex
	forgot map[string]int
}

// startReplica runs a sharded manager named name, caching only its share
// of the shard test namespace, until the test ends.
func startReplica(t *testing.T, name string, forgets *forgetLog) {
	t.Helper()
	startReplicaIn(t, shardTestNamespace, name, forgets, clocktesting.NewFakeClock(time.Now()))
}

// startReplicaIn runs a sharded manager named name, caching only its share
// of namespace ns and scheduling on clk, until the returned stop or the
// end of the test.
func startReplicaIn(t *testing.T, ns, name string, forgets *forgetLog, clk *clocktesting.FakeClock) (stop func()) {
	t.Helper()
	replica := shard.Replica{Name: name, Sharded: true}
	cacheOpts := shared.CacheOptions("")
	cacheOpts.DefaultNamespaces = map[string]cache.Config{ns: {}}
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:                  testScheme,
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		LeaderElection:          true,
		LeaderElectionID:        "ragcanary-shard-test",
		LeaderElectionNamespace: ns,
		Cache:                   shared.ShardedCache(cacheOpts, replica),
		Controller:              config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	door := testDoor(mgr.GetAPIReader(), nil)
	door.UserAgent = target.UserAgent(name)
	opts, err := completeOptions(mgr, shared.Options{
		Door: door, Shard: replica,
		ScheduleClock: clk,
		ForgetCanary: func(ns, canary string) {
			metrics.Forget(ns, canary)
			forgets.mu.Lock()
			defer forgets.mu.Unlock()
			forgets.forgot[ns+"/"+canary] = countSeries(t, ns, canary)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := setupReconcilers(mgr, opts); err != nil {
		t.Fatal(err)
	}
	if err := shared.SetupSharding(mgr, shared.ShardingOptions{Replica: replica, Namespace: ns,
		WatchNamespace: ns, LeaseDuration: 3 * time.Second, RenewInterval: time.Second}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("replica %s: %v", name, err)
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// TestShardedReplicas runs two sharded replicas against the one API
// server: a canary is probed by exactly one replica at a time; when a
// second replica joins and the ring gives it the canary, the first stops
// probing before the second starts (no overlapping probes), the run goes
// on where it was rather than starting over, and the first replica forgot
// the canary's series before letting it go.
func TestShardedReplicas(t *testing.T) {
	ctx := context.Background()
	if err := k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: shardTestNamespace}}); err != nil {
		t.Fatal(err)
	}
	// The revocation never reaches the index: the run keeps probing for
	// exclusion until the test is done.
	tg := startCRTargetWith(t, ragtarget.Config{}, crTargetOptions{hold: true})
	probes := &probeLog{}
	front := probes.front(t, tg.URL)
	crFixtureIn(t, k8sClient, shardTestNamespace, front)

	name := canaryMovingTo("r-2", []string{"r-1", "r-2"})
	forgets := &forgetLog{forgot: map[string]int{}}
	startReplica(t, "r-1", forgets)
	canary := shardTestCanary(name)
	if err := k8sClient.Create(ctx, canary); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), canary) })

	run := waitShardRun(t, name, "r-1", v1alpha1.PhaseAwaitingExclusion)
	testutil.Eventually(t, eventuallyTimeout, "r-1 probes", func() error {
		if n := probes.count("r-1"); n < 3 {
			return fmt.Errorf("%d requests from r-1", n)
		}
		return nil
	})
	startReplica(t, "r-2", forgets)
	waitShardRun(t, name, "r-2", v1alpha1.PhaseAwaitingExclusion)
	testutil.Eventually(t, eventuallyTimeout, "r-2 probes", func() error {
		if n := probes.count("r-2"); n < 3 {
			return fmt.Errorf("%d requests from r-2", n)
		}
		return nil
	})

	checkNoOverlap(t, probes.snapshot())
	var runs v1alpha1.CanaryRunList
	if err := k8sClient.List(ctx, &runs, client.InNamespace(shardTestNamespace)); err != nil {
		t.Fatal(err)
	}
	if len(runs.Items) != 1 || runs.Items[0].UID != run.UID {
		t.Errorf("%d runs after the move, want the one run %s carried over", len(runs.Items), run.Name)
	}
	forgets.mu.Lock()
	left, forgot := forgets.forgot[shardTestNamespace+"/"+name]
	forgets.mu.Unlock()
	if !forgot {
		t.Errorf("no replica forgot the series of canary %s when it moved", name)
	} else if left != 0 {
		t.Errorf("%d series of canary %s remained on r-1 after it let the canary go", left, name)
	}
}

// checkNoOverlap checks every request came from a named replica and that
// r-1's requests all ended before r-2's first began.
func checkNoOverlap(t *testing.T, reqs []probeRequest) {
	t.Helper()
	var lastR1 time.Time
	firstR2 := time.Time{}
	for _, r := range reqs {
		switch r.replica {
		case "r-1":
			if r.end.After(lastR1) {
				lastR1 = r.end
			}
		case "r-2":
			if firstR2.IsZero() || r.start.Before(firstR2) {
				firstR2 = r.start
			}
		default:
			t.Errorf("request with User-Agent %q names no replica", r.agent)
		}
	}
	if !lastR1.Before(firstR2) {
		t.Errorf("probes overlapped: r-1's last request ended %s, r-2's first started %s", lastR1, firstR2)
	}
}

// canaryMovingTo picks a canary name the ring over replicas gives to want.
func canaryMovingTo(want string, replicas []string) string {
	return nameMovingTo(shardTestNamespace, "moving", want, replicas)
}

// nameMovingTo picks a name in ns the ring over replicas gives to want.
func nameMovingTo(ns, prefix, want string, replicas []string) string {
	for i := 0; ; i++ {
		name := fmt.Sprintf("%s-%d", prefix, i)
		if shard.Assign(ns+"/"+name, replicas) == want {
			return name
		}
	}
}

// shardTestCanary is an hourly canary that runs once now (run-now).
func shardTestCanary(name string) *v1alpha1.RevocationCanary {
	canary := objects.RevocationCanary(shardTestNamespace, name, time.Hour, onTarget, objects.Timeouts(20*time.Second, 5*time.Minute))
	canary.Annotations = map[string]string{v1alpha1.AnnotationRunNow: "first"}
	return canary
}

// waitShardRun waits for the canary's one run to be owned by owner (as is
// the canary) and in phase.
func waitShardRun(t *testing.T, canary, owner string, phase v1alpha1.CanaryPhase) *v1alpha1.CanaryRun {
	t.Helper()
	var got *v1alpha1.CanaryRun
	testutil.Eventually(t, eventuallyTimeout, "the run owned by "+owner+" in "+string(phase), func() error {
		var c v1alpha1.RevocationCanary
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: shardTestNamespace, Name: canary}, &c); err != nil {
			return err
		}
		if c.Labels[v1alpha1.LabelShardOwner] != owner {
			return fmt.Errorf("canary owned by %q", c.Labels[v1alpha1.LabelShardOwner])
		}
		var runs v1alpha1.CanaryRunList
		if err := k8sClient.List(context.Background(), &runs, client.InNamespace(shardTestNamespace)); err != nil {
			return err
		}
		if len(runs.Items) != 1 {
			return fmt.Errorf("%d runs", len(runs.Items))
		}
		r := runs.Items[0]
		if r.Labels[v1alpha1.LabelShardOwner] != owner || r.Status.Phase != phase {
			return fmt.Errorf("run owned by %q in phase %q", r.Labels[v1alpha1.LabelShardOwner], r.Status.Phase)
		}
		got = &r
		return nil
	})
	return got
}
