package probe

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/measure"
	"github.com/ragcanary/ragcanary/internal/target"
)

// fakeTarget is an in-memory driver whose search replies are scripted per
// persona: visible, hidden or failing.
type fakeTarget struct {
	driver.Driver // unused methods panic
	mu            sync.Mutex
	visible       map[driver.Token]bool
	failing       bool
	searches      atomic.Int64
}

func (f *fakeTarget) set(persona driver.Token, visible bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.visible[persona] = visible
}

func (f *fakeTarget) fail(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failing = on
}

func (f *fakeTarget) Search(_ context.Context, persona driver.Token, _ string, _ int) ([]driver.Hit, error) {
	f.searches.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failing {
		return nil, driver.NewError(driver.Transient, "Search", 503, "server error", nil)
	}
	if f.visible[persona] {
		return []driver.Hit{{ChunkID: "rc-1#0", DocumentID: "rc-1"}}, nil
	}
	return []driver.Hit{{ChunkID: "other#0", DocumentID: "other"}}, nil
}

func (f *fakeTarget) Answer(context.Context, driver.Token, string) (driver.Answer, error) {
	return driver.Answer{}, errors.New("no answer surface")
}

const (
	persona driver.Token = "persona-cred"
	control driver.Token = "control-cred"
)

func newPlan(stage Stage, d driver.Driver) Plan {
	return Plan{
		Stage: stage, Driver: d, Corpus: "ns/corpus", Limit: target.Limit{RequestsPerSecond: 1000, Burst: 1000},
		Interval: 10 * time.Millisecond, Confirmations: 2,
		Surfaces: []v1alpha1.Surface{v1alpha1.SurfaceSearch},
		Persona:  persona, Controls: []Control{{Name: "control", Token: control}},
		Target: Target{DocumentID: "rc-1", Handle: "rcanaryhandle", Payload: "rcpayload"},
	}
}

// waitTimeout bounds each wait for the engine's background rounds.
const waitTimeout = 5 * time.Second

func TestEngineVisibilityAndIsolation(t *testing.T) {
	f := &fakeTarget{visible: map[driver.Token]bool{}}
	var notified atomic.Int64
	e := NewEngine(clock.RealClock{}, target.NewLimiters(clock.RealClock{}))
	e.OnTransition(func(types.NamespacedName) { notified.Add(1) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = e.Start(ctx) }()
	key := types.NamespacedName{Namespace: "ns", Name: "run"}

	st := e.Ensure(key, newPlan(StageVisibility, f))
	testutil.EventuallyTrue(t, waitTimeout, "some rounds", func() bool { return st.Snapshot().Rounds >= 3 })
	if s := st.Snapshot(); s.AllVisible || s.IsolationViolations != 0 {
		t.Fatalf("visible before sharing: %+v", s)
	}
	f.set(persona, true)
	testutil.EventuallyTrue(t, waitTimeout, "visibility", func() bool { return st.Snapshot().AllVisible })
	testutil.EventuallyTrue(t, waitTimeout, "a notification", func() bool { return notified.Load() >= 1 })

	f.set(control, true)
	testutil.EventuallyTrue(t, waitTimeout, "an isolation violation", func() bool { return st.Snapshot().IsolationViolations > 0 })

	// Ensure at the same stage keeps the running loop and its state.
	if again := e.Ensure(key, newPlan(StageVisibility, f)); again != st {
		t.Fatal("Ensure replaced a loop running at the same stage")
	}
	seen := st.Snapshot()
	final := e.Stop(key)
	if _, ok := e.State(key); ok {
		t.Fatal("state kept after Stop")
	}
	// Stop hands back the loop's complete state: sightings of rounds after
	// the last snapshot the controller read are not lost, and the control
	// persona's replies are counted.
	if final == nil {
		t.Fatal("Stop returned no final state")
	}
	last := final.Snapshot()
	if last.IsolationViolations < seen.IsolationViolations || last.Rounds < seen.Rounds {
		t.Fatalf("final state %+v is behind an earlier snapshot %+v", last, seen)
	}
	if len(last.Controls) != 1 || last.Controls[0].Persona != "control" || last.Controls[0].Answered == 0 {
		t.Fatalf("control counts %+v, want answered probes for the control persona", last.Controls)
	}
	if e.Stop(key) != nil {
		t.Fatal("a second Stop returned a state")
	}
}

func TestEngineErrorsAreNeverAbsences(t *testing.T) {
	f := &fakeTarget{visible: map[driver.Token]bool{persona: true}}
	e := NewEngine(clock.RealClock{}, target.NewLimiters(clock.RealClock{}))
	key := types.NamespacedName{Namespace: "ns", Name: "run"}
	defer e.Stop(key)

	// Resumed from status after a restart: one negative of two so far. The
	// unconfirmed streak must start again.
	p := newPlan(StageExclusion, f)
	p.Controls = nil
	p.Resume = []v1alpha1.SurfaceMeasurement{{Surface: v1alpha1.SurfaceSearch, NegativeStreak: 1, Probes: v1alpha1.ProbeCounts{Negative: 1}}}
	st := e.Ensure(key, p)
	testutil.EventuallyTrue(t, waitTimeout, "positive probes", func() bool { return st.Snapshot().Surfaces[0].Probes.Positive >= 2 })

	f.set(persona, false) // revoked...
	f.fail(true)          // ...but the target fails
	testutil.EventuallyTrue(t, waitTimeout, "errors", func() bool { return st.Snapshot().Surfaces[0].Probes.Errors >= 5 })
	m := st.Snapshot().Surfaces[0]
	if m.Excluded || measure.Classify(&m, measure.Revocation{}) == measure.Excluded {
		t.Fatalf("errors established exclusion: %+v", m)
	}
	f.fail(false)
	testutil.EventuallyTrue(t, waitTimeout, "exclusion", func() bool { return st.Snapshot().Surfaces[0].Excluded })
	m = st.Snapshot().Surfaces[0]
	if m.Probes.Negative < 3 || m.LastPositiveStart == nil || m.FirstNegativeEnd.Before(m.LastPositiveStart) {
		t.Fatalf("exclusion confirmed without two real negatives after the last positive: %+v", m)
	}
}

// TestVisibilityErrorsAreNotAbsences: when every visibility probe fails,
// the snapshot says no valid reply came, so the run cannot claim the canary
// was invisible.
func TestVisibilityErrorsAreNotAbsences(t *testing.T) {
	f := &fakeTarget{visible: map[driver.Token]bool{}}
	f.fail(true)
	e := NewEngine(clock.RealClock{}, target.NewLimiters(clock.RealClock{}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = e.Start(ctx) }()
	key := types.NamespacedName{Namespace: "ns", Name: "failing"}
	st := e.Ensure(key, newPlan(StageVisibility, f))
	testutil.EventuallyTrue(t, waitTimeout, "some rounds", func() bool { return st.Snapshot().Rounds >= 3 })
	snap := e.Stop(key).Snapshot()
	s, ok := snap.SurfaceWithoutReply()
	if !ok || s != v1alpha1.SurfaceSearch || snap.VisibilityErrors < 3 {
		t.Fatalf("SurfaceWithoutReply = %q, %v with %d errors; want Search without a reply", s, ok, snap.VisibilityErrors)
	}
}
