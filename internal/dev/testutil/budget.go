package testutil

import "sync"

// CountingBudget is a reply budget (TryAcquire/Release, the shape every
// reply-reading client takes) of Size bytes that remembers the most it
// held at once, so a test can check a call drew on it and gave it all back.
type CountingBudget struct {
	Size int64

	mu          sync.Mutex
	inUse, peak int64
}

// TryAcquire takes n bytes if they fit.
func (b *CountingBudget) TryAcquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inUse+n > b.Size {
		return false
	}
	b.inUse += n
	b.peak = max(b.peak, b.inUse)
	return true
}

// Release gives n bytes back.
func (b *CountingBudget) Release(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.inUse -= n
}

// Held is what the budget holds now and the most it ever held.
func (b *CountingBudget) Held() (inUse, peak int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inUse, b.peak
}
