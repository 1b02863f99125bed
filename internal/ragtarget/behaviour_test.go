package ragtarget_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

const question = "where does the zebrafinch nest"

// answerShows reports whether alice's answer still quotes the canary
// passage. It looks for words of the passage that the question lacks: a
// not-found answer repeats the question.
func (e *env) answerShows(persona driver.Token) bool {
	e.t.Helper()
	a, err := e.drv.Answer(context.Background(), persona, question)
	if err != nil {
		e.t.Fatalf("Answer: %v", err)
	}
	return strings.Contains(a.Text, "near the river") && slices.Contains(a.Citations, "doc-1#0")
}

func TestAnswerCacheInvalidatedAtACLSync(t *testing.T) {
	e := start(t, ragtarget.Config{ACLSyncInterval: 3 * time.Second, AnswerCacheTTL: time.Hour})
	e.create("doc-1", "the zebrafinch nests near the river", "user:alice")
	e.advance() // t=1s
	if !e.answerShows(alice) {
		t.Fatal("answer does not show the granted document")
	}
	must(t, e.drv.Revoke(context.Background(), "doc-1", "user:alice"))
	e.advance() // t=2s: before the ACL sync the cached answer may still be served
	if !e.answerShows(alice) {
		t.Fatal("answer changed before the ACL sync applied the revoke")
	}
	e.advance() // t=3s: ACL sync invalidates alice's cached answers
	if e.answerShows(alice) {
		t.Fatal("cached answer survived the ACL sync that applied the revoke")
	}
}

func TestStaleCacheDefectServesUntilTTL(t *testing.T) {
	ttl := 6 * time.Second
	e := start(t, ragtarget.Config{ACLSyncInterval: 2 * time.Second, AnswerCacheTTL: ttl, CacheIgnoresACLChanges: true})
	e.create("doc-1", "the zebrafinch nests near the river", "user:alice")
	e.advance() // t=1s: indexed; the answer is cached until t=7s
	cachedAt := e.elapsed
	if !e.answerShows(alice) {
		t.Fatal("answer does not show the granted document")
	}
	must(t, e.drv.Revoke(context.Background(), "doc-1", "user:alice"))
	e.advanceTo(2 * time.Second) // ACL sync applies the revoke to the index
	if e.visible(alice, "zebrafinch", "doc-1") {
		t.Fatal("search still returns the revoked document after the ACL sync")
	}
	for e.elapsed < cachedAt+ttl-time.Second {
		if !e.answerShows(alice) {
			t.Fatalf("stale answer gone at %v, before the TTL ends at %v", e.elapsed, cachedAt+ttl)
		}
		e.advance()
	}
	e.advanceTo(cachedAt + ttl)
	if e.answerShows(alice) {
		t.Fatal("stale answer served after its TTL")
	}
}

func TestReplicaLagMakesRevokedContentReappear(t *testing.T) {
	lag := 4 * time.Second
	e := start(t, ragtarget.Config{ACLSyncInterval: 2 * time.Second, Replicas: 2, ReplicaLag: lag})
	e.create("doc-1", "the zebrafinch canary phrase", "user:alice")
	e.advanceTo(lag + time.Second) // content sync at 1s reaches the replica at 5s
	testutil.EventuallyTrue(t, waitTimeout, "replica caught up", func() bool { return e.svc.ReplicaBacklog() == 0 })
	if !e.visible(alice, canaryQuery, "doc-1") || !e.visible(alice, canaryQuery, "doc-1") {
		t.Fatal("document not visible on both replicas")
	}

	must(t, e.drv.Revoke(context.Background(), "doc-1", "user:alice"))
	e.advanceTo(6 * time.Second) // ACL sync: primary drops it, replica still serves it
	first, second := e.visible(alice, canaryQuery, "doc-1"), e.visible(alice, canaryQuery, "doc-1")
	if first == second {
		t.Fatalf("consecutive searches (round-robin) saw visible=%v and %v; want one replica without and one with the revoked document", first, second)
	}

	e.advanceTo(6*time.Second + lag)
	testutil.EventuallyTrue(t, waitTimeout, "replica applied the revoke", func() bool { return e.svc.ReplicaBacklog() == 0 })
	for i := range 4 {
		if e.visible(alice, canaryQuery, "doc-1") {
			t.Fatalf("search %d still returns the document after the replica lag", i)
		}
	}
}

