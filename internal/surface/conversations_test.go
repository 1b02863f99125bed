package surface

import (
	"regexp"
	"strings"
	"testing"
)

// held reports which of ids the store still holds for persona.
func held(s *conversations, ids ...string) []bool {
	out := make([]bool, len(ids))
	for i, id := range ids {
		s.h.mu.Lock()
		_, out[i] = s.byID[id]
		s.h.mu.Unlock()
	}
	return out
}

// TestConversationStoreEvictsLeastRecentlyUsed checks the count bound drops
// the conversation used longest ago, where a follow-up counts as use.
func TestConversationStoreEvictsLeastRecentlyUsed(t *testing.T) {
	s := newConversations(2, 10, 1<<20)
	a := s.start(persona, turn{"qa", "aa"})
	b := s.start(persona, turn{"qb", "ab"})
	// A turn of a in flight is a use of a: b is now the least recently used.
	if _, refused := s.checkout(persona, a); refused != "" {
		t.Fatalf("checkout a: %s", refused)
	}
	c := s.start(persona, turn{"qc", "ac"})
	if got := held(s, a, b, c); got[0] != true || got[1] != false || got[2] != true || s.len() != 2 {
		t.Errorf("held a, b, c = %v (%d held), want a and c, b evicted", got, s.len())
	}
	s.release(a, turn{"qa2", "aa2"}, true)
	if _, refused := s.checkout(persona, b); refused != reasonConvNotFound {
		t.Errorf("checkout of the evicted conversation: %q, want %q", refused, reasonConvNotFound)
	}
}

// TestConversationStoreBoundsBytes checks the byte bound evicts the oldest
// conversations, and the newest too when it alone is over it, and that the
// byte count goes back down with them.
func TestConversationStoreBoundsBytes(t *testing.T) {
	s := newConversations(100, 10, 100)
	a := s.start(persona, turn{strings.Repeat("q", 30), strings.Repeat("a", 30)})
	b := s.start(persona, turn{strings.Repeat("q", 30), strings.Repeat("a", 30)})
	if got := held(s, a, b); got[0] || !got[1] || s.bytes != 60 {
		t.Errorf("held a, b = %v with %d bytes, want only b with 60", got, s.bytes)
	}
	huge := s.start(persona, turn{strings.Repeat("q", 101), ""})
	if got := held(s, b, huge); got[0] || got[1] || s.bytes != 0 || s.len() != 0 {
		t.Errorf("held b, huge = %v with %d bytes, want none with 0", got, s.bytes)
	}

	// A turn that ends last makes its conversation the most recently used,
	// even when another's turn began and ended since it began.
	c := s.start(persona, turn{strings.Repeat("q", 20), ""})
	d := s.start(persona, turn{strings.Repeat("q", 20), ""})
	_, _ = s.checkout(persona, c)
	_, _ = s.checkout(persona, d)
	s.release(d, turn{strings.Repeat("q", 20), ""}, true)
	s.release(c, turn{strings.Repeat("q", 50), ""}, true) // 110 bytes: one must go
	if got := held(s, c, d); !got[0] || got[1] || s.bytes != 70 {
		t.Errorf("held c, d = %v with %d bytes, want c with 70, d evicted", got, s.bytes)
	}
}

// TestConversationStoreBoundsTurns checks a conversation at MaxTurns takes
// no further turn, and that a failed turn neither counts nor is kept.
func TestConversationStoreBoundsTurns(t *testing.T) {
	s := newConversations(10, 2, 1<<20)
	id := s.start(persona, turn{"q1", "a1"})
	if _, refused := s.checkout(persona, id); refused != "" {
		t.Fatal(refused)
	}
	s.release(id, turn{"failed", ""}, false)
	history, refused := s.checkout(persona, id)
	if refused != "" || len(history) != 1 {
		t.Fatalf("after a failed turn: history %v, refused %q; want the first turn only", history, refused)
	}
	s.release(id, turn{"q2", "a2"}, true)
	if _, refused := s.checkout(persona, id); refused != reasonConvFull {
		t.Errorf("third turn: refused %q, want %q", refused, reasonConvFull)
	}
}

// TestConversationStoreOneTurnAtATime checks a conversation with a turn in
// flight refuses another, and that its owner is checked before anything.
func TestConversationStoreOneTurnAtATime(t *testing.T) {
	s := newConversations(10, 10, 1<<20)
	id := s.start(persona, turn{"q", "a"})
	if _, refused := s.checkout("someone-else-entirely", id); refused != reasonConvNotFound {
		t.Errorf("another persona: refused %q, want %q", refused, reasonConvNotFound)
	}
	if _, refused := s.checkout(persona, id); refused != "" {
		t.Fatal(refused)
	}
	if _, refused := s.checkout(persona, id); refused != reasonConvBusy {
		t.Errorf("second checkout: refused %q, want %q", refused, reasonConvBusy)
	}
	s.release(id, turn{"q2", "a2"}, true)
	if _, refused := s.checkout(persona, id); refused != "" {
		t.Errorf("after release: refused %q", refused)
	}
}

// TestConversationIDs checks IDs are unique and fit the driver contract's
// pattern, so a caller may treat them as any driver's.
func TestConversationIDs(t *testing.T) {
	pattern := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@-]{0,199}$`)
	seen := map[string]bool{}
	for range 100 {
		id := newConversationID()
		if !pattern.MatchString(id) || seen[id] {
			t.Fatalf("id %q: matches %v, repeated %v", id, pattern.MatchString(id), seen[id])
		}
		seen[id] = true
	}
}
