package ragtarget_test

import (
	"context"
	"slices"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/targettest"
	"github.com/ragcanary/ragcanary/internal/driver"
	httpdriver "github.com/ragcanary/ragcanary/internal/driver/http"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// waitTimeout bounds each wait for the service's background work.
const waitTimeout = 5 * time.Second

const (
	sourceToken = "src-secret-token"
	alice       = driver.Token("alice-secret-token")
	bob         = driver.Token("bob-secret-token")
)

// env is a ragtarget served over real HTTP, driven by a fake clock and read
// through the http driver.
type env struct {
	t       *testing.T
	svc     *ragtarget.Service
	url     string
	clk     *testingclock.FakeClock
	drv     *httpdriver.Driver
	cfg     ragtarget.Config
	elapsed time.Duration
}

// start serves cfg (with tokens and a fake clock filled in) on a loopback listener.
func start(t *testing.T, cfg ragtarget.Config) *env {
	t.Helper()
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cfg.Clock = clk
	cfg.SourceToken = sourceToken
	cfg.Tokens = map[string]string{alice.Reveal(): "user:alice", bob.Reveal(): "user:bob"}
	if cfg.ContentSyncInterval == 0 {
		cfg.ContentSyncInterval = time.Second
	}
	if cfg.ACLSyncInterval == 0 {
		cfg.ACLSyncInterval = 3 * time.Second
	}
	tg := targettest.Start(t, cfg)
	return &env{t: t, svc: tg.Service, url: tg.URL, clk: clk, drv: tg.Driver(t, 2*time.Second), cfg: cfg}
}

// advance moves the fake clock by one second and waits until every sync tick
// due by then has been processed. Steps are single seconds because a fake
// ticker, like a real one, drops ticks its reader has not consumed.
func (e *env) advance() {
	e.t.Helper()
	e.elapsed += time.Second
	e.clk.Step(time.Second)
	wantContent := uint64(e.elapsed / e.cfg.ContentSyncInterval)
	wantACL := uint64(e.elapsed / e.cfg.ACLSyncInterval)
	testutil.EventuallyTrue(e.t, waitTimeout, "sync ticks processed", func() bool {
		return e.svc.SyncCount(ragtarget.SyncContent) == wantContent && e.svc.SyncCount(ragtarget.SyncACL) == wantACL
	})
}

// advanceTo advances second by second until elapsed reaches d.
func (e *env) advanceTo(d time.Duration) {
	e.t.Helper()
	for e.elapsed < d {
		e.advance()
	}
}

func (e *env) create(id, body string, principals ...string) {
	e.t.Helper()
	if err := e.drv.CreateDocument(context.Background(), driver.Document{ID: id, Title: "Doc " + id, Body: body, Principals: principals}); err != nil {
		e.t.Fatalf("CreateDocument(%s): %v", id, err)
	}
}

// visible reports whether persona's search for query returns document id.
func (e *env) visible(persona driver.Token, query, id string) bool {
	e.t.Helper()
	hits, err := e.drv.Search(context.Background(), persona, query, 10)
	if err != nil {
		e.t.Fatalf("Search: %v", err)
	}
	return slices.ContainsFunc(hits, func(h driver.Hit) bool { return h.DocumentID == id })
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
