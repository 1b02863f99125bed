package target

import (
	"sync"

	httpdriver "github.com/ragcanary/ragcanary/internal/driver/http"
)

// DefaultReplyBytes bounds the reply bytes held at once for one corpus when
// the operator sets no bound: eight replies at the HTTP driver's size limit.
const DefaultReplyBytes = 8 * httpdriver.DefaultMaxResponseBytes

// ReplyBudget is a corpus's reply byte budget: the bytes of reply bodies the
// operator holds at once, over every call in flight to the corpus. Without
// it a target that drips full-size replies to many probes at once holds
// that many reply buffers, and their goroutines, for whole timeouts. A call
// that finds the budget full fails at once, so a corpus that fills its own
// budget starves only its own calls. It is safe for concurrent use.
type ReplyBudget struct {
	mu    sync.Mutex
	size  int64
	inUse int64
}

var _ httpdriver.ReplyBudget = (*ReplyBudget)(nil)

// NewReplyBudget returns a budget of size bytes; DefaultReplyBytes when
// size is not positive.
func NewReplyBudget(size int64) *ReplyBudget {
	return &ReplyBudget{size: replyBytes(size)}
}

func replyBytes(size int64) int64 {
	if size <= 0 {
		return DefaultReplyBytes
	}
	return size
}

// TryAcquire reserves n bytes if they fit and reports whether they did.
func (b *ReplyBudget) TryAcquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n < 0 || b.inUse+n > b.size {
		return false
	}
	b.inUse += n
	return true
}

// Release returns n bytes reserved earlier.
func (b *ReplyBudget) Release(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.inUse = max(b.inUse-n, 0)
}

// InUse is how many bytes are reserved now.
func (b *ReplyBudget) InUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inUse
}

// resize changes the bound in place: calls holding more than a smaller
// size keep what they hold, and new reservations fail until use falls below it.
func (b *ReplyBudget) resize(size int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.size = replyBytes(size)
}
