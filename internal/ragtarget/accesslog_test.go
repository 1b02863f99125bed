package ragtarget_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// At debug level every call is logged with the caller's address (how the
// cluster test tells two operator replicas apart) and never a credential.
func TestAccessLogNamesTheCallerNeverTheToken(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		var logs testutil.LockedBuffer
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

// At debug level each sync that changed the index says when it began and
// which documents it changed: the truth a cluster test holds a measured
// exclusion against.
func TestSyncLogSaysWhenAChangeReachedTheIndex(t *testing.T) {
	var logs testutil.LockedBuffer
	e := start(t, ragtarget.Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	e.create("d1", "quarterly numbers", "user:alice")
	e.advance()
	testutil.EventuallyTrue(t, waitTimeout, "the content sync logged", func() bool {
		return strings.Contains(logs.String(), `msg="index sync applied" kind=content began=2026-01-01T00:00:01Z documents=d1`)
	})
	if err := e.drv.Revoke(context.Background(), "d1", "user:alice"); err != nil {
		t.Fatal(err)
	}
	e.advanceTo(3 * time.Second)
	testutil.EventuallyTrue(t, waitTimeout, "the ACL sync logged", func() bool {
		return strings.Contains(logs.String(), `msg="index sync applied" kind=acl began=2026-01-01T00:00:03Z documents=d1`)
	})
	if strings.Contains(logs.String(), "kind=content began=2026-01-01T00:00:02Z") {
		t.Errorf("a sync that changed nothing was logged:\n%s", logs.String())
	}
}
