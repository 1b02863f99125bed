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

// authzTimeout bounds each SpiceDB call the service makes.
const authzTimeout = 5 * time.Second

func (a *SpiceDBAuthz) validate() error {
	if a.Endpoint == "" || a.Key == "" {
		return errors.New("SpiceDB authorization needs an endpoint and a key")
	}
	switch a.Consistency {
	case spicedb.MinimizeLatency, spicedb.FullyConsistent:
		return nil
	default:
		return fmt.Errorf("authz consistency %q is not one of minimize_latency, fully_consistent", a.Consistency)
	}
}

// newAuthorizer connects, writes the reference schema if SpiceDB has none,
// and returns the query-time authorizer.
func newAuthorizer(a *SpiceDBAuthz) (*spicedb.Authorizer, error) {
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

// readableKey identifies a readable set for the answer cache, so a cached
// answer is never served once SpiceDB says the set changed.
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
