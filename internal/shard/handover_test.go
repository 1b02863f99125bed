package shard

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
)

// Leader election and shard Lease timings for the handover test: short,
// so a dead leader is replaced within seconds.
const (
	handoverLease = 2 * time.Second
	handoverRenew = 500 * time.Millisecond
)

// leading is a Sharder that records when its manager ran it (only the
// elected replica's runs) and when it returned.
type leading struct {
	*Sharder
	started chan struct{}
	mu      *sync.Mutex
	from    *time.Time
	until   *time.Time
}

func (l leading) Start(ctx context.Context) error {
	l.mu.Lock()
	*l.from = time.Now()
	l.mu.Unlock()
	close(l.started)
	defer func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		*l.until = time.Now()
	}()
	return l.Sharder.Start(ctx)
}

// replicaManager is one replica as cmd/manager wires it for sharding: a
// manager electing a leader, a shard Lease keeper on every replica and a
// sharder on the leader.
type replicaManager struct {
	name    string
	leads   chan struct{}
	stop    func()
	stopped bool
	// from and until are when its sharder ran.
	mu          sync.Mutex
	from, until time.Time
}

func startReplicaManager(t *testing.T, ns, name string) *replicaManager {
	t.Helper()
	return startReplicaManagerTimed(t, ns, name, replicaTiming{lease: handoverLease, renew: handoverRenew})
}

// replicaTiming is a replica's shard Lease duration and renew interval,
// and its drain bound (zero: it leaves as on a crash, its Lease expiring).
type replicaTiming struct{ lease, renew, drain time.Duration }

func startReplicaManagerTimed(t *testing.T, ns, name string, timing replicaTiming) *replicaManager {
	t.Helper()
	mgr, err := ctrl.NewManager(testCfg, ctrl.Options{
		Scheme:                  testScheme,
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		LeaderElection:          true,
		LeaderElectionID:        "ragcanary-handover-test",
		LeaderElectionNamespace: ns,
		LeaseDuration:           ptr.To(handoverLease),
		RenewDeadline:           ptr.To(handoverLease * 3 / 4),
		RetryPeriod:             ptr.To(handoverRenew / 2),
	})
	if err != nil {
		t.Fatal(err)
	}
	leases := &LeaseWatch{Config: testCfg, Scheme: testScheme, Mapper: mgr.GetRESTMapper(),
		Namespace: ns, LeaseDuration: timing.lease}
	keeper := &Keeper{Client: testClient, Namespace: ns, Replica: name,
		LeaseDuration: timing.lease, RenewInterval: timing.renew,
		Drain: timing.drain, Kinds: testKinds, Leases: leases}
	r := &replicaManager{name: name}
	sharder := leading{started: make(chan struct{}), mu: &r.mu, from: &r.from, until: &r.until, Sharder: &Sharder{
		Config: testCfg, Scheme: testScheme, Mapper: mgr.GetRESTMapper(), Client: testClient,
		Namespace: ns, WatchNamespace: ns, Kinds: testKinds, LeaseDuration: timing.lease, Leases: leases}}
	for _, runnable := range []manager.Runnable{keeper, leases} {
		if err := mgr.Add(runnable); err != nil {
			t.Fatal(err)
		}
	}
	if err := mgr.Add(sharder); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	r.leads = sharder.started
	r.stop = func() {
		if r.stopped {
			return
		}
		r.stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("replica %s: %v", name, err)
		}
	}
	t.Cleanup(r.stop)
	return r
}

func (r *replicaManager) leading() bool {
	select {
	case <-r.leads:
		return true
	default:
		return false
	}
}

// waitLeader waits until exactly one of the replicas runs its sharder.
func waitLeader(t *testing.T, replicas ...*replicaManager) (leader, follower *replicaManager) {
	t.Helper()
	testutil.Eventually(t, waitTimeout, "one replica elected", func() error {
		var leaders []*replicaManager
		for _, r := range replicas {
			if r.leading() {
				leaders = append(leaders, r)
			}
		}
		if len(leaders) != 1 {
			return fmt.Errorf("%d replicas run a sharder", len(leaders))
		}
		leader = leaders[0]
		return nil
	})
	for _, r := range replicas {
		if r != leader {
			follower = r
		}
	}
	return leader, follower
}

