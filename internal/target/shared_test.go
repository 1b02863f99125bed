package target

import "testing"

// TestSharedClosesWhenNeitherHeldNorCurrent walks the rule of shared: an
// entry closes exactly when nobody holds it and no corpus has it as its
// current configuration.
func TestSharedClosesWhenNeitherHeldNorCurrent(t *testing.T) {
	closed := map[string]bool{}
	s := newShared(func(v string) { closed[v] = true })
	open := func(v string) func() (string, error) { return func() (string, error) { return v, nil } }
	a, b := idOf([]byte("a")), idOf([]byte("b"))

	_, relA, _ := s.acquire("ns/one", a, open("a"))
	_, relA2, _ := s.acquire("ns/two", a, open("a-again"))
	relA()
	relA2()
	if closed["a"] {
		t.Fatal("an entry current for two corpora was closed")
	}
	_, relB, _ := s.acquire("ns/one", b, open("b")) // ns/one moves to b
	relB()
	if closed["a"] {
		t.Fatal("an entry still current for ns/two was closed")
	}
	held := s.hold(a) // a run of ns/two
	_, relB2, _ := s.acquire("ns/two", b, open("b-again"))
	relB2()
	if closed["a"] {
		t.Fatal("an entry a run holds was closed when its corpus moved on")
	}
	held()
	if !closed["a"] {
		t.Fatal("an entry neither held nor current stayed open")
	}
	_, relKept, _ := s.acquire("", a, open("a-kept")) // a kept copy
	relKept()
	if !closed["a-kept"] {
		t.Fatal("a kept copy's entry stayed open after its only holder let go")
	}
	s.forget("ns/one")
	if closed["b"] {
		t.Fatal("an entry still current for ns/two closed when ns/one was forgotten")
	}
	s.forget("ns/two")
	if !closed["b"] {
		t.Fatal("an entry of forgotten corpora stayed open")
	}
	if n, ever := s.counts(); n != 0 || ever != 3 {
		t.Errorf("open %d, opened %d; want 0 and 3 (a, b, a again for the kept copy)", n, ever)
	}
}

// TestSharedHoldAfterTheLastReleaseHoldsNothing: a hold taken on an entry
// already closed neither panics nor resurrects it.
func TestSharedHoldAfterTheLastReleaseHoldsNothing(t *testing.T) {
	closed := 0
	s := newShared(func(string) { closed++ })
	id := idOf([]byte("x"))
	_, rel, _ := s.acquire("", id, func() (string, error) { return "x", nil })
	rel()
	late := s.hold(id)
	late()
	if n, _ := s.counts(); n != 0 || closed != 1 {
		t.Errorf("open %d, closed %d times; want 0 open, closed once", n, closed)
	}
}
