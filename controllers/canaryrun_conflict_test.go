package controllers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/controllers/canaryrun"
	"github.com/ragcanary/ragcanary/controllers/shared"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/probe"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
	"github.com/ragcanary/ragcanary/internal/shard"
	"github.com/ragcanary/ragcanary/internal/target"
)

// conflictTimeout bounds a conflict test's wait for its runs: ten runs
// probe at once on a loaded machine.
const conflictTimeout = 90 * time.Second

// sideEffect is one kind of call a run makes on its canary document.
type sideEffect string

const (
	effectCreate      sideEffect = "create"      // PUT /v1/documents/rc-…
	effectGrant       sideEffect = "grant"       // PUT /v1/documents/rc-…/grants/…
	effectRemoveGrant sideEffect = "removeGrant" // DELETE /v1/documents/rc-…/grants/…
	effectDelete      sideEffect = "delete"      // DELETE /v1/documents/rc-…
)

var sideEffects = []sideEffect{effectCreate, effectGrant, effectRemoveGrant, effectDelete}

// effectCounter sits in front of a crTarget and counts the calls that
// change a canary document, with when each arrived.
type effectCounter struct {
	mu    sync.Mutex
	calls map[sideEffect][]time.Time
}

// countEffects puts a counting proxy in front of tg and returns its URL,
// for the Corpus the fixture creates to name.
func countEffects(t *testing.T, tg *crTarget) (*effectCounter, string) {
	t.Helper()
	upstream, err := url.Parse(tg.URL)
	if err != nil {
		t.Fatal(err)
	}
	c := &effectCounter{calls: map[sideEffect][]time.Time{}}
	proxy := httputil.NewSingleHostReverseProxy(upstream)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e, ok := effectOf(r); ok {
			c.mu.Lock()
			c.calls[e] = append(c.calls[e], time.Now())
			c.mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return c, srv.URL
}

func effectOf(r *http.Request) (sideEffect, bool) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/documents/"+canaryrun.DocumentIDPrefix)
	if !ok {
		return "", false
	}
	grant := strings.Contains(rest, "/grants/")
	switch {
	case r.Method == http.MethodPut && grant:
		return effectGrant, true
	case r.Method == http.MethodPut:
		return effectCreate, true
	case r.Method == http.MethodDelete && grant:
		return effectRemoveGrant, true
	case r.Method == http.MethodDelete:
		return effectDelete, true
	}
	return "", false
}

// counts is how many calls of each kind arrived.
func (c *effectCounter) counts() map[sideEffect]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[sideEffect]int{}
	for _, e := range sideEffects {
		out[e] = len(c.calls[e])
	}
	return out
}

// gaps says how far apart repeated calls of a kind arrived, for the log.
func (c *effectCounter) gaps(e sideEffect) []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Duration
	for i := 1; i < len(c.calls[e]); i++ {
		out = append(out, c.calls[e][i].Sub(c.calls[e][i-1]))
	}
	return out
}

// conflictInjector makes one write of each run conflict, for real: just
// before the write that enters the run's chosen phase reaches the API
// server, it patches the run's labels (a drain when sharded, any label
// otherwise), so the write's optimistic lock names a resourceVersion that
// is no longer current and the API server answers 409 Conflict, as it does
// when a sharder drains a run at the moment its owner writes status.
type conflictInjector struct {
	// at is the phase whose entering write conflicts, by run namespace.
	at map[string]v1alpha1.CanaryPhase
	// label is the label the injected patch sets.
	label string

	// behind lists the runs (by namespace) whose cached copy is once read
	// a write behind: the first read in AwaitingExclusion returns the run
	// as Revoking stored it, before the revocation was acknowledged.
	behind map[string]bool

	mu       sync.Mutex
	injected map[string]bool
	// revoking is each run as the write that requested its revocation
	// stored it.
	revoking map[string]*v1alpha1.CanaryRun
}

func newConflictInjector(label string) *conflictInjector {
	return &conflictInjector{at: map[string]v1alpha1.CanaryPhase{}, label: label, behind: map[string]bool{},
		injected: map[string]bool{}, revoking: map[string]*v1alpha1.CanaryRun{}}
}

// wrote notes a run's stored copy after a successful status write.
func (ci *conflictInjector) wrote(obj client.Object) {
	run, ok := obj.(*v1alpha1.CanaryRun)
	if !ok || !ci.behind[run.Namespace] || run.Status.Phase != v1alpha1.PhaseRevoking || run.Status.RevokeRequestedTime == nil {
		return
	}
	ci.mu.Lock()
	defer ci.mu.Unlock()
	ci.revoking[run.Namespace] = run.DeepCopy()
}