// TestSharderLeaderHandover kills the elected replica (manager, sharder
// and shard Lease keeper; its leader Lease is not released, as on a crash)
// while drains it asked for are still open. The other replica is elected,
// its sharder goes on: the dead leader's share is released and reassigned
// once its shard Lease expires, the drains the old leader opened are
// finished (one toward a live owner once that owner lets go, one from the
// dead owner at once), canaries created after the death get owners, and no
// object ever moves straight from a live owner to another or ends
// draining; only the dead leader's objects are taken over in one patch,
// by the new leader's first passes.
func TestSharderLeaderHandover(t *testing.T) {
	ns := newNamespace(t)
	names := canaryNames(16)
	for _, n := range names {
		createCanary(t, ns, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	history := watchOwners(ctx, t, ns)

	a := startReplicaManager(t, ns, "r-a")
	b := startReplicaManager(t, ns, "r-b")
	assignedAsRing(t, ns, names, []string{"r-a", "r-b"})
	leader, follower := waitLeader(t, a, b)

	// A third replica joins; the leader asks the owners of what moves to
	// it to drain, and nobody answers yet.
	keep(t, ns, "r-c", handoverLease, handoverRenew)
	moving := movingTo(ns, names, "r-c", []string{"r-a", "r-b", "r-c"})
	if len(moving) == 0 {
		t.Fatal("no canary moves to r-c: pick other names")
	}
	testutil.Eventually(t, waitTimeout, "drains asked for everything moving to r-c", func() error {
		return drainsAsked(ns, moving)
	})

	leader.stop()
	waitLeader(t, follower)
	leader.mu.Lock()
	follower.mu.Lock()
	if !leader.until.Before(follower.from) {
		t.Errorf("sharders overlapped: the old leader's ran until %s, the new one's from %s", leader.until, follower.from)
	}
	follower.mu.Unlock()
	leader.mu.Unlock()
	later := []string{"later-0", "later-1", "later-2"}
	for _, n := range later {
		createCanary(t, ns, n)
	}
	// The surviving owner lets go of what it was asked to drain, as its
	// reconcilers would; the dead one cannot.
	testutil.Eventually(t, waitTimeout, "the survivor released its drained objects", func() error {
		return releaseDrained(ns, follower.name)
	})
	all := append(append([]string{}, names...), later...)
	assignedAsRing(t, ns, all, []string{follower.name, "r-c"})
	if err := drainsLeft(ns); err != nil {
		t.Error(err)
	}
	cancel()
	follower.mu.Lock()
	elected := follower.from
	follower.mu.Unlock()
	taken := 0
	for name, states := range history() {
		if err := noDirectMove(states, leader.name); err != nil {
			t.Errorf("%s: %v (versions %+v)", name, err, states)
		}
		moved, err := takenSoonAfter(states, leader.name, elected.Add(handoverLease*9/10))
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if moved {
			taken++
		}
	}
	if taken == 0 {
		t.Errorf("no object left the dead leader %s", leader.name)
	}
}

// takenSoonAfter checks an object dead owned had a new owner by deadline.
// The new leader watched the shard Leases before it was elected, so the
// dead leader's Lease is seen expired when its sharder starts or soon
// after: its first passes move the share. A sharder that began observing
// only once elected could not move it before a whole Lease had passed.
func takenSoonAfter(states []ownerState, dead string, deadline time.Time) (moved bool, err error) {
	for i := 1; i < len(states); i++ {
		if states[i-1].owner == dead && states[i].owner != dead {
			if states[i].at.After(deadline) {
				return true, fmt.Errorf("left the dead leader %s at %s, %s after the deadline", dead,
					states[i].at.Format(time.RFC3339Nano), states[i].at.Sub(deadline))
			}
			return true, nil
		}
	}
	return false, nil
}

// movingTo lists the canaries the ring over replicas gives to want.
func movingTo(ns string, names []string, want string, replicas []string) []string {
	var out []string
	for _, n := range names {
		if Assign(ns+"/"+n, replicas) == want {
			out = append(out, n)
		}
	}
	return out
}

// drainsAsked checks every moving canary and its run is asked to drain.
func drainsAsked(ns string, moving []string) error {
	for _, n := range moving {
		for _, obj := range []client.Object{&v1alpha1.RevocationCanary{}, &v1alpha1.CanaryRun{}} {
			name := n
			if _, ok := obj.(*v1alpha1.CanaryRun); ok {
				name = n + "-run"
			}
			if err := testClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
				return err
			}
			if obj.GetLabels()[v1alpha1.LabelShardDrain] != "true" {
				return fmt.Errorf("%s has labels %v, want a drain asked", name, obj.GetLabels())
			}
		}
	}
	return nil
}

// releaseDrained releases, runs first, every object owner is asked to
// drain; it fails while the sharder still asks for drains of owner's
// objects, so it is retried until the new leader's passes settle.
func releaseDrained(ns, owner string) error {
	objs, err := shardedObjects(ns)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if o.GetLabels()[v1alpha1.LabelShardOwner] == owner && o.GetLabels()[v1alpha1.LabelShardDrain] == "true" {
			if err := Release(context.Background(), testClient, o); err != nil {
				return err
			}
		}
	}
	return drainsLeft(ns)
}

// drainsLeft fails naming any object still asked to drain.
func drainsLeft(ns string) error {
	objs, err := shardedObjects(ns)
	if err != nil {
		return err
	}
	var left []string
	for _, o := range objs {
		if o.GetLabels()[v1alpha1.LabelShardDrain] != "" {
			left = append(left, o.GetName())
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("still asked to drain: %v", left)
	}
	return nil
}

// shardedObjects reads ns's runs, then its canaries, from the API server.
func shardedObjects(ns string) ([]client.Object, error) {
	var runs v1alpha1.CanaryRunList
	var canaries v1alpha1.RevocationCanaryList
	for _, l := range []client.ObjectList{&runs, &canaries} {
		if err := testClient.List(context.Background(), l, client.InNamespace(ns)); err != nil {
			return nil, err
		}
	}
	var objs []client.Object
	for i := range runs.Items {
		objs = append(objs, &runs.Items[i])
	}
	for i := range canaries.Items {
		objs = append(objs, &canaries.Items[i])
	}
	return objs, nil
}

// noDirectMove checks an object's owner never changed from one replica to
// another without a version owned by nobody between, unless it was taken
// from dead, a replica that can no longer answer a drain.
func noDirectMove(states []ownerState, dead string) error {
	prev := ""
	for _, s := range states {
		if prev != "" && prev != dead && s.owner != "" && s.owner != prev {
			return fmt.Errorf("owner changed from %s to %s without a release", prev, s.owner)
		}
		prev = s.owner
	}
	return nil
}
