package surface

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
)

// bigAnswers answers every completion with about size bytes of text, the
// most a reply may carry under DefaultMaxReplyBytes.
func bigAnswers(size int) http.HandlerFunc {
	text := strings.Repeat("x", size)
	return func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, completion(text, nil))
	}
}

// heapInUse is the live heap after a collection.
func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// TestHistoryBudgetBoundsEveryCorpus: eight corpora, each with a plain and
// a streamed chat client, talk to a target answering about 1 MB per
// completion; one corpus starts many conversations. The history the
// operator retains stays under its one budget (by the store's own count
// and by the live heap), the greedy corpus's oldest conversation is
// evicted, and the first corpus's single conversation still takes a
// follow-up.
func TestHistoryBudgetBoundsEveryCorpus(t *testing.T) {
	const (
		answer  = 1000 * 1000
		budget  = 8 << 20
		corpora = 8
	)
	srv := newRecorder(t, bigAnswers(answer))
	ctx := context.Background()
	before := heapInUse()
	history := NewHistory(budget)
	var chats []*Chat
	// chatFor makes the corpus's plain and streamed clients, which share
	// its store, and returns the plain one.
	chatFor := func(corpus int) *Chat {
		var plain *Chat
		for _, stream := range modes() {
			cfg := chatConfig(srv.URL)
			cfg.Stream, cfg.History, cfg.Tenant = stream, history, fmt.Sprint("ns/corpus-", corpus)
			c := newChat(t, cfg)
			chats = append(chats, c)
			if !stream {
				plain = c
			}
		}
		return plain
	}
	// retained is the history held, by the stores' own counts (each
	// corpus's store counted once) and by the history's.
	retained := func() int64 {
		stores := map[*conversations]bool{}
		var n int64
		for _, c := range chats {
			if !stores[c.convs] {
				stores[c.convs] = true
				n += c.convs.bytes
			}
		}
		if h := history.Bytes(); h != n {
			t.Fatalf("the history counts %d bytes, its stores %d", h, n)
		}
		return n
	}
	first := chatFor(0)
	firstID, _, err := first.StartConversation(ctx, persona, "first")
	if err != nil {
		t.Fatalf("first corpus: %v", err)
	}
	for corpus := 1; corpus < corpora-1; corpus++ {
		c := chatFor(corpus)
		if _, _, err := c.StartConversation(ctx, persona, fmt.Sprint("corpus ", corpus)); err != nil {
			t.Fatalf("corpus %d: %v", corpus, err)
		}
	}
	greedy := chatFor(corpora - 1)
	var greedyIDs []string
	var most int64
	for i := range 24 {
		id, _, err := greedy.StartConversation(ctx, persona, fmt.Sprint("greedy ", i))
		if err != nil {
			t.Fatalf("greedy %d: %v", i, err)
		}
		greedyIDs = append(greedyIDs, id)
		most = max(most, retained())
	}
	if most > budget {
		t.Errorf("the operator retained up to %d bytes of history, over its %d-byte budget", most, budget)
	}
	grown := heapInUse() - before
	t.Logf("retained %d bytes of history; live heap grew by %d bytes", retained(), grown)
	if grown > budget+4<<20 {
		t.Errorf("the live heap grew by %d bytes, over the %d-byte history budget plus 4 MiB", grown, budget)
	}
	if _, err := first.FollowUp(ctx, persona, firstID, "again"); err != nil {
		t.Errorf("the first corpus's only conversation was evicted for another's: %v", err)
	}
	if _, err := greedy.FollowUp(ctx, persona, greedyIDs[0], "again"); err == nil {
		t.Errorf("the greedy corpus's oldest conversation survived %d more of its own", len(greedyIDs)-1)
	}
	runtime.KeepAlive(chats)
}

// TestHistoryEndAndForget: a conversation ended by its persona (or by the
// operator for a run that ended) and a forgotten tenant's conversations
// give their bytes back; another persona cannot end one.
func TestHistoryEndAndForget(t *testing.T) {
	h := NewHistory(1 << 20)
	a := h.store("ns/a", 10, 10, 1<<20)
	b := h.store("ns/b", 10, 10, 1<<20)
	one := a.start(persona, turn{"q1", "a1"})
	two := a.start(persona, turn{"q2", "a2"})
	three := b.start(persona, turn{"q3", "a3"})
	(&Chat{convs: a}).EndConversation("someone-else", one)
	if got := held(a, one); !got[0] || h.Bytes() != 12 {
		t.Fatalf("another persona ended a conversation: held %v, %d bytes", got, h.Bytes())
	}
	(&Chat{convs: a}).EndConversation(persona, one)
	h.End("ns/a", two)
	if got := held(a, one, two); got[0] || got[1] || h.Bytes() != 4 {
		t.Errorf("after ending both of a's: held %v, %d bytes; want none, 4 (b's)", got, h.Bytes())
	}
	h.Forget("ns/b")
	if got := held(b, three); got[0] || h.Bytes() != 0 {
		t.Errorf("after forgetting b: held %v, %d bytes; want none, 0", got, h.Bytes())
	}
}
