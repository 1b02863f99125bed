package suite_test

import (
	"context"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/targettest"
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

// startLiveTarget serves cfg (tokens filled in) and plants docs. Syncs are
// manual: Plant makes the planted documents visible at once.
func startLiveTarget(tb testing.TB, cfg ragtarget.Config, docs []driver.Document) *liveTarget {
	tb.Helper()
	cfg.SourceToken = sourceToken
	cfg.Tokens = map[string]string{aliceToken.Reveal(): alicePrinc, bobToken.Reveal(): bobPrinc}
	tg := targettest.Start(tb, cfg)
	tg.Plant(tb, docs...)
	return &liveTarget{svc: tg.Service, url: tg.URL, drv: tg.Driver(tb, callDeadline)}
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
