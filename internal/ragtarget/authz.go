package ragtarget

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/ragcanary/ragcanary/internal/spicedb"
)

// authorizer is a query-time permission engine as the service uses it:
// which documents a principal may read, the set prefilter keeps retrieval
// inside. SpiceDB and OpenFGA both are one.
type authorizer interface {
	Readable(ctx context.Context, principal string) (map[string]struct{}, error)
}

// checker is an engine that can also decide for given documents, which
// postfilter asks about its candidates. OpenFGA is one (a Check per
// document); the SpiceDB engine answers prefilter only, so config
// validation refuses postfilter with it (SpiceDBAuthz has no filter).
type checker interface {
	authorizer
	Allowed(ctx context.Context, principal string, docs []string) (map[string]struct{}, error)
}

// SpiceDBAuthz makes the service ask SpiceDB at query time which documents a
// principal may read, instead of filtering by the access lists its own ACL
// sync copies into the index. The system under test is then the index plus
// SpiceDB's real permission semantics (and its caching), not a simulation.
type SpiceDBAuthz struct {
	// Endpoint is SpiceDB's gRPC address, host:port (plaintext).
	Endpoint string
	// Key is SpiceDB's preshared key.
	Key string
	// Consistency is minimize_latency (default) or fully_consistent.
	Consistency spicedb.Consistency
}

// authzTimeout bounds each call the service makes to its authorization engine.
const authzTimeout = 5 * time.Second

func (a *SpiceDBAuthz) validate() error {
	var errs []error
	if a.Endpoint == "" || a.Key == "" {
		errs = append(errs, errors.New("SpiceDB authorization needs an endpoint and a key"))
	}
	switch a.Consistency {
	case spicedb.MinimizeLatency, spicedb.FullyConsistent:
	default:
		errs = append(errs, fmt.Errorf("authz consistency %q is not one SpiceDB knows: minimize_latency, fully_consistent", a.Consistency))
	}
	return errors.Join(errs...)
}

// validateAuthz checks the query-time engine settings: at most one engine,
// each with settings it knows.
func (c Config) validateAuthz() error {
	switch {
	case c.Authz != nil && c.OpenFGA != nil:
		return errors.New("choose one query-time authorization engine: SpiceDB or OpenFGA, not both")
	case c.Authz != nil:
		return c.Authz.validate()
	case c.OpenFGA != nil:
		return c.OpenFGA.validate()
	}
	return nil
}

// connectAuthz connects the configured engine, if any, and prepares it
// (schema or model written into an empty engine).
func (s *Service) connectAuthz() error {
	switch {
	case s.cfg.Authz != nil:
		a, err := newSpiceDBAuthorizer(s.cfg.Authz)
		if err != nil {
			return err
		}
		s.authz = a
	case s.cfg.OpenFGA != nil:
		a, err := newOpenFGAAuthorizer(s.cfg.OpenFGA)
		if err != nil {
			return err
		}
		s.authz = a
		if s.cfg.OpenFGA.Filter == FilterPostfilter {
			s.check = a
		}
	}
	return nil
}

// newSpiceDBAuthorizer connects, writes the reference schema if SpiceDB has
// none, and returns the query-time authorizer.
func newSpiceDBAuthorizer(a *SpiceDBAuthz) (*spicedb.Authorizer, error) {
	client, err := spicedb.Dial(a.Endpoint, a.Key, true, nil)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*authzTimeout)
	defer cancel()
	if err := spicedb.EnsureSchema(ctx, client, spicedb.DefaultMapping, authzTimeout); err != nil {
		return nil, fmt.Errorf("SpiceDB schema: %w", err)
	}
	return spicedb.NewAuthorizer(client, spicedb.DefaultMapping, a.Consistency, authzTimeout), nil
}

