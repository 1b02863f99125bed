package target

import (
	"testing"

	"k8s.io/utils/clock"
)

func TestReplyBudget(t *testing.T) {
	tests := []struct {
		name string
		// size is the budget's bound.
		size int64
		// hold is acquired first and must fit.
		hold int64
		// resize, when set, changes the bound after hold.
		resize int64
		// try is acquired next; fits says whether it should.
		try  int64
		fits bool
	}{
		{name: "fits exactly", size: 100, hold: 60, try: 40, fits: true},
		{name: "one byte over", size: 100, hold: 60, try: 41},
		{name: "unset size is the default", size: 0, hold: DefaultReplyBytes - 1, try: 1, fits: true},
		{name: "shrunk below what is held", size: 100, hold: 60, resize: 50, try: 1},
		{name: "grown", size: 100, hold: 100, resize: 150, try: 50, fits: true},
		{name: "negative never fits", size: 100, try: -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewReplyBudget(tc.size)
			if !b.TryAcquire(tc.hold) {
				t.Fatalf("first %d bytes refused", tc.hold)
			}
			if tc.resize != 0 {
				b.resize(tc.resize)
			}
			if got := b.TryAcquire(tc.try); got != tc.fits {
				t.Fatalf("TryAcquire(%d) = %v, want %v (in use %d)", tc.try, got, tc.fits, b.InUse())
			}
			want := tc.hold
			if tc.fits {
				want += tc.try
			}
			if b.InUse() != want {
				t.Fatalf("in use %d, want %d", b.InUse(), want)
			}
			b.Release(want)
			if b.InUse() != 0 {
				t.Fatalf("in use %d after releasing everything", b.InUse())
			}
		})
	}
}

// TestRepliesPerCorpus checks that a corpus's reply budget is one object
// however often it is looked up, that Set resizes it in place, and that
// corpora never share one.
func TestRepliesPerCorpus(t *testing.T) {
	l := NewLimiters(clock.RealClock{})
	l.Set("ns/a", Limit{RequestsPerSecond: 1, Burst: 1, ReplyBytes: 10})
	a := l.Replies("ns/a")
	if a != l.Replies("ns/a") {
		t.Fatal("two lookups of one corpus gave two budgets")
	}
	if !a.TryAcquire(10) || a.TryAcquire(1) {
		t.Fatal("the corpus's budget is not the size it was set to")
	}
	l.Set("ns/a", Limit{RequestsPerSecond: 1, Burst: 1, ReplyBytes: 20})
	if l.Replies("ns/a") != a || !a.TryAcquire(10) {
		t.Fatal("a raised budget did not apply in place")
	}
	if b := l.Replies("ns/b"); b == a || !b.TryAcquire(DefaultReplyBytes) {
		t.Fatal("another corpus shares the budget or lacks the default one")
	}
	l.Forget("ns/a")
	if l.Replies("ns/a") == a {
		t.Fatal("a forgotten corpus kept its budget")
	}
}
