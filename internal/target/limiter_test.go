package target

import (
	"context"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/ragcanary/ragcanary/internal/dev/testutil"
)

// immediate counts how many of n Waits return without the clock moving.
func immediate(t *testing.T, l *Limiters, corpus string, n int) int {
	t.Helper()
	got := 0
	for range n {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		err := l.Wait(ctx, corpus)
		cancel()
		if err == nil {
			got++
		}
	}
	return got
}

func TestLimiters(t *testing.T) {
	tests := []struct {
		name string
		// limit is set first; update, when set, replaces it after the first batch.
		limit, update *Limit
		// first is how many requests are tried at once.
		first int
		// wantFirst is how many of them pass without waiting (the burst).
		wantFirst int
		// step moves the fake clock, then second requests are tried.
		step   time.Duration
		second int
		// wantSecond is how many of those pass: tokens refilled at the rate.
		wantSecond int
	}{
		{name: "burst passes, then the rate refills",
			limit: &Limit{RequestsPerSecond: 2, Burst: 3}, first: 5, wantFirst: 3,
			step: time.Second, second: 5, wantSecond: 2},
		{name: "zero values are raised to one request per second",
			limit: &Limit{}, first: 3, wantFirst: 1,
			step: time.Second, second: 3, wantSecond: 1},
		{name: "a raised limit applies to the next requests",
			limit: &Limit{RequestsPerSecond: 1, Burst: 1}, first: 2, wantFirst: 1,
			update: &Limit{RequestsPerSecond: 10, Burst: 10},
			step:   time.Second, second: 20, wantSecond: 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			l := NewLimiters(clk)
			l.Set("ns/c", *tc.limit)
			if got := immediate(t, l, "ns/c", tc.first); got != tc.wantFirst {
				t.Fatalf("first batch: %d passed, want %d", got, tc.wantFirst)
			}
			if tc.update != nil {
				l.Set("ns/c", *tc.update)
			}
			clk.Step(tc.step)
			if got := immediate(t, l, "ns/c", tc.second); got != tc.wantSecond {
				t.Fatalf("after %s: %d passed, want %d", tc.step, got, tc.wantSecond)
			}
		})
	}
}

func TestLimitersShareOneBucketPerCorpus(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	l := NewLimiters(clk)
	l.Set("ns/a", Limit{RequestsPerSecond: 1, Burst: 2})
	l.Set("ns/a", Limit{RequestsPerSecond: 1, Burst: 2}) // a second canary on the same corpus
	l.Set("ns/b", Limit{RequestsPerSecond: 1, Burst: 2})
	if got := immediate(t, l, "ns/a", 4); got != 2 {
		t.Errorf("corpus a: %d passed, want 2 (one shared bucket)", got)
	}
	if got := immediate(t, l, "ns/b", 4); got != 2 {
		t.Errorf("corpus b: %d passed, want 2 (its own bucket)", got)
	}
	if err := l.Wait(context.Background(), "ns/unknown"); err == nil {
		t.Error("waiting on an unregistered corpus succeeded")
	}
}

func TestWaitReleasesOnClockStep(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	l := NewLimiters(clk)
	l.Set("ns/a", Limit{RequestsPerSecond: 1, Burst: 1})
	if err := l.Wait(context.Background(), "ns/a"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- l.Wait(context.Background(), "ns/a") }()
	testutil.EventuallyTrue(t, 5*time.Second, "second Wait waiting on the clock", clk.HasWaiters)
	select {
	case <-done:
		t.Fatal("second Wait returned before its token refilled")
	default:
	}
	clk.Step(time.Second)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return after the clock stepped")
	}
}