// seedFilterCorpus writes 30 documents for bob that match the query strongly
// and 5 documents for alice that match it weakly, then syncs.
func seedFilterCorpus(t *testing.T, e *env) {
	for i := range 30 {
		e.create(fmt.Sprintf("bob-%02d", i), "quarterly revenue revenue revenue forecast", "user:bob")
	}
	filler := strings.Repeat("unrelated words about office plants and lunch menus ", 10)
	for i := range 5 {
		e.create(fmt.Sprintf("alice-%d", i), filler+" revenue", "user:alice")
	}
	must(t, e.svc.SyncNow(ragtarget.SyncContent))
}

func searchIDs(t *testing.T, e *env, persona driver.Token, k int) []string {
	t.Helper()
	hits, err := e.drv.Search(context.Background(), persona, "quarterly revenue", k)
	must(t, err)
	ids := make([]string, 0, len(hits))
	for _, h := range hits {
		ids = append(ids, h.DocumentID)
	}
	return ids
}

func TestFilterModes(t *testing.T) {
	const k = 5
	aliceOnly := func(ids []string) bool {
		return !slices.ContainsFunc(ids, func(id string) bool { return !strings.HasPrefix(id, "alice-") })
	}

	pre := start(t, ragtarget.Config{FilterMode: ragtarget.FilterPrefilter})
	seedFilterCorpus(t, pre)
	if ids := searchIDs(t, pre, alice, k); len(ids) != k || !aliceOnly(ids) {
		t.Fatalf("prefilter returned %v, want %d of alice's documents", ids, k)
	}

	post := start(t, ragtarget.Config{FilterMode: ragtarget.FilterPostfilter, CandidateDepth: 10})
	seedFilterCorpus(t, post)
	if ids := searchIDs(t, post, alice, k); len(ids) >= k || !aliceOnly(ids) {
		t.Fatalf("postfilter returned %v, want fewer than %d and only alice's documents", ids, k)
	}

	none := start(t, ragtarget.Config{FilterMode: ragtarget.FilterNone})
	seedFilterCorpus(t, none)
	if ids := searchIDs(t, none, alice, k); aliceOnly(ids) {
		t.Fatalf("filter mode none returned only permitted documents %v; want the leak", ids)
	}
}

func TestFaultsAreClassified(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults ragtarget.Faults
		token  driver.Token
		// check is the classification the driver error must have.
		check func(error) bool
	}{
		{name: "error rate", faults: ragtarget.Faults{ErrorRate: 1}, token: alice, check: driver.IsTransient},
		{name: "malformed", faults: ragtarget.Faults{MalformedRate: 1}, token: alice, check: driver.IsTransient},
		{name: "timeout", faults: ragtarget.Faults{TimeoutRate: 1}, token: alice, check: driver.IsTransient},
		{name: "latency beyond client timeout", faults: ragtarget.Faults{Latency: 2 * time.Second}, token: alice, check: driver.IsTransient},
		{name: "bad token", token: driver.Token("not-a-persona"), check: driver.IsUnauthorized},
		{name: "source token as persona", token: driver.Token(sourceToken), check: driver.IsUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.faults.Scope = ragtarget.FaultScopePersona
			e := start(t, ragtarget.Config{Faults: tc.faults})
			// Source-side calls are out of the persona fault scope.
			e.create("doc-1", "the zebrafinch canary phrase", "user:alice")
			must(t, e.svc.SyncNow(ragtarget.SyncContent))

			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			hits, err := e.drv.Search(ctx, tc.token, canaryQuery, 5)
			if err == nil || !tc.check(err) {
				t.Fatalf("Search err = %v (hits %v); wrong classification", err, hits)
			}
			if hits != nil {
				t.Fatalf("a failed search returned hits %v; a failure must never read as results", hits)
			}
			for _, secret := range []string{alice.Reveal(), sourceToken, "not-a-persona"} {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("error text leaks a token: %q", err)
				}
			}
		})
	}
}

func TestContractValidation(t *testing.T) {
	e := start(t, ragtarget.Config{})
	ctx := context.Background()
	err := e.drv.CreateDocument(ctx, driver.Document{ID: "bad#id", Title: "t", Body: "b"})
	if !driver.IsPermanent(err) {
		t.Fatalf("document ID with '#': err = %v, want permanent", err)
	}
	if err := e.drv.Grant(ctx, "missing", "user:alice"); !driver.IsPermanent(err) {
		t.Fatalf("grant on a missing document: err = %v, want permanent", err)
	}
	caps, err := e.drv.Capabilities(ctx)
	must(t, err)
	if caps.ContractVersion != driver.ContractVersion || !caps.Answer || !caps.Supports(v1alpha1.RevokeRemoveFromGroup) {
		t.Fatalf("capabilities = %+v", caps)
	}
}
