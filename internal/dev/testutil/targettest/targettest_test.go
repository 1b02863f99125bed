package targettest_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/dev/testutil/targettest"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

const alice = driver.Token("targettest-alice")

// A planted document is retrievable by its principal at once, through the
// wrapped handler, although the Config named neither a source token nor
// sync intervals.
func TestStartPlantsAndServesThroughWrap(t *testing.T) {
	var requests atomic.Int32
	tg := targettest.Start(t, ragtarget.Config{Tokens: map[string]string{alice.Reveal(): "user:alice"}},
		targettest.Wrap(func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				next.ServeHTTP(w, r)
			})
		}))
	tg.Plant(t, driver.Document{ID: "doc-1", Title: "plan", Body: "the plan mentions zebrafinch", Principals: []string{"user:alice"}})
	hits, err := tg.Driver(t, 5*time.Second).Search(context.Background(), alice, "zebrafinch", 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 || hits[0].DocumentID != "doc-1" {
		t.Fatalf("hits = %+v, want doc-1 first", hits)
	}
	if requests.Load() == 0 {
		t.Fatal("no request went through the wrapping handler")
	}
}

// With zero intervals the schedules are Manual: a document created at the
// source is indexed when the test calls Sync, not before.
func TestZeroIntervalsAreManual(t *testing.T) {
	tg := targettest.Start(t, ragtarget.Config{Tokens: map[string]string{alice.Reveal(): "user:alice"}})
	d := tg.Driver(t, 5*time.Second)
	if err := d.CreateDocument(context.Background(), driver.Document{ID: "doc-1", Title: "plan",
		Body: "zebrafinch", Principals: []string{"user:alice"}}); err != nil {
		t.Fatal(err)
	}
	if n := tg.SyncCount(ragtarget.SyncContent); n != 0 {
		t.Fatalf("content syncs = %d before any Sync, want 0", n)
	}
	tg.Sync(t)
	hits, err := d.Search(context.Background(), alice, "zebrafinch", 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 {
		t.Fatalf("hits after Sync = %+v, want doc-1", hits)
	}
}
