package ragtarget

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
)

// Defaults for the conversation store.
const (
	// DefaultMaxConversations bounds how many conversations are kept; the
	// oldest started is evicted first.
	DefaultMaxConversations = 1000
	// maxHistoryPassages bounds what one conversation remembers.
	maxHistoryPassages = 32
)

// errNoConversation is a follow-up in a conversation that does not exist,
// was evicted or belongs to another principal: all three look the same from
// outside, so a persona cannot probe for other personas' conversations.
var errNoConversation = errors.New("no such conversation")

// conversation is one persona's conversation: who started it and the
// passages its turns cited, which follow-ups may use as context.
type conversation struct {
	owner   string
	history []scoredChunk
}

// remember adds the passages a turn cited, once each, keeping the newest
// maxHistoryPassages.
func (c *conversation) remember(cited []scoredChunk) {
	for _, h := range cited {
		if !containsChunk(c.history, h.chunkID) {
			c.history = append(c.history, h)
		}
	}
	if over := len(c.history) - maxHistoryPassages; over > 0 {
		c.history = append([]scoredChunk(nil), c.history[over:]...)
	}
}

func containsChunk(chunks []scoredChunk, id string) bool {
	for _, c := range chunks {
		if c.chunkID == id {
			return true
		}
	}
	return false
}

// conversationStore keeps conversations in memory, bounded: a new one
// beyond max evicts the oldest started. A follow-up in an evicted one is a
// 404, as in any system that expires sessions.
type conversationStore struct {
	max int

	mu    sync.Mutex
	byID  map[string]*conversation
	order []string // IDs, oldest started first
}

func newConversationStore(max int) *conversationStore {
	return &conversationStore{max: max, byID: map[string]*conversation{}}
}

func (s *conversationStore) start(owner string, cited []scoredChunk) (string, error) {
	id, err := newConversationID()
	if err != nil {
		return "", err
	}
	c := &conversation{owner: owner}
	c.remember(cited)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byID[id] = c
	s.order = append(s.order, id)
	for len(s.order) > s.max {
		delete(s.byID, s.order[0])
		s.order = s.order[1:]
	}
	return id, nil
}

// history returns a copy of the conversation's passages if owner owns it.
func (s *conversationStore) history(owner, id string) ([]scoredChunk, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.byID[id]
	if !ok || c.owner != owner {
		return nil, errNoConversation
	}
	return append([]scoredChunk(nil), c.history...), nil
}

// remember records a follow-up's cited passages; a conversation evicted
// meanwhile is not brought back.
func (s *conversationStore) remember(owner, id string, cited []scoredChunk) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.byID[id]; ok && c.owner == owner {
		c.remember(cited)
	}
}

// len reports how many conversations are kept.
func (s *conversationStore) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byID)
}

// newConversationID is unguessable, so an ID seen in a log lets no one else
// join the conversation (ownership is checked as well).
func newConversationID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "conv-" + hex.EncodeToString(b[:]), nil
}

// startConversation answers the first question as principal, authorised like
// any retrieval, and opens a conversation remembering the cited passages.
// Conversation turns bypass the answer cache: each turn is a fresh retrieval.
func (s *Service) startConversation(ctx context.Context, principal, question string) (string, answer, error) {
	hits, err := s.search(ctx, principal, question, s.cfg.AnswerPassages)
	if err != nil {
		return "", answer{}, err
	}
	id, err := s.conversations.start(principal, hits)
	if err != nil {
		return "", answer{}, err
	}
	return id, composeAnswer(question, hits), nil
}

// followUp answers question in conversation id. The correct behaviour
// re-authorises: the answer is built only from a fresh retrieval as
// principal, so once the ACL sync applied a revocation the revoked passage
// is gone from follow-ups too. With ConversationReusesHistory (a defect)
// the passages earlier turns cited are reused without any check, ahead of
// the fresh ones: revoked content stays in the conversation forever.
func (s *Service) followUp(ctx context.Context, principal, id, question string) (answer, error) {
	history, err := s.conversations.history(principal, id)
	if err != nil {
		return answer{}, err
	}
	hits, err := s.search(ctx, principal, question, s.cfg.AnswerPassages)
	if err != nil {
		return answer{}, err
	}
	passages := hits
	if s.cfg.ConversationReusesHistory {
		passages = withHistory(history, hits, s.cfg.AnswerPassages)
	}
	s.conversations.remember(principal, id, passages)
	return composeAnswer(question, passages), nil
}

// withHistory puts remembered passages first, then fresh hits not already
// among them, at most n in all.
func withHistory(history, fresh []scoredChunk, n int) []scoredChunk {
	out := make([]scoredChunk, 0, n)
	for _, group := range [][]scoredChunk{history, fresh} {
		for _, h := range group {
			if len(out) == n {
				return out
			}
			if !containsChunk(out, h.chunkID) {
				out = append(out, h)
			}
		}
	}
	return out
}

// ConversationCount reports how many conversations are kept, for tests of
// the bound.
func (s *Service) ConversationCount() int { return s.conversations.len() }
