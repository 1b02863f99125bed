package suite_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	httpdriver "github.com/ragcanary/ragcanary/internal/driver/http"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
	"github.com/ragcanary/ragcanary/internal/suite"
)

// Credentials and principals of the in-process ragtarget. alice is the
// broad persona (every document), bob the narrow one (two memos).
const (
	sourceToken  = "suite-test-source-token"
	aliceToken   = driver.Token("suite-test-alice-token")
	bobToken     = driver.Token("suite-test-bob-token")
	alicePrinc   = "user:alice"
	bobPrinc     = "user:bob"
	liveK        = 5
	callDeadline = 5 * time.Second
)

// liveTarget is a ragtarget served over real HTTP on loopback, with the
// documents planted and synced, read through the http driver.
type liveTarget struct {
	svc *ragtarget.Service
	url string
	drv *httpdriver.Driver
}

// startLiveTarget serves cfg (tokens filled in) and plants docs. Sync
// intervals are long: SyncNow makes the planted documents visible at once.
func startLiveTarget(tb testing.TB, cfg ragtarget.Config, docs []driver.Document) *liveTarget {
	tb.Helper()
	cfg.SourceToken = sourceToken
	cfg.Tokens = map[string]string{aliceToken.Reveal(): alicePrinc, bobToken.Reveal(): bobPrinc}
	cfg.ContentSyncInterval, cfg.ACLSyncInterval = time.Hour, time.Hour
	svc, err := ragtarget.New(cfg)
	if err != nil {
		tb.Fatalf("ragtarget.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	svc.Start(ctx)
	srv := httptest.NewServer(svc.Handler())
	tb.Cleanup(func() {
		srv.Close()
		cancel()
		_ = svc.Close()
	})
	drv, err := httpdriver.New(httpdriver.Config{BaseURL: srv.URL, SourceToken: sourceToken, Timeout: callDeadline,
		HTTPClient: srv.Client()})
	if err != nil {
		tb.Fatal(err)
	}
	for _, d := range docs {
		if err := drv.CreateDocument(context.Background(), d); err != nil {
			tb.Fatalf("planting %s: %v", d.ID, err)
		}
	}
	for _, kind := range []ragtarget.SyncKind{ragtarget.SyncContent, ragtarget.SyncACL} {
		if err := svc.SyncNow(kind); err != nil {
			tb.Fatalf("sync %s: %v", kind, err)
		}
	}
	return &liveTarget{svc: svc, url: srv.URL, drv: drv}
}

// target is an execution target over the driver; wait is the rate limiter.
func (lt *liveTarget) target(wait func(context.Context) error, parallelism int) suite.Target {
	if wait == nil {
		wait = func(context.Context) error { return nil }
	}
	return suite.Target{
		Searcher: lt.drv, Answerer: lt.drv,
		Tokens: map[string]driver.Token{"alice": aliceToken, "bob": bobToken},
		Wait:   wait,
		K:      liveK, Parallelism: parallelism,
	}
}

// run executes and scores cases with the suite's default (zero-tolerance) gates.
func (lt *liveTarget) run(tb testing.TB, cases []v1alpha1.EvalCase) suite.Result {
	tb.Helper()
	plan, err := suite.PlanCases(cases, liveK, suite.Gates{})
	if err != nil {
		tb.Fatalf("PlanCases: %v", err)
	}
	execs, err := suite.Execute(context.Background(), lt.target(nil, 4), plan)
	if err != nil {
		tb.Fatalf("Execute: %v", err)
	}
	res, err := suite.Score(plan, execs, nil)
	if err != nil {
		tb.Fatalf("Score: %v", err)
	}
	return res
}
