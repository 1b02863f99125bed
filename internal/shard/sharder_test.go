package shard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
)

var testKinds = []Kind{{
	Parent: v1alpha1.GroupVersion.WithKind("RevocationCanary"),
	Child:  v1alpha1.GroupVersion.WithKind("CanaryRun"),
}}

func canarySpec() v1alpha1.CanarySpec {
	return v1alpha1.CanarySpec{
		CorpusRef:  v1alpha1.LocalObjectReference{Name: "corpus"},
		PersonaRef: v1alpha1.LocalObjectReference{Name: "persona"},
		Probing: v1alpha1.Probing{
			Interval: metav1.Duration{Duration: time.Second}, Confirmations: 3,
			VisibilityTimeout: metav1.Duration{Duration: time.Minute},
			ExclusionTimeout:  metav1.Duration{Duration: time.Minute},
		},
	}
}

// createCanary creates a canary and one run it controls, as the canary
// reconciler would.
func createCanary(t *testing.T, ns, name string) (*v1alpha1.RevocationCanary, *v1alpha1.CanaryRun) {
	t.Helper()
	ctx := context.Background()
	c := &v1alpha1.RevocationCanary{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.RevocationCanarySpec{
			Scheduling: v1alpha1.Scheduling{Schedule: v1alpha1.Schedule{Cron: "@hourly"}},
			CanarySpec: canarySpec(),
		},
	}
	if err := testClient.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	run := &v1alpha1.CanaryRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-run",
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: "RevocationCanary",
				Name: c.Name, UID: c.UID, Controller: ptr.To(true),
			}}},
		Spec: v1alpha1.CanaryRunSpec{CanarySpec: canarySpec()},
	}
	if err := testClient.Create(ctx, run); err != nil {
		t.Fatal(err)
	}
	return c, run
}

// startSharder runs a sharder until the test ends.
func startSharder(t *testing.T, ns string, leaseDuration time.Duration) *Sharder {
	t.Helper()
	s := &Sharder{Config: testCfg, Scheme: testScheme, Client: testClient, Namespace: ns,
		WatchNamespace: ns, Kinds: testKinds, LeaseDuration: leaseDuration}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("sharder: %v", err)
		}
	})
	return s
}

