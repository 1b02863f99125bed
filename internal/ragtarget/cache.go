package ragtarget

import (
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/ragcanary/ragcanary/internal/driver"
)

// answerCache holds answers per (principal, question) for a TTL, like the
// response caches in front of production assistants.
type answerCache struct {
	ttl   time.Duration
	clock clock.PassiveClock

	mu      sync.Mutex
	entries map[cacheKey]cacheEntry
}

type cacheKey struct{ principal, question string }

type cacheEntry struct {
	answer  answer
	expires time.Time
}

type answer struct {
	text      string
	citations []string
	// status and reason are what the answer declares (contract v1.1).
	status driver.AnswerStatus
	reason driver.AnswerReason
}

func newAnswerCache(ttl time.Duration, c clock.PassiveClock) *answerCache {
	return &answerCache{ttl: ttl, clock: c, entries: map[cacheKey]cacheEntry{}}
}

func (c *answerCache) get(principal, question string) (answer, bool) {
	if c.ttl <= 0 {
		return answer{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := cacheKey{principal, question}
	e, ok := c.entries[k]
	if !ok {
		return answer{}, false
	}
	if !c.clock.Now().Before(e.expires) {
		delete(c.entries, k)
		return answer{}, false
	}
	return e.answer, true
}

func (c *answerCache) put(principal, question string, a answer) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[cacheKey{principal, question}] = cacheEntry{answer: a, expires: c.clock.Now().Add(c.ttl)}
}

// expiry returns when the fresh entry for (principal, question) expires;
// false when none is cached or it has expired. It never changes the cache.
func (c *answerCache) expiry(principal, question string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[cacheKey{principal, question}]
	if !ok || !c.clock.Now().Before(e.expires) {
		return time.Time{}, false
	}
	return e.expires, true
}

// invalidate drops every cached answer of the given principals.
func (c *answerCache) invalidate(principals map[string]struct{}) {
	if len(principals) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.entries {
		if _, ok := principals[k.principal]; ok {
			delete(c.entries, k)
		}
	}
}
