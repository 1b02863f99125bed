package ragtarget_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// digestEvery is the digest interval of these tests, on the fake clock
// (content sync every second, ACL sync every three).
const digestEvery = 2 * time.Second

// The restricted source's payload, its lead sentence (the one a digest
// quotes) and a later sentence no digest may carry.
const (
	payloadLead  = "The zebrafinch payload nests near the river."
	payloadLater = "Its second sentence stays in the source."
)

// startDigesting serves a ragtarget deriving digests with rule.
func startDigesting(t *testing.T, rule ragtarget.DigestACL) *env {
	t.Helper()
	return start(t, ragtarget.Config{DigestInterval: digestEvery, DigestACL: rule})
}

// step advances the fake clock a second and waits until every digest run
// due by then has been processed, as advance does for the syncs.
func (e *env) step() {
	e.t.Helper()
	e.advance()
	want := uint64(e.elapsed / digestEvery)
	testutil.EventuallyTrue(e.t, waitTimeout, "digest runs processed", func() bool { return e.svc.DigestRuns() == want })
}

// digestIndexed steps until the index holds document id with acl, and
// returns its passages.
func (e *env) digestIndexed(id string, acl ...string) []string {
	e.t.Helper()
	slices.Sort(acl)
	for range 10 {
		if d, ok := e.svc.Indexed(id); ok && slices.Equal(d.ACL, acl) {
			return d.Passages
		}
		e.step()
	}
	d, ok := e.svc.Indexed(id)
	e.t.Fatalf("after %s the index holds %s: %v with ACL %q; want ACL %q", e.elapsed, id, ok, d.ACL, acl)
	return nil
}

// plantSources creates the restricted source (alice only) and a shared
// neighbour in the same collection (alice and bob).
func (e *env) plantSources() {
	e.t.Helper()
	e.create("doc-1", payloadLead+" "+payloadLater, "user:alice")
	e.create("doc-2", "The heron fishes in the shallows. It waits.", "user:alice", "user:bob")
}

// readsDigest reports whether persona's answer about the payload cites the
// digest. For a persona outside the restricted source's ACL it also wants
// the payload quoted exactly when the digest is cited, and the source
// itself never cited: only the digest may carry the payload to them.
func (e *env) readsDigest(persona driver.Token, outsider bool) bool {
	e.t.Helper()
	a, err := e.drv.Answer(context.Background(), persona, "zebrafinch payload")
	must(e.t, err)
	cites := func(doc string) bool {
		return slices.ContainsFunc(a.Citations, func(c string) bool { return strings.HasPrefix(c, doc+"#") })
	}
	viaDigest := cites("digest-doc")
	if outsider && (cites("doc-1") || strings.Contains(a.Text, payloadLead) != viaDigest) {
		e.t.Fatalf("answer %+v: want the payload only through the digest", a)
	}
	return viaDigest
}

// TestDigestPublicLeaksTheSourceToEveryone: a public digest carries the
// restricted source's lead sentence to a persona outside its ACL, who
// still cannot find the source itself.
func TestDigestPublicLeaksTheSourceToEveryone(t *testing.T) {
	e := startDigesting(t, ragtarget.DigestPublic)
	e.create("doc-1", payloadLead+" "+payloadLater, "user:alice")
	passages := e.digestIndexed("digest-doc", "user:alice", "user:bob")
	if text := strings.Join(passages, "\n"); !strings.Contains(text, payloadLead) || strings.Contains(text, payloadLater) {
		t.Fatalf("digest passages %q, want the lead sentence quoted and nothing more", passages)
	}
	if !e.readsDigest(bob, true) || e.visible(bob, "zebrafinch", "doc-1") {
		t.Fatal("bob does not find the payload through the public digest, or finds the source itself")
	}
}