// stale returns, once per run, the copy a cache one write behind holds
// when the run just entered AwaitingExclusion.
func (ci *conflictInjector) stale(obj client.Object) (*v1alpha1.CanaryRun, bool) {
	run, ok := obj.(*v1alpha1.CanaryRun)
	if !ok || !ci.behind[run.Namespace] || run.Status.Phase != v1alpha1.PhaseAwaitingExclusion {
		return nil, false
	}
	ci.mu.Lock()
	defer ci.mu.Unlock()
	old, ok := ci.revoking[run.Namespace]
	if !ok || ci.injected[run.Namespace] {
		return nil, false
	}
	ci.injected[run.Namespace] = true
	return old, true
}

// due reports, once per run, whether obj is the write to make conflict.
func (ci *conflictInjector) due(obj client.Object) bool {
	run, ok := obj.(*v1alpha1.CanaryRun)
	if !ok {
		return false
	}
	ci.mu.Lock()
	defer ci.mu.Unlock()
	want, ok := ci.at[run.Namespace]
	if !ok || ci.injected[run.Namespace] || run.Status.Phase != want {
		return false
	}
	ci.injected[run.Namespace] = true
	return true
}

// wasInjected reports whether the run in ns had its conflict.
func (ci *conflictInjector) wasInjected(ns string) bool {
	ci.mu.Lock()
	defer ci.mu.Unlock()
	return ci.injected[ns]
}

// bump is the concurrent label patch; it goes to the API server directly.
func (ci *conflictInjector) bump(ctx context.Context, c client.Client, obj client.Object) error {
	other := &v1alpha1.CanaryRun{ObjectMeta: metav1.ObjectMeta{Namespace: obj.GetNamespace(), Name: obj.GetName()}}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, ci.label)
	return c.Patch(ctx, other, client.RawPatch(types.MergePatchType, []byte(patch)))
}

// funcs conflict the status write that enters a run's phase and, for
// Planting (whose status waits for Sharing's write), the finalizer patch
// planting sends before it writes anything to the target.
func (ci *conflictInjector) funcs() interceptor.Funcs {
	return interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			if sub == "status" && ci.due(obj) {
				if err := ci.bump(ctx, c, obj); err != nil {
					return err
				}
			}
			if err := c.SubResource(sub).Patch(ctx, obj, p, opts...); err != nil {
				return err
			}
			ci.wrote(obj)
			return nil
		},
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			if old, ok := ci.stale(obj); ok {
				*obj.(*v1alpha1.CanaryRun) = *old
			}
			return nil
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			if run, ok := obj.(*v1alpha1.CanaryRun); ok && run.Status.Phase == v1alpha1.PhasePlanting && ci.due(obj) {
				if err := ci.bump(ctx, c, obj); err != nil {
					return err
				}
			}
			return c.Patch(ctx, obj, p, opts...)
		},
	}
}

