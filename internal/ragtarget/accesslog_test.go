package ragtarget_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// lockedBuffer is a log sink safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// At debug level every call is logged with the caller's address (how the
// cluster test tells two operator replicas apart) and never a credential.
func TestAccessLogNamesTheCallerNeverTheToken(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		var logs lockedBuffer
		e := start(t, ragtarget.Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: level}))})
		if _, err := e.drv.Search(context.Background(), alice, "anything", 3); err != nil {
			t.Fatalf("search: %v", err)
		}
		out := logs.String()
		if level == slog.LevelInfo {
			if strings.Contains(out, "msg=call") {
				t.Fatalf("info level logged calls:\n%s", out)
			}
			continue
		}
		if !strings.Contains(out, "msg=call method=POST path=/v1/search remote=127.0.0.1:") || !strings.Contains(out, "status=200") {
			t.Fatalf("no access line for the search:\n%s", out)
		}
		if strings.Contains(out, alice.Reveal()) || strings.Contains(out, sourceToken) {
			t.Fatalf("a credential reached the log:\n%s", out)
		}
	}
}
