package ragtarget_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/dev/openfgatest"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/targettest"
	"github.com/ragcanary/ragcanary/internal/driver"
	httpdriver "github.com/ragcanary/ragcanary/internal/driver/http"
	"github.com/ragcanary/ragcanary/internal/openfga"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
	"github.com/ragcanary/ragcanary/internal/spicedb"
)

// Persona tokens of the OpenFGA tests; their principals are plain IDs,
// because OpenFGA refuses ':' in an object ID.
const (
	fgaAlice = driver.Token("alice-fga-token")
	fgaBob   = driver.Token("bob-fga-token")
)

// fgaFilters are the two places OpenFGA's decision can apply.
var fgaFilters = []ragtarget.FilterMode{ragtarget.FilterPrefilter, ragtarget.FilterPostfilter}

// cachingOpenFGA runs OpenFGA with its check and iterator caches on for
// ttl. The cache controller stays off: with it on, OpenFGA drops cached
// tuple iterators once it sees a write, and ListObjects turns fresh.
func cachingOpenFGA(t *testing.T, ttl time.Duration) *openfgatest.Server {
	return openfgatest.Start(t, openfgatest.Options{CheckQueryCache: true, CheckIteratorCache: true,
		ListObjectsIteratorCache: true, CacheTTL: ttl})
}

// fgaEnv is a ragtarget asking a real OpenFGA at query time, served over
// real HTTP and read through the http driver; perms writes tuples into the
// same store, as the operator would.
type fgaEnv struct {
	t     *testing.T
	svc   *ragtarget.Service
	url   string
	drv   *httpdriver.Driver
	perms *openfga.Permissions
}

// startFGA serves a ragtarget asking fga's new store with authz's filter
// and consistency; cfg sets the rest. The service lives as long as t.
func startFGA(t *testing.T, fga *openfgatest.Server, authz ragtarget.OpenFGAAuthz, cfg ragtarget.Config) *fgaEnv {
	t.Helper()
	return startFGAFor(t, t, fga, authz, cfg)
}

// startFGAFor is startFGA for a service that lives as long as life, which
// may outlive fga and t.
func startFGAFor(t *testing.T, life testing.TB, fga *openfgatest.Server, authz ragtarget.OpenFGAAuthz, cfg ragtarget.Config) *fgaEnv {
	t.Helper()
	authz.URL, authz.Store, authz.Token = fga.URL, fga.NewStore(t, "ragtarget"), fga.Token
	cfg.OpenFGA = &authz
	cfg.SourceToken = sourceToken
	cfg.Tokens = map[string]string{fgaAlice.Reveal(): "alice", fgaBob.Reveal(): "bob"}
	// Syncs run when a test asks (SyncNow), never on their own.
	cfg.ContentSyncInterval, cfg.ACLSyncInterval = time.Hour, time.Hour
	tg := targettest.Start(t, cfg, targettest.Lifetime(life))
	client, err := openfga.Dial(openfga.Config{APIURL: fga.URL, StoreID: authz.Store, Token: fga.Token})
	if err != nil {
		t.Fatalf("openfga.Dial: %v", err)
	}
	return &fgaEnv{t: t, svc: tg.Service, url: tg.URL, drv: tg.Driver(t, 10*time.Second), perms: openfga.NewPermissions(client, openfga.DefaultMapping)}
}

// index creates documents and syncs them into the index. Their index
// access lists name every persona, so only OpenFGA can keep one out.
func (e *fgaEnv) index(docs map[string]string) {
	e.t.Helper()
	for id, body := range docs {
		doc := driver.Document{ID: id, Title: "Doc " + id, Body: body, Principals: []string{"alice", "bob"}}
		if err := e.drv.CreateDocument(context.Background(), doc); err != nil {
			e.t.Fatalf("CreateDocument(%s): %v", id, err)
		}
	}
	must(e.t, e.svc.SyncNow(ragtarget.SyncContent))
	must(e.t, e.svc.SyncNow(ragtarget.SyncACL))
}

// hits is persona's ranked documents for query.
func (e *fgaEnv) hits(persona driver.Token, query string, k int) ([]string, error) {
	hits, err := e.drv.Search(context.Background(), persona, query, k)
	if err != nil {
		return nil, err
	}
	docs := make([]string, 0, len(hits))
	for _, h := range hits {
		docs = append(docs, h.DocumentID)
	}
	return docs, nil
}