// authorizedSearch ranks passages for q among those the engine lets
// principal read, and names the permission state they were filtered by:
// the key under which an answer built from them may be cached.
//
// Prefilter keys by the whole readable set, as listed before retrieval.
// Postfilter keys by the permitted subset of its candidates: the hits are a
// function of the candidates (which only an index change alters, and an
// index change clears the cache) and of which of them the engine permits,
// so that subset changes whenever a grant, revocation or membership change
// could change the answer, and stays put when only documents outside the
// candidates changed. Either way a cached answer never outlives a
// permission change the engine reports.
func (s *Service) authorizedSearch(ctx context.Context, principal, q string, k int) ([]scoredChunk, string, error) {
	if s.check != nil {
		return s.searchChecked(ctx, principal, q, k)
	}
	ids, err := s.authz.Readable(ctx, principal)
	if err != nil {
		return nil, "", err
	}
	hits, err := s.pick().searchReadable(ctx, q, k, ids)
	return hits, readableKey(ids), err
}

// searchChecked is postfilter against the engine: CandidateDepth passages
// retrieved without any permission filter, their documents checked in one
// Allowed call, the permitted top k kept. A failed check fails the search: a
// document that could not be checked is not "not permitted".
func (s *Service) searchChecked(ctx context.Context, principal, q string, k int) ([]scoredChunk, string, error) {
	candidates, err := s.pick().search(ctx, q, max(s.cfg.CandidateDepth, k), nil, FilterNone, 0)
	if err != nil {
		return nil, "", err
	}
	docs := candidateDocs(candidates)
	permitted := map[string]struct{}{}
	if len(docs) > 0 {
		if permitted, err = s.check.Allowed(ctx, principal, docs); err != nil {
			return nil, "", err
		}
	}
	out := make([]scoredChunk, 0, k)
	for _, c := range candidates {
		if _, ok := permitted[c.docID]; ok && len(out) < k {
			out = append(out, c)
		}
	}
	return out, readableKey(permitted), nil
}

// candidateDocs lists the distinct documents of candidates, in rank order.
func candidateDocs(candidates []scoredChunk) []string {
	seen := map[string]struct{}{}
	var docs []string
	for _, c := range candidates {
		if _, ok := seen[c.docID]; !ok {
			seen[c.docID] = struct{}{}
			docs = append(docs, c.docID)
		}
	}
	return docs
}

// readableFilter matches the passages of the documents in ids, with zero
// boost so it never changes ranking: the permission filter stays inside
// retrieval, as in prefilter mode.
func (r *replica) readableFilter(ids map[string]struct{}) query.Query {
	var chunks []string
	for id := range ids {
		d, ok := r.docs[id]
		if !ok {
			continue
		}
		for n := range d.chunks {
			chunks = append(chunks, chunkID(id, n))
		}
	}
	if len(chunks) == 0 {
		return bleve.NewMatchNoneQuery()
	}
	q := bleve.NewDocIDQuery(chunks)
	q.SetBoost(0)
	return q
}

// searchReadable ranks passages for query among the documents in ids.
func (r *replica) searchReadable(ctx context.Context, q string, k int, ids map[string]struct{}) ([]scoredChunk, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	match := bleve.NewMatchQuery(q)
	match.SetField(fieldText)
	req := bleve.NewSearchRequestOptions(bleve.NewConjunctionQuery(match, r.readableFilter(ids)), k, 0, false)
	res, err := r.bleve.SearchInContext(ctx, req)
	if err != nil {
		return nil, err
	}
	out := make([]scoredChunk, 0, min(k, len(res.Hits)))
	for _, h := range res.Hits {
		if c, ok := r.resolve(h.ID, h.Score); ok && len(out) < k {
			out = append(out, c)
		}
	}
	return out, nil
}

// readableKey identifies a set of documents for the answer cache.
func readableKey(ids map[string]struct{}) string {
	sorted := make([]string, 0, len(ids))
	for id := range ids {
		sorted = append(sorted, id)
	}
	slices.Sort(sorted)
	h := sha256.New()
	for _, id := range sorted {
		h.Write([]byte(id))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}
