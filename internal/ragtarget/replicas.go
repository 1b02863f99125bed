package ragtarget

import (
	"log/slog"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// laggingReplica applies every index change a fixed delay after the primary,
// like an asynchronously replicated read replica. Changes queue in order and
// each timer applies the oldest one, so order is kept even when timers fire
// concurrently.
type laggingReplica struct {
	*replica
	lag    time.Duration
	clock  clock.WithDelayedExecution
	logger *slog.Logger

	// onApplied invalidates answers a lagging replica may have fed into the
	// shared cache while it still served the old state.
	onApplied func(affected map[string]struct{})

	mu      sync.Mutex
	pending []pendingChange
}

type pendingChange struct {
	ch       change
	affected map[string]struct{}
}

func (l *laggingReplica) enqueue(ch change, affected map[string]struct{}) {
	l.mu.Lock()
	l.pending = append(l.pending, pendingChange{ch: ch, affected: affected})
	l.mu.Unlock()
	// The callback may run under a fake clock's lock, so the work happens in
	// its own goroutine.
	l.clock.AfterFunc(l.lag, func() { go l.applyOldest() })
}

func (l *laggingReplica) applyOldest() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.pending) == 0 {
		return
	}
	next := l.pending[0]
	if err := l.apply(next.ch); err != nil {
		l.logger.Error("replica apply failed", "error", err)
	}
	l.pending = l.pending[1:]
	if l.onApplied != nil {
		l.onApplied(next.affected)
	}
}

// backlog is the number of changes not yet applied.
func (l *laggingReplica) backlog() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pending)
}