// finds reports whether persona's search for query returns doc, and
// whether its answer cites it; search and answer must agree.
func (e *fgaEnv) finds(persona driver.Token, query, doc string) bool {
	e.t.Helper()
	docs, err := e.hits(persona, query, 10)
	must(e.t, err)
	a, err := e.drv.Answer(context.Background(), persona, query)
	must(e.t, err)
	searched := slices.Contains(docs, doc)
	answered := slices.Contains(a.Citations, doc+"#0")
	if searched != answered {
		e.t.Fatalf("search finds %s: %v, answer cites it: %v (answer %+v)", doc, searched, answered, a)
	}
	return searched
}

func (e *fgaEnv) wantFinds(persona driver.Token, query, doc string, want bool) {
	e.t.Helper()
	if got := e.finds(persona, query, doc); got != want {
		e.t.Fatalf("persona finds %s for %q: %v, want %v", doc, query, got, want)
	}
}

// eventuallyGone waits, bounded by within, until persona's search no
// longer finds doc, then wants its answer not to cite it either. Only
// search is polled: search and answer each ask OpenFGA, and near a cache
// expiry the two may rightly disagree.
func (e *fgaEnv) eventuallyGone(persona driver.Token, query, doc string, within time.Duration) {
	e.t.Helper()
	testutil.EventuallyTrue(e.t, within, doc+" excluded from search", func() bool {
		docs, err := e.hits(persona, query, 10)
		must(e.t, err)
		return !slices.Contains(docs, doc)
	})
	e.wantFinds(persona, query, doc, false)
}

// TestOpenFGADecidesSearchAndAnswer: in both filter modes a document
// granted to alice is found by her search and answer and not by bob's, a
// document granted to a group is found by its member, one never granted
// by nobody; revoking the grant or the membership excludes the document
// again, cached answers included: higher_consistency bypasses OpenFGA's
// caches, which hold the old decision far longer than the deadline.
func TestOpenFGADecidesSearchAndAnswer(t *testing.T) {
	fga := cachingOpenFGA(t, 5*time.Minute)
	for _, filter := range fgaFilters {
		t.Run(string(filter), func(t *testing.T) {
			ctx := context.Background()
			e := startFGA(t, fga, ragtarget.OpenFGAAuthz{Filter: filter, Consistency: openfga.HigherConsistency},
				ragtarget.Config{AnswerCacheTTL: time.Hour})
			e.index(map[string]string{"direct": "aurora notes", "grouped": "borealis notes", "never": "cygnus notes"})
			must(t, e.perms.Grant(ctx, "direct", "alice"))
			must(t, e.perms.GrantGroup(ctx, "grouped", "eng"))
			must(t, e.perms.AddMember(ctx, "eng", "bob"))

			e.wantFinds(fgaAlice, "aurora", "direct", true)
			e.wantFinds(fgaBob, "aurora", "direct", false)
			e.wantFinds(fgaBob, "borealis", "grouped", true)
			e.wantFinds(fgaAlice, "borealis", "grouped", false)
			e.wantFinds(fgaAlice, "cygnus", "never", false)
			e.wantFinds(fgaBob, "cygnus", "never", false)

			must(t, e.perms.Revoke(ctx, "direct", "alice"))
			e.eventuallyGone(fgaAlice, "aurora", "direct", 5*time.Second)
			must(t, e.perms.RemoveMember(ctx, "eng", "bob"))
			e.eventuallyGone(fgaBob, "borealis", "grouped", 5*time.Second)
		})
	}
}

// TestOpenFGAMinimizeLatencyLagsByTheCacheTTL: with minimize_latency,
// OpenFGA answers from its caches, so right after the revocation alice
// still finds her document in both modes (the real lag a canary measures),
// and stops finding it once the cached decision expires.
func TestOpenFGAMinimizeLatencyLagsByTheCacheTTL(t *testing.T) {
	const ttl = 3 * time.Second
	fga := cachingOpenFGA(t, ttl)
	for _, filter := range fgaFilters {
		t.Run(string(filter), func(t *testing.T) {
			ctx := context.Background()
			e := startFGA(t, fga, ragtarget.OpenFGAAuthz{Filter: filter, Consistency: openfga.MinimizeLatency}, ragtarget.Config{})
			e.index(map[string]string{"doc": "aurora notes"})
			must(t, e.perms.Grant(ctx, "doc", "alice"))
			e.wantFinds(fgaAlice, "aurora", "doc", true)
			cached := time.Now()
			must(t, e.perms.Revoke(ctx, "doc", "alice"))
			e.wantFinds(fgaAlice, "aurora", "doc", true) // from OpenFGA's caches
			e.eventuallyGone(fgaAlice, "aurora", "doc", ttl+4*time.Second-time.Since(cached))
		})
	}
}