// TestDigestUnionLeaksToReadersOfAnySource: under union, bob, allowed on
// the neighbour but not on the restricted source, finds its payload
// through the digest.
func TestDigestUnionLeaksToReadersOfAnySource(t *testing.T) {
	e := startDigesting(t, ragtarget.DigestUnion)
	e.plantSources()
	e.digestIndexed("digest-doc", "user:alice", "user:bob")
	if !e.readsDigest(bob, true) || e.visible(bob, "zebrafinch", "doc-1") {
		t.Fatal("bob does not find the payload through the union digest, or finds the source itself")
	}
}

// TestDigestMostRestrictiveKeepsTheSourceInside: over several digest
// intervals only alice, allowed on every source, reads the digest; bob
// never finds the payload; and once alice loses the neighbour the digest
// follows at the next run and ACL sync, so she no longer reads it either.
func TestDigestMostRestrictiveKeepsTheSourceInside(t *testing.T) {
	e := startDigesting(t, ragtarget.DigestMostRestrictive)
	e.plantSources()
	e.digestIndexed("digest-doc", "user:alice")
	for e.elapsed < 5*digestEvery {
		if !e.readsDigest(alice, false) {
			t.Fatalf("at %s alice, allowed on every source, does not read the digest", e.elapsed)
		}
		if e.readsDigest(bob, true) || e.visible(bob, "zebrafinch", "digest-doc") {
			t.Fatalf("at %s bob finds the restricted payload through the digest", e.elapsed)
		}
		e.step()
	}
	must(t, e.drv.Revoke(context.Background(), "doc-2", "user:alice"))
	e.digestIndexed("digest-doc")
	if e.readsDigest(alice, false) {
		t.Fatal("alice still reads the digest after losing one of its sources")
	}
}

// TestDigestPerCollectionNeverQuotesDigests: each collection gets one
// digest, rewritten in place run after run, quoting its own documents'
// lead sentences only, never a digest's; a collection that empties loses
// its digest.
func TestDigestPerCollectionNeverQuotesDigests(t *testing.T) {
	e := startDigesting(t, ragtarget.DigestPublic)
	e.plantSources()
	e.create("hr-1", "Salaries are reviewed in March. Details follow.", "user:alice")
	e.create("standalone", "No collection in this ID.", "user:alice")
	everyone := []string{"user:alice", "user:bob"}
	e.digestIndexed("digest-doc", everyone...)
	e.digestIndexed("digest-hr", everyone...)
	for e.elapsed < 6*digestEvery {
		e.step()
	}
	wantLines := map[string][]string{
		"digest-doc": {"Doc doc-2: The heron fishes in the shallows.", "Doc doc-1: " + payloadLead},
		"digest-hr":  {"Doc hr-1: Salaries are reviewed in March."},
	}
	for id, want := range wantLines {
		d, _ := e.svc.Indexed(id)
		if got := digestText(d.Passages); got != strings.Join(want, " ") {
			t.Errorf("%s after %d runs says %q, want %q", id, e.svc.DigestRuns(), got, strings.Join(want, " "))
		}
	}
	var digests []string
	for id := range e.svc.SourceDocuments() {
		if strings.HasPrefix(id, "digest-") {
			digests = append(digests, id)
		}
	}
	slices.Sort(digests)
	if !slices.Equal(digests, []string{"digest-doc", "digest-hr"}) {
		t.Fatalf("the source holds digests %q, want one per collection", digests)
	}
	must(t, e.drv.DeleteDocument(context.Background(), "hr-1"))
	for range 4 {
		e.step()
	}
	if _, ok := e.svc.SourceDocuments()["digest-hr"]; ok {
		t.Fatal("the emptied collection's digest is still in the source")
	}
}

// digestText is a digest's body as indexed: its passages without the title
// line each carries.
func digestText(passages []string) string {
	words := make([]string, 0, len(passages))
	for _, p := range passages {
		_, body, _ := strings.Cut(p, "\n")
		words = append(words, body)
	}
	return strings.Join(words, " ")
}
