package ragtarget_test

import (
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// TestAnswerCacheExpiry: the accessor reports the TTL end of the answer a
// persona was served, keeps reporting it across an ACL change the stale
// cache ignores, and reports nothing once the entry expired.
func TestAnswerCacheExpiry(t *testing.T) {
	ttl := 4 * time.Second
	e := start(t, ragtarget.Config{AnswerCacheTTL: ttl, CacheIgnoresACLChanges: true})
	if _, ok := e.svc.AnswerCacheExpiry("user:alice", question); ok {
		t.Fatal("expiry reported before any answer was cached")
	}
	e.create("doc-1", "the zebrafinch nests near the river", "user:alice")
	e.advance() // indexed
	storedAt := e.clk.Now()
	if !e.answerShows(alice) {
		t.Fatal("answer does not show the granted document")
	}
	got, ok := e.svc.AnswerCacheExpiry("user:alice", question)
	if !ok || !got.Equal(storedAt.Add(ttl)) {
		t.Fatalf("expiry %v (ok %v), want %v", got, ok, storedAt.Add(ttl))
	}
	if _, ok := e.svc.AnswerCacheExpiry("user:bob", question); ok {
		t.Error("expiry reported for a principal that was never answered")
	}
	e.advanceTo(e.elapsed + ttl - time.Second)
	if again, ok := e.svc.AnswerCacheExpiry("user:alice", question); !ok || !again.Equal(got) {
		t.Errorf("expiry %v (ok %v) before the TTL ended, want %v unchanged", again, ok, got)
	}
	e.advance()
	if _, ok := e.svc.AnswerCacheExpiry("user:alice", question); ok {
		t.Error("expiry reported for an expired entry")
	}
}
