package ragtarget

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// Derived documents. Every --digest-interval a job summarises each
// collection's recent documents into one digest document and writes it into
// the source like any connector would, so it is indexed and searched on the
// same schedules. Its access list is --digest-acl's rule applied to its
// sources' access lists: the lineage most pipelines lose.
//
// A document's collection is the part of its ID before the first '-'
// (`hr-42` is in `hr`, ragcanary's canaries `rc-<uid>` are in `rc`): the
// document model has no collection field, and connectors conventionally
// name items after their container (channel, space, folder). An ID without
// '-' names no container and is never digested.
const (
	// digestCollection holds the digests themselves, so a digest can never
	// be a source: documents whose ID starts with "digest-" are reserved.
	digestCollection = "digest"
	// digestMaxSources is how many of a collection's most recently changed
	// documents one digest quotes: a digest of what is new, not an archive.
	digestMaxSources = 20
	// maxDigestSentenceChars bounds the sentence quoted from each source.
	maxDigestSentenceChars = 300
	// maxDocumentIDChars is the contract's bound on a document ID.
	maxDocumentIDChars = 200
)

// digester remembers which digests it wrote, so one whose collection
// emptied is deleted rather than left behind.
type digester struct {
	mu      sync.Mutex
	written map[string]struct{}
	runs    atomic.Uint64
}

// digestPlan is one digest to write: what it says and who may read it.
type digestPlan struct {
	id, title, body string
	acl             []string
}

// writeDigests, run every DigestInterval, derives every collection's digest
// from the source as it is now and writes it back; an unchanged digest
// keeps its content version, so only a changed one is re-indexed.
func (s *Service) writeDigests() {
	plans := planDigests(s.src.snapshot(), s.cfg.DigestACL, sortedKeys(s.personas()))
	d := &s.digests
	d.mu.Lock()
	defer d.mu.Unlock()
	stale := d.written
	d.written = make(map[string]struct{}, len(plans))
	for _, p := range plans {
		s.src.putDocument(p.id, p.title, p.body, p.acl)
		d.written[p.id] = struct{}{}
		delete(stale, p.id)
		s.cfg.Logger.Debug("digest written", "document", p.id, "principals", len(p.acl))
	}
	for id := range stale {
		s.src.deleteDocument(id)
	}
	d.runs.Add(1)
}

// planDigests groups the snapshot's documents by collection and plans one
// digest per collection that has any. everyone is who "public" means.
func planDigests(snap sourceSnapshot, rule DigestACL, everyone []string) []digestPlan {
	byCollection := map[string][]docSnapshot{}
	for _, d := range snap.docs {
		if c := collectionOf(d.id); c != "" && c != digestCollection {
			byCollection[c] = append(byCollection[c], d)
		}
	}
	plans := make([]digestPlan, 0, len(byCollection))
	for c, docs := range byCollection {
		// Most recently changed first: content versions only grow.
		slices.SortFunc(docs, func(a, b docSnapshot) int { return cmp.Compare(b.contentVersion, a.contentVersion) })
		docs = docs[:min(len(docs), digestMaxSources)]
		plans = append(plans, digestPlan{id: digestID(c), title: "Digest of " + c, body: digestBody(docs),
			acl: digestACL(rule, docs, snap.groups, everyone)})
	}
	slices.SortFunc(plans, func(a, b digestPlan) int { return strings.Compare(a.id, b.id) })
	return plans
}

// collectionOf is the part of id before its first '-', "" when it has none.
func collectionOf(id string) string {
	c, _, found := strings.Cut(id, "-")
	if !found {
		return ""
	}
	return c
}

// digestID is stable per collection, so each run rewrites the digest
// instead of adding one; a collection too long to fit the contract's ID
// bound is named by a hash.
func digestID(collection string) string {
	id := digestCollection + "-" + collection
	if len(id) <= maxDocumentIDChars {
		return id
	}
	sum := sha256.Sum256([]byte(collection))
	return digestCollection + "-" + hex.EncodeToString(sum[:8])
}

// digestBody quotes the first sentence of each source under its title, the
// way a summariser lifts each item's lead.
func digestBody(docs []docSnapshot) string {
	lines := make([]string, 0, len(docs))
	for _, d := range docs {
		lines = append(lines, d.title+": "+firstSentence(d.body))
	}
	return strings.Join(lines, "\n")
}

// firstSentence is text up to its first '.', '!' or '?' ending a word,
// bounded at a word break.
func firstSentence(body string) string {
	text := strings.Join(strings.Fields(body), " ")
	for i, r := range text {
		if (r == '.' || r == '!' || r == '?') && (i+1 == len(text) || text[i+1] == ' ') {
			text = text[:i+1]
			break
		}
	}
	if utf8.RuneCountInString(text) <= maxDigestSentenceChars {
		return text
	}
	cut := len(string([]rune(text)[:maxDigestSentenceChars]))
	if space := strings.LastIndexByte(text[:cut], ' '); space > 0 {
		cut = space
	}
	return text[:cut] + " …"
}

// digestACL applies rule to the sources' access lists. The intersection is
// taken over effective readers (groups expanded into their members at this
// moment), since a group on one source and its member on another both let
// that member read; the union keeps groups as groups, as granted.
func digestACL(rule DigestACL, docs []docSnapshot, groups map[string][]string, everyone []string) []string {
	switch rule {
	case DigestPublic:
		return everyone
	case DigestUnion:
		set := map[string]struct{}{}
		for _, d := range docs {
			for _, p := range d.acl {
				set[p] = struct{}{}
			}
		}
		return sortedKeys(set)
	}
	var common map[string]struct{}
	for _, d := range docs {
		readers := setOf(d.acl)
		for _, p := range d.acl {
			for _, m := range groups[p] {
				readers[m] = struct{}{}
			}
		}
		if common == nil {
			common = readers
			continue
		}
		for p := range common {
			if _, ok := readers[p]; !ok {
				delete(common, p)
			}
		}
	}
	return sortedKeys(common)
}

// DigestRuns reports how many times the digest job has run, so tests can
// wait for a tick to be processed instead of sleeping.
func (s *Service) DigestRuns() uint64 { return s.digests.runs.Load() }

// IndexedDocument is the primary index's view of a document.
type IndexedDocument struct {
	// ACL is the access list the index filters by, sorted.
	ACL []string
	// Passages are the indexed passages' texts, in order.
	Passages []string
}

// Indexed returns what the primary index holds for document id, false when
// it holds nothing. Read-only, for tests and tools: the index state a
// derived document or an applied revocation can be waited on by.
func (s *Service) Indexed(id string) (IndexedDocument, bool) {
	d, ok := s.replicas[0].doc(id)
	if !ok {
		return IndexedDocument{}, false
	}
	return IndexedDocument{ACL: slices.Clone(d.acl), Passages: slices.Clone(d.chunks)}, true
}