// TestOpenFGAPostfilterKeepsOnlyPermittedHits: the document bob alone may
// read outranks the one both may read, yet alice gets only hers, in both
// modes. Postfilter takes its candidates from CandidateDepth unfiltered
// hits, so with a depth of one alice's only candidate is bob's document
// and she gets nothing: short results, never a forbidden one.
func TestOpenFGAPostfilterKeepsOnlyPermittedHits(t *testing.T) {
	fga := openfgatest.Start(t, openfgatest.Options{})
	setup := func(t *testing.T, filter ragtarget.FilterMode, depth int) *fgaEnv {
		ctx := context.Background()
		e := startFGA(t, fga, ragtarget.OpenFGAAuthz{Filter: filter}, ragtarget.Config{CandidateDepth: depth})
		e.index(map[string]string{"loud": "zephyr zephyr zephyr zephyr", "quiet": "zephyr once among many other words here"})
		must(t, e.perms.Grant(ctx, "loud", "bob"))
		must(t, e.perms.Grant(ctx, "quiet", "bob"))
		must(t, e.perms.Grant(ctx, "quiet", "alice"))
		return e
	}
	for _, filter := range fgaFilters {
		t.Run(string(filter), func(t *testing.T) {
			e := setup(t, filter, 0)
			if got, err := e.hits(fgaBob, "zephyr", 2); err != nil || !slices.Equal(got, []string{"loud", "quiet"}) {
				t.Fatalf("bob's hits = %v, %v; want loud ranked above quiet", got, err)
			}
			if got, err := e.hits(fgaAlice, "zephyr", 1); err != nil || !slices.Equal(got, []string{"quiet"}) {
				t.Fatalf("alice's top hit = %v, %v; want quiet only", got, err)
			}
			a, err := e.drv.Answer(context.Background(), fgaAlice, "zephyr")
			if err != nil || !slices.Equal(a.Citations, []string{"quiet#0"}) {
				t.Fatalf("alice's answer = %+v, %v; want quiet cited alone", a, err)
			}
		})
	}
	t.Run("postfilter depth 1", func(t *testing.T) {
		e := setup(t, ragtarget.FilterPostfilter, 1)
		if got, err := e.hits(fgaAlice, "zephyr", 1); err != nil || len(got) != 0 {
			t.Fatalf("alice's hits = %v, %v; want none (her document is not among the candidates)", got, err)
		}
	})
}

// TestOpenFGAAnswerCacheFollowsIndexChanges: with OpenFGA deciding, the
// index's access lists cannot say whose answers a rewritten or deleted
// document was in, and the readable set does not change; a cached answer
// must still not outlive either change once the index applied it.
func TestOpenFGAAnswerCacheFollowsIndexChanges(t *testing.T) {
	fga := openfgatest.Start(t, openfgatest.Options{})
	for _, filter := range fgaFilters {
		t.Run(string(filter), func(t *testing.T) {
			ctx := context.Background()
			e := startFGA(t, fga, ragtarget.OpenFGAAuthz{Filter: filter}, ragtarget.Config{AnswerCacheTTL: time.Hour})
			e.index(map[string]string{"doc": "aurora payloadone"})
			must(t, e.perms.Grant(ctx, "doc", "alice"))
			answerHas := func(want string) bool {
				a, err := e.drv.Answer(ctx, fgaAlice, "aurora")
				must(t, err)
				return strings.Contains(a.Text, want)
			}
			if !answerHas("payloadone") {
				t.Fatal("alice's first answer does not quote her document")
			}
			e.index(map[string]string{"doc": "aurora payloadtwo"})
			if !answerHas("payloadtwo") {
				t.Fatal("alice's answer after the rewrite does not quote the new content")
			}
			must(t, e.drv.DeleteDocument(ctx, "doc"))
			must(t, e.svc.SyncNow(ragtarget.SyncContent))
			if answerHas("payloadtwo") {
				t.Fatal("alice's answer after the deletion still quotes the document")
			}
		})
	}
}

// TestOpenFGAFailureIsAnErrorReply: once OpenFGA stops, search and answer
// fail in both modes; neither turns an unanswered question into "nothing
// readable".
func TestOpenFGAFailureIsAnErrorReply(t *testing.T) {
	for _, filter := range fgaFilters {
		t.Run(string(filter), func(t *testing.T) {
			var e *fgaEnv
			// OpenFGA lives as long as this subtest, the service as long
			// as the test. A cached answer must not hide the failure.
			if !t.Run("serving", func(st *testing.T) {
				e = startFGAFor(st, t, openfgatest.Start(st, openfgatest.Options{}), ragtarget.OpenFGAAuthz{Filter: filter},
					ragtarget.Config{AnswerCacheTTL: time.Hour})
				e.index(map[string]string{"doc": "aurora notes"})
				must(st, e.perms.Grant(context.Background(), "doc", "alice"))
				e.wantFinds(fgaAlice, "aurora", "doc", true)
			}) {
				t.FailNow()
			}
			hits, err := e.drv.Search(context.Background(), fgaAlice, "aurora", 10)
			if kind, _ := driver.KindOf(err); kind != driver.Transient {
				t.Fatalf("search with OpenFGA stopped = %v, %v; want a transient error reply", hits, err)
			}
			a, err := e.drv.Answer(context.Background(), fgaAlice, "aurora")
			if kind, _ := driver.KindOf(err); kind != driver.Transient {
				t.Fatalf("answer with OpenFGA stopped = %+v, %v; want a transient error reply", a, err)
			}
		})
	}
}

