package target

import (
	"context"
	"errors"
	"sync"

	"golang.org/x/time/rate"
	"k8s.io/utils/clock"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// Limit is a corpus's request budget.
type Limit struct {
	// RequestsPerSecond is the sustained rate; values below 1 are raised to 1.
	RequestsPerSecond int32
	// Burst is the largest number of requests sent at once; at least 1.
	Burst int32
	// ReplyBytes bounds the reply bytes held at once over all the corpus's
	// calls in flight (see ReplyBudget); DefaultReplyBytes when not
	// positive. Only the operator sets it: a tenant's Corpus cannot raise
	// what it may make the operator hold.
	ReplyBytes int64
}

func (l Limit) normalized() Limit {
	return Limit{RequestsPerSecond: max(l.RequestsPerSecond, 1), Burst: max(l.Burst, 1),
		ReplyBytes: replyBytes(l.ReplyBytes)}
}

// DefaultLimit applies when neither a corpus nor the operator sets a limit.
var DefaultLimit = Limit{RequestsPerSecond: 10, Burst: 20, ReplyBytes: DefaultReplyBytes}

// CorpusLimit is the corpus's own rate limit, with def for any value the
// corpus leaves unset and DefaultLimit where def is unset too, so a caller
// built without defaults never ends up at one request per second by accident.
func CorpusLimit(c *v1alpha1.Corpus, def Limit) Limit {
	if def.RequestsPerSecond <= 0 {
		def.RequestsPerSecond = DefaultLimit.RequestsPerSecond
	}
	if def.Burst <= 0 {
		def.Burst = DefaultLimit.Burst
	}
	limit := Limit{RequestsPerSecond: c.Spec.RateLimit.RequestsPerSecond, Burst: c.Spec.RateLimit.Burst,
		ReplyBytes: replyBytes(def.ReplyBytes)}
	if limit.RequestsPerSecond <= 0 {
		limit.RequestsPerSecond = def.RequestsPerSecond
	}
	if limit.Burst <= 0 {
		limit.Burst = def.Burst
	}
	return limit
}

// Limiters is a registry of token buckets and reply budgets, one of each per
// corpus. Every probe loop and suite run against a corpus draws from the
// same bucket and budget, so the corpus limit holds however many canaries
// target it. It is safe for concurrent use.
type Limiters struct {
	clock clock.WithTicker

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	limit   Limit
	limiter *rate.Limiter
	replies *ReplyBudget
}

// NewLimiters returns an empty registry; time comes from c.
func NewLimiters(c clock.WithTicker) *Limiters {
	return &Limiters{clock: c, buckets: map[string]*bucket{}}
}

// Set creates the corpus's bucket or updates its limits in place, so a
// changed Corpus spec takes effect without resetting waiting callers.
func (l *Limiters) Set(corpus string, limit Limit) {
	limit = limit.normalized()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[corpus]
	if !ok {
		l.buckets[corpus] = newBucket(limit)
		return
	}
	if b.limit == limit {
		return
	}
	now := l.clock.Now()
	b.limiter.SetLimitAt(now, rate.Limit(limit.RequestsPerSecond))
	b.limiter.SetBurstAt(now, int(limit.Burst))
	b.replies.resize(limit.ReplyBytes)
	b.limit = limit
}

func newBucket(limit Limit) *bucket {
	return &bucket{limit: limit,
		limiter: rate.NewLimiter(rate.Limit(limit.RequestsPerSecond), int(limit.Burst)),
		replies: NewReplyBudget(limit.ReplyBytes)}
}

// Replies is the corpus's reply budget, shared by every driver built for
// the corpus. A corpus not Set yet gets DefaultLimit, which its first Set
// then adjusts in place.
func (l *Limiters) Replies(corpus string) *ReplyBudget {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[corpus]
	if !ok {
		b = newBucket(DefaultLimit.normalized())
		l.buckets[corpus] = b
	}
	return b.replies
}

// Forget drops a corpus's bucket and reply budget, for example when the
// Corpus is deleted.
func (l *Limiters) Forget(corpus string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.buckets, corpus)
}

// errUnknownCorpus means Wait was called before Set for the corpus.
var errUnknownCorpus = errors.New("target: no rate limit registered for corpus")

// Wait blocks until the corpus's bucket allows one request or ctx ends. It
// reserves against the injected clock, so tests control it.
func (l *Limiters) Wait(ctx context.Context, corpus string) error {
	l.mu.Lock()
	b, ok := l.buckets[corpus]
	l.mu.Unlock()
	if !ok {
		return errUnknownCorpus
	}
	now := l.clock.Now()
	r := b.limiter.ReserveN(now, 1)
	if !r.OK() {
		return errors.New("target: rate limit burst is below one request")
	}
	delay := r.DelayFrom(now)
	if delay <= 0 {
		return nil
	}
	t := l.clock.NewTimer(delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		// Give the token back so an abandoned probe does not slow the others.
		r.CancelAt(l.clock.Now())
		return ctx.Err()
	case <-t.C():
		return nil
	}
}
