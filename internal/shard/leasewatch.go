package shard

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LeaseWatch follows the shard Leases and notes when this process saw each
// renewal. Liveness is judged by renewals observed, not by the renewer's
// timestamp, so clock skew between nodes cannot kill or revive a replica.
//
// Every replica runs one, leader or not: a replica elected after the
// leader died has then watched the Leases all along and can move the dead
// leader's share as soon as that Lease has gone a LeaseDuration without a
// renewal, instead of first watching for a LeaseDuration of its own.
type LeaseWatch struct {
	Config *rest.Config
	Scheme *runtime.Scheme
	Mapper meta.RESTMapper
	// Namespace holds the shard Leases.
	Namespace string
	// LeaseDuration is how long a Lease lives without an observed renewal
	// when it does not say; DefaultLeaseDuration when zero.
	LeaseDuration time.Duration
	Clock         clock.Clock

	once   sync.Once
	synced chan struct{}
	mu     sync.Mutex
	seen   map[string]observation
	// left are the replicas that said they left (Left), by Lease name.
	left map[string]bool
	// changed is called when a Lease appears or goes.
	changed []func()
	cache   cache.Cache
}

// observation is the last renew time seen on a Lease and when, by this
// process's clock.
type observation struct {
	renew    string
	at       time.Time
	duration time.Duration
}

// NeedLeaderElection is false: a sharder elected later needs the
// observations made before.
func (w *LeaseWatch) NeedLeaderElection() bool { return false }

func (w *LeaseWatch) init() {
	w.once.Do(func() {
		if w.LeaseDuration <= 0 {
			w.LeaseDuration = DefaultLeaseDuration
		}
		if w.Clock == nil {
			w.Clock = clock.RealClock{}
		}
		w.synced = make(chan struct{})
		w.seen = map[string]observation{}
		w.left = map[string]bool{}
	})
}

// Left notes that replica left: it is not live from now on, whatever its
// Lease says or this watch, which may be stopping, still holds.
func (w *LeaseWatch) Left(replica string) {
	w.init()
	w.mu.Lock()
	w.left[LeaseName(replica)] = true
	w.mu.Unlock()
	w.notify()
}

// OnChange calls f whenever a shard Lease appears or goes.
func (w *LeaseWatch) OnChange(f func()) {
	w.init()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.changed = append(w.changed, f)
}

func (w *LeaseWatch) notify() {
	w.mu.Lock()
	fs := slices.Clone(w.changed)
	w.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// Start watches the shard Leases until ctx ends.
func (w *LeaseWatch) Start(ctx context.Context) error {
	w.init()
	c, err := cache.New(w.Config, cache.Options{
		Scheme: w.Scheme, Mapper: w.Mapper,
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&coordinationv1.Lease{}: {
				Namespaces: map[string]cache.Config{w.Namespace: {}},
				Label:      labels.SelectorFromSet(labels.Set{v1alpha1.LabelShardLease: "true"}),
			},
		},
	})
	if err != nil {
		return err
	}
	inf, err := c.GetInformer(ctx, &coordinationv1.Lease{})
	if err != nil {
		return err
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { w.observe(o); w.notify() },
		DeleteFunc: func(any) { w.notify() },
		// A renewal only extends a life: the sharder's pass at expiry
		// looks again.
		UpdateFunc: func(_, n any) { w.observe(n) },
	}); err != nil {
		return err
	}
	w.cache = c
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("shard: the shard Lease cache did not sync: %w", <-done)
	}
	close(w.synced)
	return <-done
}

// waitSynced waits until the Leases are in the cache.
func (w *LeaseWatch) waitSynced(ctx context.Context) error {
	w.init()
	select {
	case <-w.synced:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("shard: the shard Lease cache has not synced: %w", ctx.Err())
	}
}

// observe records a Lease's renew time when it changed.
func (w *LeaseWatch) observe(o any) {
	lease, ok := o.(*coordinationv1.Lease)
	if !ok {
		return
	}
	renew := ""
	if lease.Spec.RenewTime != nil {
		renew = lease.Spec.RenewTime.UTC().Format(time.RFC3339Nano)
	}
	d := w.LeaseDuration
	if sec := ptr.Deref(lease.Spec.LeaseDurationSeconds, 0); sec > 0 {
		d = time.Duration(sec) * time.Second
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if prev, ok := w.seen[lease.Name]; ok && prev.renew == renew {
		return
	}
	w.seen[lease.Name] = observation{renew: renew, at: w.Clock.Now(), duration: d}
}

// Live returns the replicas whose Lease was renewed within its duration, as
// observed, sorted, and how long until the first of them expires (at most
// horizon).
func (w *LeaseWatch) Live(ctx context.Context, horizon time.Duration) ([]string, time.Duration, error) {
	if err := w.waitSynced(ctx); err != nil {
		return nil, 0, err
	}
	var leases coordinationv1.LeaseList
	if err := w.cache.List(ctx, &leases, client.InNamespace(w.Namespace)); err != nil {
		return nil, 0, err
	}
	now := w.Clock.Now()
	next := horizon
	var out []string
	present := map[string]bool{}
	for i := range leases.Items {
		l := &leases.Items[i]
		if !strings.HasPrefix(l.Name, LeasePrefix) {
			continue
		}
		w.observe(l)
		present[l.Name] = true
		w.mu.Lock()
		obs, gone := w.seen[l.Name], w.left[l.Name]
		w.mu.Unlock()
		if left := obs.at.Add(obs.duration).Sub(now); left > 0 && obs.renew != "" && !gone {
			out = append(out, strings.TrimPrefix(l.Name, LeasePrefix))
			next = min(next, left)
		}
	}
	w.forgetGone(present)
	slices.Sort(out)
	return out, next, nil
}

func (w *LeaseWatch) forgetGone(present map[string]bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for name := range w.seen {
		if !present[name] {
			delete(w.seen, name)
		}
	}
}
