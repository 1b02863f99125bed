package probe

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/measure"
	"github.com/ragcanary/ragcanary/internal/target"
)

// TestEngineAdaptiveRounds drives the engine on a fake clock through an
// exclusion 100s after the revocation, with the SLO at 60s: rounds follow
// the adaptive schedule (never closer than interval, geometric gaps), one
// round ends just before the SLO deadline, the confirmations come at
// interval spacing, and the bounds hold the lag within 10%.
func TestEngineAdaptiveRounds(t *testing.T) {
	const (
		interval = time.Second
		lag      = 100 * time.Second
		slo      = 60 * time.Second
	)
	f := &fakeTarget{visible: map[driver.Token]bool{persona: true}}
	clk := &armedClock{FakeClock: testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), armed: make(chan time.Time, 1)}
	start := clk.Now()
	e := NewEngine(clk, target.NewLimiters(clk.FakeClock))
	key := types.NamespacedName{Namespace: "ns", Name: "adaptive"}
	p := newPlan(StageExclusion, f)
	p.Controls, p.Interval, p.Confirmations = nil, interval, 3
	p.Schedule = Schedule{Adaptive: true, Precision: 0.1, MaxInterval: time.Hour, Start: start,
		Deadlines: []time.Time{start.Add(slo), start.Add(time.Hour)}}
	st := e.Ensure(key, p)
	defer e.Stop(key)

	// The loop waits for its next round only once the last one is applied.
	rounds := []time.Duration{0}
	for {
		next := clk.nextWait(t)
		if st.Snapshot().Surfaces[0].Excluded {
			break
		}
		if len(rounds) > 200 {
			t.Fatalf("no exclusion after %d rounds", len(rounds))
		}
		if !next.Before(start.Add(lag)) {
			f.set(persona, false)
		}
		rounds = append(rounds, next.Sub(start))
		clk.SetTime(next)
	}
	for i := 1; i < len(rounds); i++ {
		gap := rounds[i] - rounds[i-1]
		if gap < interval-interval/10 || gap > max(interval+interval/10, rounds[i-1]/10) {
			t.Fatalf("gap %s after the round at %s is outside [interval, max(interval, 10%% of elapsed)]: rounds %v", gap, rounds[i-1], rounds)
		}
	}
	edge := slo - edgeMargin
	if !containsDuration(rounds, edge) {
		t.Errorf("no round at %s, just before the SLO deadline: rounds %v", edge, rounds)
	}
	n := len(rounds)
	for _, gap := range []time.Duration{rounds[n-1] - rounds[n-2], rounds[n-2] - rounds[n-3]} {
		if gap > interval+interval/10 {
			t.Errorf("confirmation %s after the previous round, want interval spacing: rounds %v", gap, rounds)
		}
	}
	if fixed := int(lag/interval) + 3; len(rounds) >= fixed/2 {
		t.Errorf("%d rounds, want under half of Fixed's %d", len(rounds), fixed)
	}
	m := st.Snapshot().Surfaces[0]
	b := measure.Bounds(&m, measure.Revocation{Requested: start, Acknowledged: start})
	if b.Lower.Duration > lag || b.Upper.Duration < lag || b.Upper.Duration-b.Lower.Duration > lag/10 {
		t.Fatalf("bounds [%s, %s] for a lag of %s, want it inside and at most 10%% wide", b.Lower.Duration, b.Upper.Duration, lag)
	}
	if got := m.Probes.Positive + m.Probes.Negative; int(got) != len(rounds) {
		t.Fatalf("%d probes counted for %d rounds", got, len(rounds))
	}
}

func containsDuration(ds []time.Duration, d time.Duration) bool {
	for _, x := range ds {
		if x == d {
			return true
		}
	}
	return false
}