// startConflictOperator starts an operator on cfg whose client goes
// through funcs (none: a plain client), as replica when sharded.
func startConflictOperator(t *testing.T, cfg *rest.Config, replica shard.Replica, funcs *interceptor.Funcs) {
	t.Helper()
	opts := ctrl.Options{
		Scheme:                 testScheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  shared.ShardedCache(shared.CacheOptions(""), replica),
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.RealClock{}
	engine := probe.NewEngine(clk, target.NewLimiters(clk))
	if err := mgr.Add(engine); err != nil {
		t.Fatal(err)
	}
	var c client.Client = mgr.GetClient()
	if funcs != nil {
		c = interceptor.NewClient(noWatch{c}, *funcs)
	}
	r := &canaryrun.CanaryRunReconciler{Client: c, APIReader: mgr.GetAPIReader(), Secrets: mgr.GetAPIReader(),
		Door: testDoor(mgr.GetAPIReader(), engine.Limiters()), Clock: clk, Probes: engine,
		Checkpoint: time.Minute, Recorder: mgr.GetEventRecorder("canaryrun-controller"), Shard: replica}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("operator stopped: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// noWatch lets the manager's client be intercepted: the reconciler never
// watches through it.
type noWatch struct{ client.Client }

func (noWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("no watch through the reconciler's client")
}

// reassign plays the sharder for the sharded case: a run its owner
// released (no owner, no drain label) goes to replica to.
func reassign(t *testing.T, c client.Client, to string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			var runs v1alpha1.CanaryRunList
			if err := c.List(ctx, &runs); err != nil {
				continue
			}
			for i := range runs.Items {
				run := &runs.Items[i]
				if _, owned := run.Labels[v1alpha1.LabelShardOwner]; owned || isTerminal(run.Status.Phase) && len(run.Finalizers) == 0 {
					continue
				}
				patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, v1alpha1.LabelShardOwner, to)
				_ = c.Patch(ctx, run, client.RawPatch(types.MergePatchType, []byte(patch)))
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// conflictCase is one run: its phase whose write conflicts ("" for none).
type conflictCase struct {
	at       v1alpha1.CanaryPhase
	sentinel bool
	// behind: the run's cached copy is once read a write behind instead.
	behind bool
}

func (c conflictCase) name() string {
	kind := "run"
	if c.sentinel {
		kind = "sentinel"
	}
	if c.behind {
		return kind + " read a write behind in AwaitingExclusion"
	}
	if c.at == "" {
		return kind + " without conflict"
	}
	return kind + " conflicting at " + string(c.at)
}

// TestCanaryRunStatusConflictActsOnce makes one write of each run conflict
// with a concurrent label patch (a drain when sharded, where another
// replica then takes the run over): at the finalizer patch planting sends,
// and at the status write entering each later phase. A run must never act
// on state its write did not persist: each run creates, grants, removes
// the grant and deletes its document exactly as often as a run without a
// conflict, and ends with the same verdict and an interval as tight around
// the true exclusion. One more run reads its cached copy a write behind
// once, right after entering AwaitingExclusion (a probe transition queued
// right after its own write): it must not revoke again.
func TestCanaryRunStatusConflictActsOnce(t *testing.T) {
	cases := []conflictCase{
		{at: ""},
		{at: v1alpha1.PhasePlanting},
		{at: v1alpha1.PhaseSharing},
		{at: v1alpha1.PhaseAwaitingVisibility},
		{at: v1alpha1.PhaseRevoking},
		{at: v1alpha1.PhaseAwaitingExclusion},
		{at: v1alpha1.PhaseCleaningUp},
		{at: v1alpha1.PhaseSucceeded},
		{behind: true},
		{sentinel: true},
		{sentinel: true, at: v1alpha1.PhaseWatching},
	}
	for _, sharded := range []bool{false, true} {
		t.Run(fmt.Sprintf("sharded=%t", sharded), func(t *testing.T) {
			t.Parallel() // each has its own API server and operators
			cfg, c := startOwnAPIServer(t)
			label := "test.ragcanary.dev/touched"
			if sharded {
				label = v1alpha1.LabelShardDrain
			}
			ci := newConflictInjector(label)
			type started struct {
				conflictCase
				ns      string
				run     *v1alpha1.CanaryRun
				tg      *crTarget
				effects *effectCounter
			}
			var runs []started
			for _, cc := range cases {
				tg := startCRTarget(t, ragtarget.Config{}, 300*time.Millisecond, false)
				effects, front := countEffects(t, tg)
				ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "conflict-"}}
				crCreateIn(t, c, ns)
				crFixtureIn(t, c, ns.Name, front)
				run := crRunSpec(ns.Name, 30*time.Second, v1alpha1.SurfaceSearch)
				if cc.sentinel {
					run.Spec.Sentinel = &v1alpha1.Sentinel{Lifetime: metav1.Duration{Duration: 2 * time.Second}}
					run.Spec.Probing.MaxInterval = metav1.Duration{Duration: time.Second}
				}
				if sharded {
					run.Labels = map[string]string{v1alpha1.LabelShardOwner: "a"}
				}
				if cc.at != "" {
					ci.at[ns.Name] = cc.at
				}
				ci.behind[ns.Name] = cc.behind
				runs = append(runs, started{conflictCase: cc, ns: ns.Name, run: run, tg: tg, effects: effects})
			}
			funcs := ci.funcs()
			if sharded {
				startConflictOperator(t, cfg, shard.Replica{Name: "a", Sharded: true}, &funcs)
				startConflictOperator(t, cfg, shard.Replica{Name: "b", Sharded: true}, nil)
				reassign(t, c, "b")
			} else {
				startConflictOperator(t, cfg, shard.Replica{}, &funcs)
			}
			for _, r := range runs {
				crCreateIn(t, c, r.run)
			}

			baseline := map[bool]map[sideEffect]int{}
			var baseVerdict = map[bool]v1alpha1.Verdict{}
			for _, r := range runs {
				var got *v1alpha1.CanaryRun
				testutil.Eventually(t, conflictTimeout, r.name()+" finished", func() error {
					got = crGetIn(t, c, r.run)
					if !isTerminal(got.Status.Phase) || len(got.Finalizers) > 0 {
						return fmt.Errorf("phase %q (%s), finalizers %v", got.Status.Phase, got.Status.Message, got.Finalizers)
					}
					return nil
				})
				counts := r.effects.counts()
				t.Logf("%s: verdict %s, calls %v, removeGrant gaps %v, delete gaps %v", r.name(), got.Status.Verdict,
					counts, r.effects.gaps(effectRemoveGrant), r.effects.gaps(effectDelete))
				if r.at == "" && !r.behind {
					baseline[r.sentinel], baseVerdict[r.sentinel] = counts, got.Status.Verdict
					// The revocation removes the grant, and cleanup removes
					// it again whatever happened before; a sentinel is
					// never revoked.
					want := map[sideEffect]int{effectCreate: 1, effectGrant: 1, effectRemoveGrant: 2, effectDelete: 1}
					if r.sentinel {
						want[effectRemoveGrant] = 1
					}
					for _, e := range sideEffects {
						if counts[e] != want[e] {
							t.Errorf("%s: %d %s calls, want %d", r.name(), counts[e], e, want[e])
						}
					}
				} else if !ci.wasInjected(r.ns) {
					t.Errorf("%s: nothing was injected through the reconciler's client: the case tests nothing", r.name())
				}
				if want := baseline[r.sentinel]; r.at != "" || r.behind {
					for _, e := range sideEffects {
						if counts[e] != want[e] {
							t.Errorf("%s: %d %s calls (gaps %v), want %d as without a conflict", r.name(), counts[e], e, r.effects.gaps(e), want[e])
						}
					}
					if got.Status.Verdict != baseVerdict[r.sentinel] {
						t.Errorf("%s: verdict %s (%s), want %s as without a conflict", r.name(), got.Status.Verdict, got.Status.Message, baseVerdict[r.sentinel])
					}
				}
				// A run drained once it finished is released, not reassigned.
				if owner := got.Labels[v1alpha1.LabelShardOwner]; sharded && r.at != "" && owner == "a" {
					t.Errorf("%s: still owned by a at the end: the drain did not hand the run over", r.name())
				}
				if !r.sentinel {
					assertTightInterval(t, r.name(), got, r.tg)
				}
			}
		})
	}
}

// assertTightInterval checks the run's interval contains the sync that
// applied the revocation and is no looser around it than a run without a
// conflict: the last sighting within a second before the sync, the first
// confirmed absence within 1.5 s after it (crAssertInterval's tolerance).
func assertTightInterval(t *testing.T, name string, run *v1alpha1.CanaryRun, tg *crTarget) {
	t.Helper()
	if run.Status.RevokeRequestedTime == nil || run.Status.RevokeAcknowledgedTime == nil || len(run.Status.Surfaces) != 1 {
		t.Errorf("%s: no revocation or surface measured: %+v", name, run.Status)
		return
	}
	m := run.Status.Surfaces[0]
	if m.Bounds == nil || m.Bounds.Lower == nil || m.Bounds.Upper == nil {
		t.Errorf("%s: no complete interval: %+v", name, m.Bounds)
		return
	}
	start, end := tg.appliedRevocation()
	req, ack := run.Status.RevokeRequestedTime.Time, run.Status.RevokeAcknowledgedTime.Time
	lastSeen, firstGone := ack.Add(m.Bounds.Lower.Duration), req.Add(m.Bounds.Upper.Duration)
	t.Logf("%s: interval [%s, %s], width %s, sync took %s", name, m.Bounds.Lower.Duration, m.Bounds.Upper.Duration,
		firstGone.Sub(lastSeen), end.Sub(start))
	if lastSeen.After(start) || firstGone.Before(end) {
		t.Errorf("%s: interval [%s, %s] does not contain the sync at [%s, %s] after the request", name,
			lastSeen.Sub(req), firstGone.Sub(req), start.Sub(req), end.Sub(req))
	}
	if lastSeen.Before(start.Add(-time.Second)) || firstGone.After(end.Add(1500*time.Millisecond)) {
		t.Errorf("%s: interval [%s, %s] is loose around the sync at [%s, %s]", name,
			lastSeen.Sub(req), firstGone.Sub(req), start.Sub(req), end.Sub(req))
	}

}
