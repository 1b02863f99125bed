package surface

import (
	"container/list"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"sync"

	"github.com/ragcanary/ragcanary/internal/driver"
)

// Defaults bounding the conversation store when a ChatConfig field is zero.
const (
	DefaultMaxConversations = 256
	DefaultMaxTurns         = 16
	DefaultMaxHistoryBytes  = 16 << 20
)

// turn is one question and the answer the surface gave it.
type turn struct {
	question, answer string
}

func (t turn) size() int64 { return int64(len(t.question) + len(t.answer)) }

// conversation is one chat held on the operator's side: chat-completions
// APIs keep no state, so a conversation is its history, sent whole with
// every follow-up.
type conversation struct {
	id string
	// owner is a digest of the persona's credential: a follow-up by another
	// persona is refused without the store holding anyone's token.
	owner [sha256.Size]byte
	turns []turn
	bytes int64
	// busy marks a turn in flight: two at once would race for the history's
	// order, and the probes that converse ask one turn at a time.
	busy bool
}

// conversations is a bounded store of conversations, least recently used
// first out. It bounds the count, the turns of each, and the bytes of all:
// answers run to MaxReplyBytes, and count times turns of those would be far
// more than an operator should hold. It is safe for concurrent use.
type conversations struct {
	mu       sync.Mutex
	maxConvs int
	maxTurns int
	maxBytes int64
	bytes    int64
	byID     map[string]*list.Element
	// lru holds *conversation, most recently used at the front.
	lru *list.List
}

func newConversations(maxConvs, maxTurns int, maxBytes int64) *conversations {
	return &conversations{maxConvs: maxConvs, maxTurns: maxTurns, maxBytes: maxBytes,
		byID: map[string]*list.Element{}, lru: list.New()}
}

func ownerOf(persona driver.Token) [sha256.Size]byte {
	return sha256.Sum256([]byte(persona.Reveal()))
}

// newConversationID is random, so one persona cannot guess another's, and
// within the driver contract's ID pattern.
func newConversationID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return "conv-" + hex.EncodeToString(b[:])
}

// start stores a new conversation with its first turn and returns its ID,
// evicting the least recently used beyond the bounds.
func (s *conversations) start(persona driver.Token, first turn) string {
	c := &conversation{id: newConversationID(), owner: ownerOf(persona)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byID[c.id] = s.lru.PushFront(c)
	s.addTurn(c, first)
	s.evict()
	return c.id
}

// checkout returns a copy of the history of conversation id for a new turn
// and marks it busy; release ends the turn. Another persona's conversation
// is reported exactly as a missing one, so its existence does not leak.
func (s *conversations) checkout(persona driver.Token, id string) ([]turn, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byID[id]
	if !ok {
		return nil, reasonConvNotFound
	}
	c := e.Value.(*conversation)
	switch {
	case c.owner != ownerOf(persona):
		return nil, reasonConvNotFound
	case c.busy:
		return nil, reasonConvBusy
	case len(c.turns) >= s.maxTurns:
		return nil, reasonConvFull
	}
	c.busy = true
	s.lru.MoveToFront(e)
	return append([]turn(nil), c.turns...), ""
}

// release ends the turn checkout began, appending t when it succeeded. A
// failed turn leaves the history as it was: the surface's answer is
// unknown, so the next follow-up is asked as if it had not happened. A
// conversation evicted meanwhile stays gone.
func (s *conversations) release(id string, t turn, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, found := s.byID[id]
	if !found {
		return
	}
	c := e.Value.(*conversation)
	c.busy = false
	if ok {
		s.lru.MoveToFront(e)
		s.addTurn(c, t)
		s.evict()
	}
}

func (s *conversations) addTurn(c *conversation, t turn) {
	c.turns = append(c.turns, t)
	c.bytes += t.size()
	s.bytes += t.size()
}

// evict drops least recently used conversations until the count and bytes
// fit. The conversation just used is at the front, so it goes only when it
// alone is over the byte bound.
func (s *conversations) evict() {
	for s.lru.Len() > 0 && (s.lru.Len() > s.maxConvs || s.bytes > s.maxBytes) {
		s.remove(s.lru.Back())
	}
}

func (s *conversations) remove(e *list.Element) {
	c := s.lru.Remove(e).(*conversation)
	delete(s.byID, c.id)
	s.bytes -= c.bytes
}

// len is how many conversations are held.
func (s *conversations) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lru.Len()
}
