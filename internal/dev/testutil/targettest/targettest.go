// Package targettest starts the reference RAG service, ragtarget, over real
// HTTP for a test. It is the one starter every package's tests use, so a
// change to how ragtarget starts or stops is made once.
package targettest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/driver"
	httpdriver "github.com/ragcanary/ragcanary/internal/driver/http"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// DefaultSourceToken authenticates source-side calls when the test's
// Config names none (ragtarget requires one).
const DefaultSourceToken = "targettest-source-token"

// Manual is the sync interval of a schedule that never ticks during a
// test: the test syncs with Sync or SyncNow. A zero interval in the Config
// given to Start or Run means Manual here, not ragtarget's production
// default (30s/60s), whose ticks would land at random points of a test.
const Manual = 1000 * time.Hour

// Target is a started ragtarget served on a loopback httptest server. The
// embedded Service gives the test SyncNow and the other inspection hooks.
type Target struct {
	*ragtarget.Service
	// URL is the server's base URL.
	URL string
	// Server is the httptest server, for its Client.
	Server *httptest.Server
	// SourceToken is the source credential the service accepts.
	SourceToken string
}

// Option adjusts how Start serves the service.
type Option func(*settings)

type settings struct {
	wrap func(http.Handler) http.Handler
	life testing.TB
}

// Wrap serves the service's handler through mw, for tests that watch,
// gate or fault the traffic.
func Wrap(mw func(next http.Handler) http.Handler) Option {
	return func(s *settings) { s.wrap = mw }
}

// Lifetime ties the service and server to life's cleanup instead of the
// test's, for a target a parent test shares with its subtests.
func Lifetime(life testing.TB) Option {
	return func(s *settings) { s.life = life }
}

// Start runs a ragtarget with cfg, its sync schedules started, and serves
// it over HTTP until the test (or Lifetime) ends.
func Start(t testing.TB, cfg ragtarget.Config, opts ...Option) *Target {
	t.Helper()
	s := settings{life: t}
	for _, o := range opts {
		o(&s)
	}
	svc := run(t, s.life, cfg)
	h := svc.Handler()
	if s.wrap != nil {
		h = s.wrap(h)
	}
	srv := httptest.NewServer(h)
	// Registered after the service's cleanup, so it runs first: no request
	// reaches a closed service.
	s.life.Cleanup(srv.Close)
	return &Target{Service: svc, URL: srv.URL, Server: srv, SourceToken: withDefaults(cfg).SourceToken}
}

// Run starts a ragtarget with cfg and its sync schedules, without serving
// it, for tests that mount its Handler on a server of their own. It is
// closed when the test ends.
func Run(t testing.TB, cfg ragtarget.Config) *ragtarget.Service {
	t.Helper()
	return run(t, t, cfg)
}

func run(t, life testing.TB, cfg ragtarget.Config) *ragtarget.Service {
	t.Helper()
	svc, err := ragtarget.New(withDefaults(cfg))
	if err != nil {
		t.Fatalf("starting ragtarget: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	svc.Start(ctx)
	life.Cleanup(func() {
		cancel()
		_ = svc.Close()
	})
	return svc
}

// withDefaults fills what ragtarget requires and the test left out.
func withDefaults(cfg ragtarget.Config) ragtarget.Config {
	if cfg.SourceToken == "" {
		cfg.SourceToken = DefaultSourceToken
	}
	if cfg.ContentSyncInterval <= 0 {
		cfg.ContentSyncInterval = Manual
	}
	if cfg.ACLSyncInterval <= 0 {
		cfg.ACLSyncInterval = Manual
	}
	return cfg
}

// Driver is the HTTP contract driver reading the target with its source
// token, each call bounded by timeout.
func (tg *Target) Driver(t testing.TB, timeout time.Duration) *httpdriver.Driver {
	t.Helper()
	d, err := httpdriver.New(httpdriver.Config{BaseURL: tg.URL, SourceToken: tg.SourceToken, Timeout: timeout,
		HTTPClient: tg.Server.Client()})
	if err != nil {
		t.Fatalf("httpdriver.New: %v", err)
	}
	return d
}

// Plant creates docs at the source and syncs content and access lists, so
// each document is retrievable by its principals when Plant returns.
func (tg *Target) Plant(t testing.TB, docs ...driver.Document) {
	t.Helper()
	d := tg.Driver(t, 5*time.Second)
	for _, doc := range docs {
		if err := d.CreateDocument(context.Background(), doc); err != nil {
			t.Fatalf("planting %s: %v", doc.ID, err)
		}
	}
	tg.Sync(t)
}

// Sync runs a content sync, then an ACL sync, at once.
func (tg *Target) Sync(t testing.TB) {
	t.Helper()
	for _, kind := range []ragtarget.SyncKind{ragtarget.SyncContent, ragtarget.SyncACL} {
		if err := tg.SyncNow(kind); err != nil {
			t.Fatalf("%s sync: %v", kind, err)
		}
	}
}
