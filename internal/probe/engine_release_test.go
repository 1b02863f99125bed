package probe

import (
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/target"
)

// TestLoopReleasesItsDriverWhenItEnds: a loop holds its driver's
// connections for its whole stage and lets go exactly once when it stops;
// a plan handed in while a loop at that stage already runs is let go at
// once, since the running loop keeps its own.
func TestLoopReleasesItsDriverWhenItEnds(t *testing.T) {
	e := NewEngine(clock.RealClock{}, target.NewLimiters(clock.RealClock{}))
	t.Cleanup(e.cancel)
	d := &fakeTarget{visible: map[driver.Token]bool{}}
	key := types.NamespacedName{Namespace: "ns", Name: "run"}
	var first, second atomic.Int32

	p := newPlan(StageVisibility, d)
	p.Release = func() { first.Add(1) }
	e.Ensure(key, p)
	testutil.EventuallyTrue(t, waitTimeout, "a probe", func() bool { return d.searches.Load() > 0 })
	if n := first.Load(); n != 0 {
		t.Fatalf("a running loop released its driver %d times", n)
	}

	again := newPlan(StageVisibility, d)
	again.Release = func() { second.Add(1) }
	e.Ensure(key, again)
	if n := second.Load(); n != 1 {
		t.Fatalf("a plan not used (a loop at its stage runs) was released %d times, want 1", n)
	}

	e.Stop(key)
	if n := first.Load(); n != 1 {
		t.Fatalf("a stopped loop released its driver %d times, want 1", n)
	}
}
