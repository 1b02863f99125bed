package surface

import (
	"container/list"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"sync"

	"github.com/ragcanary/ragcanary/internal/driver"
)

// Defaults bounding the conversation store when a ChatConfig field is zero,
// and the operator-wide history when NewHistory is given no size.
//
// DefaultMaxTurns is the turns one conversation holds, its first included:
// a follow-up beyond it is refused (an error, never an answer). A run that
// probes the Conversation surface follows up in one conversation from the
// revocation to the exclusion timeout, so runs that could need more are
// refused before they start (controllers: conversationProblem).
const (
	DefaultMaxConversations = 256
	DefaultMaxTurns         = 1024
	DefaultMaxHistoryBytes  = 16 << 20
	DefaultHistoryBytes     = 64 << 20
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

// History is the conversation history held by every chat surface of one
// operator, under one byte budget. The manager owns it and hands it to the
// door; each tenant (a corpus) has one store, shared by all its chat
// clients. When the budget is exceeded the tenant holding the most bytes
// gives up its least recently used conversation first: with equal shares,
// that is the tenant furthest beyond its share, so a corpus holding little
// keeps its conversations however much another one starts. It is safe for
// concurrent use.
type History struct {
	// mu guards every store of the history: an eviction may cross stores.
	mu      sync.Mutex
	size    int64
	bytes   int64
	tenants map[string]*conversations
}

// NewHistory returns a history of size bytes; DefaultHistoryBytes when
// size ≤ 0.
func NewHistory(size int64) *History {
	if size <= 0 {
		size = DefaultHistoryBytes
	}
	return &History{size: size, tenants: map[string]*conversations{}}
}

// Bytes is the history held now: questions and answers of every turn kept.
func (h *History) Bytes() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.bytes
}

// TenantBytes is the history tenant holds now.
func (h *History) TenantBytes(tenant string) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, ok := h.tenants[tenant]; ok {
		return s.bytes
	}
	return 0
}

// Forget drops every conversation of tenant (a deleted corpus). A nil
// History holds nothing.
func (h *History) Forget(tenant string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.tenants[tenant]
	if !ok {
		return
	}
	for s.lru.Len() > 0 {
		s.remove(s.lru.Back())
	}
	delete(h.tenants, tenant)
}

// End drops conversation id of tenant (a run that ended); a conversation
// already gone is no error.
func (h *History) End(tenant, id string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, ok := h.tenants[tenant]; ok {
		if e, ok := s.byID[id]; ok {
			s.remove(e)
		}
	}
}

// store returns tenant's store, made with the bounds given on first use.
func (h *History) store(tenant string, maxConvs, maxTurns int, maxBytes int64) *conversations {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, ok := h.tenants[tenant]; ok {
		return s
	}
	s := &conversations{h: h, maxConvs: maxConvs, maxTurns: maxTurns, maxBytes: maxBytes,
		byID: map[string]*list.Element{}, lru: list.New()}
	h.tenants[tenant] = s
	return s
}

// fit evicts until the history is within its budget, from the tenant
// holding the most bytes, least recently used first.
func (h *History) fit() {
	for h.bytes > h.size {
		var most *conversations
		for _, s := range h.tenants {
			if s.lru.Len() > 0 && (most == nil || s.bytes > most.bytes) {
				most = s
			}
		}
		if most == nil {
			return
		}
		most.remove(most.lru.Back())
	}
}

// conversations is one tenant's bounded store of conversations, least
// recently used first out. It bounds the count, the turns of each, and the
// bytes of all; its History bounds the bytes of every tenant together.
// Its lock is the History's.
type conversations struct {
	h        *History
	maxConvs int
	maxTurns int
	maxBytes int64
	bytes    int64
	byID     map[string]*list.Element
	// lru holds *conversation, most recently used at the front.
	lru *list.List
}

// newConversations is a store with a history of its own, as large as its
// byte bound.
func newConversations(maxConvs, maxTurns int, maxBytes int64) *conversations {
	return NewHistory(maxBytes).store("", maxConvs, maxTurns, maxBytes)
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
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	s.byID[c.id] = s.lru.PushFront(c)
	s.addTurn(c, first)
	s.evict()
	return c.id
}

// checkout returns a copy of the history of conversation id for a new turn
// and marks it busy; release ends the turn. Another persona's conversation
// is reported exactly as a missing one, so its existence does not leak.
func (s *conversations) checkout(persona driver.Token, id string) ([]turn, string) {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
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
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
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

// end drops persona's conversation id; another persona's is left alone.
func (s *conversations) end(persona driver.Token, id string) {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	if e, ok := s.byID[id]; ok && e.Value.(*conversation).owner == ownerOf(persona) {
		s.remove(e)
	}
}

func (s *conversations) addTurn(c *conversation, t turn) {
	c.turns = append(c.turns, t)
	c.bytes += t.size()
	s.bytes += t.size()
	s.h.bytes += t.size()
}

// evict drops least recently used conversations until the count and bytes
// fit, this store's and then the history's. The conversation just used is
// at the front, so it goes only when it alone is over a byte bound.
func (s *conversations) evict() {
	for s.lru.Len() > 0 && (s.lru.Len() > s.maxConvs || s.bytes > s.maxBytes) {
		s.remove(s.lru.Back())
	}
	s.h.fit()
}

func (s *conversations) remove(e *list.Element) {
	c := s.lru.Remove(e).(*conversation)
	delete(s.byID, c.id)
	s.bytes -= c.bytes
	s.h.bytes -= c.bytes
}

// len is how many conversations are held.
func (s *conversations) len() int {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	return s.lru.Len()
}
