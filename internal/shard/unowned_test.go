package shard

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/metrics"
)

const unownedFamily = "ragcanary_shard_unowned_canary"

// startUnownedCollector registers the leader's unowned-canary collector
// on controller-runtime's registry, reading s, until the returned stop.
func startUnownedCollector(t *testing.T, s *Sharder) (stop func()) {
	t.Helper()
	c := metrics.NewUnownedCanaryCollector(func(ctx context.Context) ([]types.NamespacedName, error) {
		return s.Unowned(ctx, testKinds[0].Parent)
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("collector: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// unownedSeries gathers the registry and returns, sorted, the canaries of
// ns with an unowned series, each checked to be 1. found is false when the
// family is not registered at all.
func unownedSeries(ns string) (canaries []string, found bool, err error) {
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		return nil, false, err
	}
	for _, f := range families {
		if f.GetName() != unownedFamily {
			continue
		}
		found = true
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["namespace"] != ns {
				continue
			}
			if v := m.GetGauge().GetValue(); v != 1 {
				return nil, true, fmt.Errorf("canary %s has value %v, want 1", labels["canary"], v)
			}
			canaries = append(canaries, labels["canary"])
		}
	}
	slices.Sort(canaries)
	return canaries, found, nil
}

func waitUnowned(t *testing.T, ns string, want ...string) {
	t.Helper()
	testutil.Eventually(t, waitTimeout, fmt.Sprintf("unowned series for %v", want), func() error {
		got, found, err := unownedSeries(ns)
		if err != nil {
			return err
		}
		// A family without series is not gathered at all.
		if !found && len(want) > 0 {
			return fmt.Errorf("family %s not exported", unownedFamily)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("unowned series for %v", got)
		}
		return nil
	})
}

// TestSharderExportsUnownedCanaries checks the leader's series for
// canaries no live replica owns: one without an owner label and one whose
// owner has no shard Lease get it while no replica is live; both lose it
// once a live replica owns them; a canary whose owner's Lease expired gets
// it again; a deleted canary's series goes; and the family goes with the
// collector.
func TestSharderExportsUnownedCanaries(t *testing.T) {
	ns := newNamespace(t)
	const duration = 2 * time.Second
	createCanary(t, ns, "fresh")
	orphan, _ := createCanary(t, ns, "orphan")
	if err := patchLabels(context.Background(), testClient, orphan, map[string]*string{v1alpha1.LabelShardOwner: ptr.To("gone")}); err != nil {
		t.Fatal(err)
	}
	s := startSharder(t, ns, duration)
	stopCollector := startUnownedCollector(t, s)
	waitUnowned(t, ns, "fresh", "orphan")

	stopA := keep(t, ns, "r-a", duration, 500*time.Millisecond)
	assignedAsRing(t, ns, []string{"fresh", "orphan"}, []string{"r-a"})
	waitUnowned(t, ns)

	// With no replica left, nothing can be handed over: the canaries keep
	// the dead owner's label and are reported again.
	stopA()
	waitUnowned(t, ns, "fresh", "orphan")

	if err := testClient.Delete(context.Background(), orphan); err != nil {
		t.Fatal(err)
	}
	waitUnowned(t, ns, "fresh")

	stopCollector()
	if _, found, err := unownedSeries(ns); err != nil || found {
		t.Errorf("after the collector stopped: family exported %v (err %v), want not registered", found, err)
	}
}

// TestUnownedPicksObjectsWithoutLiveOwner: the pure choice behind the
// series.
func TestUnownedPicksObjectsWithoutLiveOwner(t *testing.T) {
	obj := func(name, owner string, deleting bool) *metav1.PartialObjectMetadata {
		o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		if owner != "" {
			o.Labels = map[string]string{v1alpha1.LabelShardOwner: owner}
		}
		if deleting {
			o.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
		}
		return o
	}
	x := newIndex("RevocationCanary", func() {})
	for _, o := range []*metav1.PartialObjectMetadata{
		obj("owned", "r-a", false),    // a live owner: not reported
		obj("none", "", false),        // no owner label
		obj("dead", "r-x", false),     // owner without a live Lease
		obj("leaving", "", true),      // being deleted: nobody should measure it
		obj("draining", "r-b", false), // a live owner still, though asked to drain
	} {
		if err := x.Add(o); err != nil {
			t.Fatalf("adding %s: %v", o.Name, err)
		}
	}
	got := x.unowned([]string{"r-a", "r-b"})
	want := []types.NamespacedName{{Namespace: "ns", Name: "dead"}, {Namespace: "ns", Name: "none"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("unowned = %v, want %v", got, want)
	}
	if got := x.unowned(nil); len(got) != 4 {
		t.Errorf("with no live replica, %d unowned (%v), want every object not being deleted (4)", len(got), got)
	}
}
