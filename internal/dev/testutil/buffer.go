package testutil

import (
	"strings"
	"sync"
)

// LockedBuffer collects what a server's or command's goroutines write (a
// log, an output) so a test can read it while they still run.
type LockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
