package controllers

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
	"github.com/ragcanary/ragcanary/internal/schedule"
)

// TestShardedSuiteMoves moves an hourly EvalSuite and its SuiteRuns from
// r-1 to r-2 when r-2 joins (drain), and back to r-1 when r-2 dies (its
// shard Lease expires), stepping the replicas' shared schedule clock to
// the next scheduled time after each move. Each scheduled time gets
// exactly one run, created by the replica owning the suite then; a run
// made by hand on the replica not owning its suite runs; no object ever
// moves straight from a live owner to another (only the dead r-2's go
// straight to r-1); and the target never sees queries of two replicas at
// once.
func TestShardedSuiteMoves(t *testing.T) {
	ctx := context.Background()
	ns := shardSuiteNamespace
	if err := k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now())
	forgets := &forgetLog{forgot: map[string]int{}}
	startReplicaIn(t, ns, "r-1", forgets, clk)

	history := watchShardLabels(t, ns)
	probes := &probeLog{}
	name := nameMovingTo(ns, "suite", "r-2", []string{"r-1", "r-2"})
	f := newSuiteFixtureIn(t, ns, ragtarget.Config{}, func(url string) string { return probes.front(t, url) },
		func(s *v1alpha1.EvalSuite) {
			s.Name = name
			s.Spec.Schedule = &v1alpha1.Schedule{Every: &metav1.Duration{Duration: time.Hour}}
		})
	clk.SetTime(time.Now())

	var want []string
	runAt := func(hours int, owner string) {
		t.Helper()
		waitSuiteOwned(t, f, owner)
		due := f.created.Add(time.Duration(hours) * time.Hour)
		clk.SetTime(due.Add(time.Second))
		f.poke()
		f.waitFinishedRun(schedule.RunName(name, due))
		run := schedule.RunName(name, due)
		want = append(want, run)
		testutil.Eventually(t, eventuallyTimeout, "the creation of "+run+" watched", func() error {
			if first := history.first(run); first != owner {
				return fmt.Errorf("run %s first seen owned by %q, want %s", run, first, owner)
			}
			return nil
		})
	}
	runAt(1, "r-1")
	stop2 := startReplicaIn(t, ns, "r-2", forgets, clk)
	runAt(2, "r-2")
	if n := probes.count("r-2"); n == 0 {
		t.Error("r-2 owned the suite but its run sent no query")
	}
	// A run made by hand is placed by its own name, here on r-1, while its
	// suite is r-2's and so not in r-1's cache: it still finds the suite.
	byHand := nameMovingTo(ns, "byhand", "r-1", []string{"r-1", "r-2"})
	f.createRun(byHand)
	if run := f.waitFinishedRun(byHand); run.Status.Phase != v1alpha1.SuiteRunSucceeded {
		t.Errorf("hand-made run %s on r-1 ended %s, want %s", byHand, run.Status.Phase, v1alpha1.SuiteRunSucceeded)
	}
	want = append(want, byHand)
	stop2()
	runAt(3, "r-1")

	var got []string
	for _, r := range f.runs() {
		got = append(got, r.Name)
	}
	slices.Sort(got)
	slices.Sort(want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("runs %v, want one per scheduled time %v", got, want)
	}
	for obj, states := range history.all() {
		if err := noDirectMove(states, "r-2"); err != nil {
			t.Errorf("%s: %v (versions %v)", obj, err, states)
		}
	}
	checkQueriesApart(t, probes.snapshot())
}

// waitSuiteOwned waits until the suite and all its runs are owned by
// owner and none is draining.
func waitSuiteOwned(t *testing.T, f *suiteFixture, owner string) {
	t.Helper()
	testutil.Eventually(t, eventuallyTimeout, "suite and runs owned by "+owner, func() error {
		objs := []client.Object{f.getSuite()}
		for _, r := range f.runs() {
			objs = append(objs, &r)
		}
		for _, o := range objs {
			if l := o.GetLabels(); l[v1alpha1.LabelShardOwner] != owner || l[v1alpha1.LabelShardDrain] != "" {
				return fmt.Errorf("%s has shard labels owner=%q drain=%q", o.GetName(), l[v1alpha1.LabelShardOwner], l[v1alpha1.LabelShardDrain])
			}
		}
		return nil
	})
}

// shardLabelHistory is every watched owner label of a namespace's suites
// and suite runs, by object name, "" for no owner.
type shardLabelHistory struct {
	mu     sync.Mutex
	owners map[string][]string
}

// watchShardLabels records the owners of ns's suites and runs until the
// test ends.
func watchShardLabels(t *testing.T, ns string) *shardLabelHistory {
	t.Helper()
	h := &shardLabelHistory{owners: map[string][]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for _, list := range []client.ObjectList{&v1alpha1.EvalSuiteList{}, &v1alpha1.SuiteRunList{}} {
		w, err := watchClient(t).Watch(ctx, list, client.InNamespace(ns))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.Stop()
			for ev := range w.ResultChan() {
				if ev.Type != watch.Added && ev.Type != watch.Modified {
					continue
				}
				obj := ev.Object.(client.Object)
				h.mu.Lock()
				h.owners[obj.GetName()] = append(h.owners[obj.GetName()], obj.GetLabels()[v1alpha1.LabelShardOwner])
				h.mu.Unlock()
			}
		}()
	}
	return h
}

// first is the owner of the first watched version of name.
func (h *shardLabelHistory) first(name string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if v := h.owners[name]; len(v) > 0 {
		return v[0]
	}
	return "(never seen)"
}

func (h *shardLabelHistory) all() map[string][]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string][]string, len(h.owners))
	for k, v := range h.owners {
		out[k] = slices.Clone(v)
	}
	return out
}

// noDirectMove fails when an owner other than dead changed to another
// without a version owned by nobody between: two replicas would have acted
// at once. A dead replica's objects go to their new owner in one patch.
func noDirectMove(owners []string, dead string) error {
	prev := ""
	for _, o := range owners {
		if prev != "" && prev != dead && o != "" && o != prev {
			return fmt.Errorf("owner changed from %s to %s without a release", prev, o)
		}
		prev = o
	}
	return nil
}

// checkQueriesApart checks that persona queries (search, answer) of two
// replicas never overlapped in time, and that each names a replica.
func checkQueriesApart(t *testing.T, reqs []probeRequest) {
	t.Helper()
	var queries []probeRequest
	for _, r := range reqs {
		if r.path == "/v1/search" || r.path == "/v1/answer" {
			if r.replica == "" {
				t.Errorf("query with User-Agent %q names no replica", r.agent)
			}
			queries = append(queries, r)
		}
	}
	for i, a := range queries {
		for _, b := range queries[i+1:] {
			if a.replica != b.replica && a.start.Before(b.end) && b.start.Before(a.end) {
				t.Errorf("queries overlapped: %s %s–%s and %s %s–%s", a.replica, a.start, a.end, b.replica, b.start, b.end)
				return
			}
		}
	}
}

// watchClient is a direct client that can watch.
func watchClient(t *testing.T) client.WithWatch {
	t.Helper()
	c, err := client.NewWithWatch(restConfig, client.Options{Scheme: testScheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