// TestOpenFGAStartWritesModelOrFailsClearly: New writes the reference
// model into an empty store, and refuses a store that does not exist or a
// token OpenFGA refuses, saying which, never showing the token.
func TestOpenFGAStartWritesModelOrFailsClearly(t *testing.T) {
	fga := openfgatest.Start(t, openfgatest.Options{})
	store := fga.NewStore(t, "empty")
	client, err := openfga.Dial(openfga.Config{APIURL: fga.URL, StoreID: store, Token: fga.Token})
	must(t, err)
	var problem *openfga.SchemaProblem
	if err := client.CheckModel(context.Background()); !errors.As(err, &problem) {
		t.Fatalf("CheckModel of a new store = %v, want a schema problem (no model yet)", err)
	}
	newService := func(authz ragtarget.OpenFGAAuthz) error {
		svc, err := ragtarget.New(ragtarget.Config{SourceToken: sourceToken, OpenFGA: &authz})
		if err == nil {
			_ = svc.Close()
		}
		return err
	}
	must(t, newService(ragtarget.OpenFGAAuthz{URL: fga.URL, Store: store, Token: fga.Token}))
	must(t, client.CheckModel(context.Background()))

	const wrongToken = "wrong-openfga-token-1234"
	for _, tc := range []struct {
		name  string
		authz ragtarget.OpenFGAAuthz
		// want is in the error; secret must not be.
		want, secret string
	}{
		{"wrong token", ragtarget.OpenFGAAuthz{URL: fga.URL, Store: store, Token: wrongToken}, "refused the token", wrongToken},
		{"no token", ragtarget.OpenFGAAuthz{URL: fga.URL, Store: store}, "refused the token", fga.Token},
		{"no such store", ragtarget.OpenFGAAuthz{URL: fga.URL, Store: "01ARZ3NDEKTSV4RRFFQ69G5FAV", Token: fga.Token}, "no store 01ARZ3NDEKTSV4RRFFQ69G5FAV", fga.Token},
		{"store not an ID", ragtarget.OpenFGAAuthz{URL: fga.URL, Store: "my-store", Token: fga.Token}, "not an OpenFGA ID", fga.Token},
	} {
		err := newService(tc.authz)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), tc.secret) {
			t.Errorf("%s: New = %v, want an error saying %q without the token", tc.name, err, tc.want)
		}
	}
}

// TestAuthzConfigValidation: settings an engine does not know, or two
// engines at once, are refused before anything is dialled.
func TestAuthzConfigValidation(t *testing.T) {
	const url, store = "http://127.0.0.1:1", "01ARZ3NDEKTSV4RRFFQ69G5FAV"
	spice := &ragtarget.SpiceDBAuthz{Endpoint: "127.0.0.1:1", Key: "k", Consistency: spicedb.MinimizeLatency}
	for _, tc := range []struct {
		name    string
		spicedb *ragtarget.SpiceDBAuthz
		openfga *ragtarget.OpenFGAAuthz
		// want is in New's error.
		want string
	}{
		{"both engines", spice, &ragtarget.OpenFGAAuthz{URL: url, Store: store}, "SpiceDB or OpenFGA, not both"},
		{"SpiceDB's consistency for OpenFGA", nil, &ragtarget.OpenFGAAuthz{URL: url, Store: store, Consistency: "fully_consistent"},
			`"fully_consistent" is not one OpenFGA knows`},
		{"OpenFGA's consistency for SpiceDB", &ragtarget.SpiceDBAuthz{Endpoint: "127.0.0.1:1", Key: "k", Consistency: "higher_consistency"}, nil,
			`"higher_consistency" is not one SpiceDB knows`},
		{"filter none", nil, &ragtarget.OpenFGAAuthz{URL: url, Store: store, Filter: ragtarget.FilterNone}, `authz filter "none"`},
		{"no store", nil, &ragtarget.OpenFGAAuthz{URL: url}, "needs an API URL and a store ID"},
	} {
		_, err := ragtarget.New(ragtarget.Config{SourceToken: sourceToken, Authz: tc.spicedb, OpenFGA: tc.openfga})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}