// renew creates or renews replica's shard Lease once.
func renew(t *testing.T, ns, replica string, duration time.Duration) {
	t.Helper()
	k := &Keeper{Client: testClient, Namespace: ns, Replica: replica, LeaseDuration: duration}
	if err := k.Renew(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// keep renews replica's Lease in the background until the returned stop.
func keep(t *testing.T, ns, replica string, duration, every time.Duration) (stop func()) {
	t.Helper()
	k := &Keeper{Client: testClient, Namespace: ns, Replica: replica, LeaseDuration: duration, RenewInterval: every}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- k.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("keeper %s: %v", replica, err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// owners reads every canary's and run's owner label from the API server.
func owners(t *testing.T, ns string) (canaries, runs map[string]string) {
	t.Helper()
	var cl v1alpha1.RevocationCanaryList
	var rl v1alpha1.CanaryRunList
	if err := testClient.List(context.Background(), &cl, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if err := testClient.List(context.Background(), &rl, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	canaries, runs = map[string]string{}, map[string]string{}
	for _, c := range cl.Items {
		canaries[c.Name] = c.Labels[v1alpha1.LabelShardOwner]
	}
	for _, r := range rl.Items {
		runs[r.Name] = r.Labels[v1alpha1.LabelShardOwner]
	}
	return canaries, runs
}

// assignedAsRing waits until every canary and its run carry the owner the
// ring over replicas gives the canary.
func assignedAsRing(t *testing.T, ns string, names, replicas []string) {
	t.Helper()
	testutil.Eventually(t, waitTimeout, "every canary and its run owned as the ring says", func() error {
		canaries, runs := owners(t, ns)
		for _, n := range names {
			want := Assign(ns+"/"+n, replicas)
			if canaries[n] != want || runs[n+"-run"] != want {
				return fmt.Errorf("canary %s owned by %q, its run by %q, want %q", n, canaries[n], runs[n+"-run"], want)
			}
		}
		return nil
	})
}

func canaryNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("canary-%d", i)
	}
	return out
}

// TestSharderAssignsSpreadAndStable checks that unlabelled canaries and
// their runs get the owner the ring gives the canary, that every replica
// gets a share, and that a pass over a settled ring writes nothing.
func TestSharderAssignsSpreadAndStable(t *testing.T) {
	ns := newNamespace(t)
	replicas := []string{"r-a", "r-b", "r-c"}
	for _, r := range replicas {
		keep(t, ns, r, 30*time.Second, 5*time.Second)
	}
	names := canaryNames(30)
	for _, n := range names {
		createCanary(t, ns, n)
	}
	s := startSharder(t, ns, 30*time.Second)
	assignedAsRing(t, ns, names, replicas)

	canaries, _ := owners(t, ns)
	share := map[string]int{}
	for _, o := range canaries {
		share[o]++
	}
	for _, r := range replicas {
		if share[r] < 3 {
			t.Errorf("replica %s owns %d of 30 canaries, want a share (all: %v)", r, share[r], share)
		}
	}

	before := resourceVersions(t, ns)
	if _, err := s.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := resourceVersions(t, ns); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("a pass over a settled ring wrote objects:\nbefore %v\nafter  %v", before, after)
	}
}

func resourceVersions(t *testing.T, ns string) map[string]string {
	t.Helper()
	var cl v1alpha1.RevocationCanaryList
	if err := testClient.List(context.Background(), &cl, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range cl.Items {
		out[c.Name] = c.ResourceVersion
	}
	return out
}

// TestSharderDrainsBeforeMoving checks the drain handshake when a replica
// joins: a canary moving to it is first asked to drain while it keeps its
// old owner, gets no new owner before the old one released it, and then
// gets the new one; its run moves the same way. No watched version of the
// objects ever names two owners or jumps from one owner to another.
func TestSharderDrainsBeforeMoving(t *testing.T) {
	ns := newNamespace(t)
	keep(t, ns, "r-a", 30*time.Second, 5*time.Second)
	names := canaryNames(12)
	for _, n := range names {
		createCanary(t, ns, n)
	}
	startSharder(t, ns, 30*time.Second)
	assignedAsRing(t, ns, names, []string{"r-a"})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	history := watchOwners(ctx, t, ns)
	keep(t, ns, "r-b", 30*time.Second, 5*time.Second)

	var moving []string
	for _, n := range names {
		if Assign(ns+"/"+n, []string{"r-a", "r-b"}) == "r-b" {
			moving = append(moving, n)
		}
	}
	if len(moving) == 0 {
		t.Fatal("no canary moves to the new replica: pick other names")
	}
	// r-a sees the drain on a canary and its run; until it releases them,
	// they stay its own.
	testutil.Eventually(t, waitTimeout, "moving canaries and their runs asked to drain", func() error {
		for _, n := range moving {
			for _, obj := range []client.Object{&v1alpha1.RevocationCanary{}, &v1alpha1.CanaryRun{}} {
				name := n
				if _, ok := obj.(*v1alpha1.CanaryRun); ok {
					name = n + "-run"
				}
				if err := testClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
					return err
				}
				if obj.GetLabels()[v1alpha1.LabelShardDrain] != "true" || obj.GetLabels()[v1alpha1.LabelShardOwner] != "r-a" {
					return fmt.Errorf("%s has labels %v, want drain asked and r-a still the owner", name, obj.GetLabels())
				}
			}
		}
		return nil
	})
	// r-a lets them go, runs first, as its reconcilers would.
	for _, n := range moving {
		for _, obj := range []client.Object{&v1alpha1.CanaryRun{}, &v1alpha1.RevocationCanary{}} {
			name := n
			if _, ok := obj.(*v1alpha1.CanaryRun); ok {
				name = n + "-run"
			}
			if err := testClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
				t.Fatal(err)
			}
			if err := Release(ctx, testClient, obj); err != nil {
				t.Fatal(err)
			}
		}
	}
	assignedAsRing(t, ns, names, []string{"r-a", "r-b"})
	cancel()
	checkHandshake(t, history(), moving)
}

// ownerState is one watched version of an object's shard labels.
type ownerState struct {
	owner    string
	draining bool
	// at is when the watch delivered the version.
	at time.Time
}

// watchOwners records every version of the namespace's canaries' and
// runs' shard labels until ctx ends; the returned func waits for the end.
func watchOwners(ctx context.Context, t *testing.T, ns string) func() map[string][]ownerState {
	t.Helper()
	got := map[string][]ownerState{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, list := range []client.ObjectList{&v1alpha1.RevocationCanaryList{}, &v1alpha1.CanaryRunList{}} {
		w, err := testClient.Watch(ctx, list, client.InNamespace(ns))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-w.ResultChan():
					if !ok {
						return
					}
					if ev.Type != watch.Added && ev.Type != watch.Modified {
						continue
					}
					obj := ev.Object.(client.Object)
					mu.Lock()
					got[obj.GetName()] = append(got[obj.GetName()], ownerState{
						owner: obj.GetLabels()[v1alpha1.LabelShardOwner], draining: obj.GetLabels()[v1alpha1.LabelShardDrain] == "true", at: time.Now()})
					mu.Unlock()
				}
			}
		}()
	}
	return func() map[string][]ownerState {
		wg.Wait()
		return got
	}
}

