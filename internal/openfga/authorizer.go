package openfga

import (
	"context"
	"strings"
	"sync"

	fga "github.com/openfga/go-sdk"
	"golang.org/x/sync/errgroup"

	"github.com/ragcanary/ragcanary/internal/driver"
)

// Consistency is how fresh a query-time lookup must be.
type Consistency string

// Consistency settings, OpenFGA's consistency preferences.
const (
	// MinimizeLatency lets OpenFGA answer from its caches (check query,
	// iterator and list-objects caches, when the server enables them):
	// fast, and stale by up to their TTL, which is a real revocation lag.
	MinimizeLatency Consistency = "minimize_latency"
	// HigherConsistency bypasses those caches and reads the datastore.
	HigherConsistency Consistency = "higher_consistency"
)

// maxParallelChecks bounds the Checks one Allowed call has in flight.
const maxParallelChecks = 8

// Authorizer answers "which documents may this principal read" at query
// time, for a target that keeps permissions in OpenFGA rather than in its
// index.
type Authorizer struct {
	client      *Client
	mapping     Mapping
	consistency fga.ConsistencyPreference
}

// NewAuthorizer looks up through c under m with consistency (anything but
// HigherConsistency is MinimizeLatency).
func NewAuthorizer(c *Client, m Mapping, consistency Consistency) *Authorizer {
	pref := fga.CONSISTENCYPREFERENCE_MINIMIZE_LATENCY
	if consistency == HigherConsistency {
		pref = fga.CONSISTENCYPREFERENCE_HIGHER_CONSISTENCY
	}
	return &Authorizer{client: c, mapping: m.WithDefaults(), consistency: pref}
}

// Readable returns the IDs of documents principal may read, directly or
// through a group (ListObjects: a prefilter). A principal OpenFGA cannot
// hold reads nothing.
func (a *Authorizer) Readable(ctx context.Context, principal string) (map[string]struct{}, error) {
	out := map[string]struct{}{}
	subject, ok := user(a.mapping.SubjectType, principal, "")
	if !ok {
		return out, nil
	}
	ctx, cancel := a.client.bounded(ctx)
	defer cancel()
	store, err := a.client.store(ctx, "ListObjects")
	if err != nil {
		return nil, err
	}
	consistency := a.consistency
	reply, resp, err := a.client.api.OpenFgaApi.ListObjects(ctx, store).Body(fga.ListObjectsRequest{
		AuthorizationModelId: a.client.modelOption(),
		Type:                 a.mapping.DocumentType,
		Relation:             a.mapping.GrantRelation,
		User:                 subject,
		Consistency:          &consistency,
	}).Execute()
	if err != nil {
		return nil, classify("ListObjects", resp, err)
	}
	prefix := a.mapping.DocumentType + ":"
	for _, o := range reply.Objects {
		if id, ok := strings.CutPrefix(o, prefix); ok {
			out[id] = struct{}{}
		}
	}
	return out, nil
}

// Allowed returns the subset of docs principal may read, by a Check of
// each candidate (a postfilter), at most maxParallelChecks at a time. Any
// failed Check fails the call: an unanswered check is never a denial. IDs
// OpenFGA cannot hold are never readable and are not asked about.
func (a *Authorizer) Allowed(ctx context.Context, principal string, docs []string) (map[string]struct{}, error) {
	out := map[string]struct{}{}
	subject, ok := user(a.mapping.SubjectType, principal, "")
	if !ok || len(docs) == 0 {
		return out, nil
	}
	ctx, cancel := a.client.bounded(ctx)
	defer cancel()
	store, err := a.client.store(ctx, "Check")
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(maxParallelChecks)
	asked := map[string]bool{}
	for _, doc := range docs {
		obj, ok := object(a.mapping.DocumentType, doc)
		if !ok || asked[doc] {
			continue
		}
		asked[doc] = true
		g.Go(func() error {
			allowed, err := a.check(gctx, store, subject, obj)
			if allowed {
				mu.Lock()
				out[doc] = struct{}{}
				mu.Unlock()
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

func (a *Authorizer) check(ctx context.Context, store, subject, obj string) (bool, error) {
	consistency := a.consistency
	reply, resp, err := a.client.api.OpenFgaApi.Check(ctx, store).Body(fga.CheckRequest{
		TupleKey:             fga.CheckRequestTupleKey{User: subject, Relation: a.mapping.GrantRelation, Object: obj},
		AuthorizationModelId: a.client.modelOption(),
		Consistency:          &consistency,
	}).Execute()
	if err != nil {
		return false, classify("Check", resp, err)
	}
	if reply.Allowed == nil {
		// OpenFGA always states the answer; a reply without one is not a "no".
		return false, driver.NewError(driver.Transient, "Check", resp.StatusCode, reasonMalformed, nil)
	}
	return *reply.Allowed, nil
}
