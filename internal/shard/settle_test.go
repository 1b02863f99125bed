package shard

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// TestSettleAllSettlesEveryUnitAtMostWorkersAtOnce: every unit is settled
// exactly once, no more than workers run together, and every error is
// returned.
func TestSettleAllSettlesEveryUnitAtMostWorkersAtOnce(t *testing.T) {
	const n, workers = 200, 4
	units := make([]unit, n)
	for i := range units {
		units[i] = unit{key: types.NamespacedName{Name: fmt.Sprint(i)}}
	}
	var (
		mu      sync.Mutex
		settled = map[string]int{}
		running atomic.Int32
		most    atomic.Int32
		gate    = make(chan struct{})
	)
	// The first workers block until all of them are running, so the test
	// sees the pool really run in parallel before it lets them go.
	var started sync.WaitGroup
	started.Add(workers)
	go func() { started.Wait(); close(gate) }()
	errs := settleAll(units, workers, func(u unit) error {
		now := running.Add(1)
		defer running.Add(-1)
		for {
			m := most.Load()
			if now <= m || most.CompareAndSwap(m, now) {
				break
			}
		}
		mu.Lock()
		settled[u.key.Name]++
		first := len(settled) <= workers
		mu.Unlock()
		if first {
			started.Done()
			select {
			case <-gate:
			case <-time.After(10 * time.Second):
				t.Error("the first units never ran together: settleAll is not parallel")
			}
		}
		if u.key.Name == "7" || u.key.Name == "150" {
			return errors.New("conflict on " + u.key.Name)
		}
		return nil
	})
	if len(settled) != n {
		t.Fatalf("%d units settled, want %d", len(settled), n)
	}
	for k, c := range settled {
		if c != 1 {
			t.Errorf("unit %s settled %d times", k, c)
		}
	}
	if m := most.Load(); m != workers {
		t.Errorf("at most %d settled at once, want %d", m, workers)
	}
	if len(errs) != 2 {
		t.Errorf("errors %v, want the two conflicts", errs)
	}
}