// checkHandshake checks every moved object went r-a → r-a draining →
// nobody → r-b, never straight from one owner to another.
func checkHandshake(t *testing.T, history map[string][]ownerState, moving []string) {
	t.Helper()
	for _, n := range moving {
		for _, name := range []string{n, n + "-run"} {
			states := history[name]
			if err := handshakeOrder(states); err != nil {
				t.Errorf("%s: %v (versions %+v)", name, err, states)
			}
		}
	}
}

func handshakeOrder(states []ownerState) error {
	if err := noDirectMove(states, ""); err != nil {
		return err
	}
	sawDrain, sawNobody := false, false
	for _, s := range states {
		switch {
		case s.owner == "r-a" && s.draining:
			sawDrain = true
		case s.owner == "":
			if !sawDrain {
				return errors.New("released before a drain was asked")
			}
			sawNobody = true
		case s.owner == "r-b" && !sawNobody:
			return errors.New("new owner set before the old one released")
		}
	}
	if len(states) == 0 || states[len(states)-1].owner != "r-b" {
		return errors.New("did not end owned by r-b")
	}
	return nil
}

// TestSharderMovesDeadReplicaShare checks that when a replica stops
// renewing its Lease, its canaries and runs move to the live replicas
// without a drain (nobody is left to answer one), each in one patch from
// the dead owner to the new one, within the Lease duration plus one pass
// after its last renewal.
func TestSharderMovesDeadReplicaShare(t *testing.T) {
	ns := newNamespace(t)
	const duration = 2 * time.Second
	keep(t, ns, "r-a", duration, 500*time.Millisecond)
	stopB := keep(t, ns, "r-b", duration, 500*time.Millisecond)
	names := canaryNames(12)
	for _, n := range names {
		createCanary(t, ns, n)
	}
	startSharder(t, ns, duration)
	assignedAsRing(t, ns, names, []string{"r-a", "r-b"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	history := watchOwners(ctx, t, ns)

	stopB()
	var lease coordinationv1.Lease
	if err := testClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: LeaseName("r-b")}, &lease); err != nil {
		t.Fatal(err)
	}
	lastRenew := lease.Spec.RenewTime.Time
	assignedAsRing(t, ns, names, []string{"r-a"})
	// One pass over a dozen objects takes far less than a second; the
	// bound is the Lease duration, the watch delay of the last renewal and
	// that pass.
	if took := time.Since(lastRenew); took > duration+2*time.Second {
		t.Errorf("dead replica's share moved %s after its last renewal, want within %s + one pass", took, duration)
	}
	cancel()
	moved := 0
	for name, states := range history() {
		if err := takenInOnePatch(states, "r-b", "r-a"); err != nil {
			t.Errorf("%s: %v (versions %+v)", name, err, states)
		}
		if len(states) > 0 && states[0].owner == "r-b" {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("the watch saw no object of r-b: the test proves nothing")
	}
}

// takenInOnePatch checks that an object owned by dead went to heir in one
// write, with no version owned by nobody or left draining between.
func takenInOnePatch(states []ownerState, dead, heir string) error {
	for i := 1; i < len(states); i++ {
		prev, cur := states[i-1], states[i]
		if prev.owner == dead && cur.owner != dead && (cur.owner != heir || cur.draining) {
			return fmt.Errorf("left %s for %+v, want %s in one patch", dead, cur, heir)
		}
	}
	return nil
}

// TestKeeperRenews checks the Lease a Keeper creates carries the shard
// label, names its holder and moves its renew time forward.
func TestKeeperRenews(t *testing.T) {
	ns := newNamespace(t)
	renew(t, ns, "r-a", 15*time.Second)
	get := func() coordinationv1.Lease {
		var l coordinationv1.Lease
		if err := testClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "ragcanary-shard-r-a"}, &l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	first := get()
	if first.Labels[v1alpha1.LabelShardLease] != "true" || ptr.Deref(first.Spec.HolderIdentity, "") != "r-a" ||
		ptr.Deref(first.Spec.LeaseDurationSeconds, 0) != 15 {
		t.Fatalf("lease %v / %+v: want the shard label, holder r-a and 15s", first.Labels, first.Spec)
	}
	testutil.Eventually(t, waitTimeout, "renew time moves forward", func() error {
		renew(t, ns, "r-a", 15*time.Second)
		if l := get(); !l.Spec.RenewTime.After(first.Spec.RenewTime.Time) {
			return errors.New("renew time unchanged")
		}
		return nil
	})
}
