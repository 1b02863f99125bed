package nodecluster

import (
	"context"
	"os"
	"testing"
)

// down must finish whatever state the kernel left: a whole network, one
// whose namespace was deleted a moment ago (so its veth end on the host is
// going away asynchronously, the race CI hit), and one already gone.
// It needs root and ip(8), like the cluster it tears down.
func TestDownFinishesAnyHalfRemovedNetwork(t *testing.T) {
	ctx := context.Background()
	n, err := NewNetwork("downt", 230)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.down(ctx) })
	make := func() {
		t.Helper()
		for _, s := range [][]string{
			{"ip", "netns", "add", n.Namespace},
			{"ip", "link", "add", n.HostLink, "type", "veth", "peer", "name", "eth0", "netns", n.Namespace},
		} {
			if err := run(ctx, s...); err != nil {
				t.Fatalf("making the network (needs root): %v", err)
			}
		}
	}
	gone := func(when string) {
		t.Helper()
		if n.hostLinkExists() {
			t.Errorf("%s: host link %s is left", when, n.HostLink)
		}
		if _, err := os.Stat(n.NamespacePath()); err == nil {
			t.Errorf("%s: namespace %s is left", when, n.Namespace)
		}
	}

	make()
	if err := n.down(ctx); err != nil {
		t.Errorf("whole network: %v", err)
	}
	gone("whole network")

	for i := range 20 {
		make()
		if err := run(ctx, "ip", "netns", "del", n.Namespace); err != nil {
			t.Fatal(err)
		}
		if err := n.down(ctx); err != nil {
			t.Fatalf("namespace deleted just before down (try %d): %v", i, err)
		}
		gone("namespace deleted just before down")
	}

	if err := n.down(ctx); err != nil {
		t.Errorf("nothing left to remove: %v", err)
	}
}
