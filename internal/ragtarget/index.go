package ragtarget

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/standard"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"
)

// Field names of an indexed passage.
const (
	fieldText = "text"
	fieldACL  = "acl"
)

// indexBatchSize bounds one bleve batch so a large sync does not hold one
// huge batch in memory.
const indexBatchSize = 1000

// indexedDoc is what one replica knows about a document: its passages and the
// access list captured at its last sync.
type indexedDoc struct {
	contentVersion uint64
	chunks         []string
	acl            []string // sorted; expanded with group members unless groups resolve at query time
}

// change is one unit of index work produced by a sync. It is plain data so the
// primary and every lagging replica apply exactly the same thing.
type change struct {
	puts    map[string]indexedDoc
	deletes []string
}

func (c change) empty() bool { return len(c.puts) == 0 && len(c.deletes) == 0 }

// documents are the IDs the change touches, sorted.
func (c change) documents() []string {
	ids := append(sortedKeys(setOfKeys(c.puts)), c.deletes...)
	slices.Sort(ids)
	return ids
}

func setOfKeys(m map[string]indexedDoc) map[string]struct{} {
	set := make(map[string]struct{}, len(m))
	for k := range m {
		set[k] = struct{}{}
	}
	return set
}

// replica is one in-memory BM25 index with its own view of documents.
type replica struct {
	mu    sync.RWMutex
	bleve bleve.Index
	docs  map[string]indexedDoc
}

// newReplica builds an in-memory scorch index with BM25 scoring; scorch is the
// bleve index type that implements BM25 field statistics.
func newReplica() (*replica, error) {
	idx, err := bleve.NewUsing("", passageMapping(), scorch.Name, scorch.Name, nil)
	if err != nil {
		return nil, fmt.Errorf("create index: %w", err)
	}
	return &replica{bleve: idx, docs: map[string]indexedDoc{}}, nil
}

func passageMapping() mapping.IndexMapping {
	text := bleve.NewTextFieldMapping()
	text.Analyzer = standard.Name
	text.Store = false
	text.IncludeTermVectors = false
	text.DocValues = false

	acl := bleve.NewKeywordFieldMapping()
	acl.Analyzer = keyword.Name
	acl.Store = false
	acl.DocValues = false
	acl.IncludeInAll = false

	doc := bleve.NewDocumentStaticMapping()
	doc.AddFieldMappingsAt(fieldText, text)
	doc.AddFieldMappingsAt(fieldACL, acl)

	m := bleve.NewIndexMapping()
	m.DefaultMapping = doc
	m.ScoringModel = index.BM25Scoring
	m.StoreDynamic = false
	m.IndexDynamic = false
	m.DocValuesDynamic = false
	return m
}

// passage is the indexed form of one chunk.
type passage struct {
	Text string   `json:"text"`
	ACL  []string `json:"acl"`
}

func chunkID(docID string, n int) string { return docID + "#" + strconv.Itoa(n) }

// docIDOf recovers the document ID from a chunk ID; '#' cannot occur in
// document IDs (the contract forbids it).
func docIDOf(chunk string) string {
	if i := strings.LastIndexByte(chunk, '#'); i >= 0 {
		return chunk[:i]
	}
	return chunk
}

// apply makes the replica reflect ch.
func (r *replica) apply(ch change) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.bleve.NewBatch()
	flush := func() error {
		if b.Size() < indexBatchSize {
			return nil
		}
		if err := r.bleve.Batch(b); err != nil {
			return err
		}
		b.Reset()
		return nil
	}
	for _, id := range ch.deletes {
		for n := range r.docs[id].chunks {
			b.Delete(chunkID(id, n))
		}
		delete(r.docs, id)
		if err := flush(); err != nil {
			return err
		}
	}
	for id, d := range ch.puts {
		// Passages beyond the new count would otherwise linger in the index.
		for n := len(d.chunks); n < len(r.docs[id].chunks); n++ {
			b.Delete(chunkID(id, n))
		}
		for n, text := range d.chunks {
			if err := b.Index(chunkID(id, n), passage{Text: text, ACL: d.acl}); err != nil {
				return err
			}
			if err := flush(); err != nil {
				return err
			}
		}
		r.docs[id] = d
	}
	return r.bleve.Batch(b)
}

// scoredChunk is one retrieval result inside the service.
type scoredChunk struct {
	chunkID string
	docID   string
	score   float64
	text    string
}

// search ranks passages for query. In prefilter mode the principal filter is
// part of the query; postfilter fetches depth unfiltered candidates and
// filters them; none ignores access lists.
func (r *replica) search(ctx context.Context, q string, k int, principals []string, mode FilterMode, depth int) ([]scoredChunk, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	match := bleve.NewMatchQuery(q)
	match.SetField(fieldText)
	var req *bleve.SearchRequest
	switch mode {
	case FilterPrefilter:
		req = bleve.NewSearchRequestOptions(bleve.NewConjunctionQuery(match, principalFilter(principals)), k, 0, false)
	case FilterPostfilter:
		req = bleve.NewSearchRequestOptions(match, max(depth, k), 0, false)
	default:
		req = bleve.NewSearchRequestOptions(match, k, 0, false)
	}
	res, err := r.bleve.SearchInContext(ctx, req)
	if err != nil {
		return nil, err
	}
	out := make([]scoredChunk, 0, min(k, len(res.Hits)))
	for _, h := range res.Hits {
		if len(out) == k {
			break
		}
		c, ok := r.resolve(h.ID, h.Score)
		if !ok || (mode == FilterPostfilter && !allowed(r.docs[c.docID].acl, principals)) {
			continue
		}
		out = append(out, c)
	}
	return out, nil
}

// principalFilter matches passages whose access list names any of the
// principals. Its boost is zero so the filter never changes BM25 ranking.
func principalFilter(principals []string) query.Query {
	terms := make([]query.Query, 0, len(principals))
	for _, p := range principals {
		t := bleve.NewTermQuery(p)
		t.SetField(fieldACL)
		terms = append(terms, t)
	}
	if len(terms) == 0 {
		return bleve.NewMatchNoneQuery()
	}
	d := bleve.NewDisjunctionQuery(terms...)
	d.SetBoost(0)
	return d
}

// resolve attaches the passage text; a hit whose document vanished between
// the bleve search and this lookup cannot happen under the read lock, but is
// skipped rather than trusted.
func (r *replica) resolve(id string, score float64) (scoredChunk, bool) {
	docID := docIDOf(id)
	d, ok := r.docs[docID]
	if !ok {
		return scoredChunk{}, false
	}
	n, err := strconv.Atoi(id[len(docID)+1:])
	if err != nil || n < 0 || n >= len(d.chunks) {
		return scoredChunk{}, false
	}
	return scoredChunk{chunkID: id, docID: docID, score: score, text: d.chunks[n]}, true
}

func allowed(acl, principals []string) bool {
	for _, p := range principals {
		if _, found := slices.BinarySearch(acl, p); found {
			return true
		}
	}
	return false
}

// doc returns the replica's view of a document.
func (r *replica) doc(id string) (indexedDoc, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	d, ok := r.docs[id]
	return d, ok
}

func (r *replica) close() error { return r.bleve.Close() }

// chunk splits a document into passages of at most words words, each
// prefixed with the title so a title match finds every passage.
func chunk(title, body string, words int) []string {
	fields := strings.Fields(body)
	if len(fields) == 0 {
		return []string{title}
	}
	var out []string
	for start := 0; start < len(fields); start += words {
		end := min(start+words, len(fields))
		out = append(out, title+"\n"+strings.Join(fields[start:end], " "))
	}
	return out
}
