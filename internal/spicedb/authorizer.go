package spicedb

import (
	"context"
	"errors"
	"io"
	"time"

	v1 "github.com/authzed/authzed-go/proto/authzed/api/v1"
	authzed "github.com/authzed/authzed-go/v1"
)

// Consistency is how fresh a query-time lookup must be.
type Consistency string

// Consistency settings.
const (
	// MinimizeLatency reads at a quantized revision: fast, and stale by up to
	// the datastore's quantization interval, which is a real revocation lag.
	MinimizeLatency Consistency = "minimize_latency"
	// FullyConsistent reads at the newest revision.
	FullyConsistent Consistency = "fully_consistent"
)

// Authorizer answers "which documents may this principal read" at query
// time, for a target that keeps permissions in SpiceDB rather than in its
// index.
type Authorizer struct {
	client      *authzed.Client
	mapping     Mapping
	consistency Consistency
	timeout     time.Duration
}

// NewAuthorizer looks up with client under mapping and consistency.
func NewAuthorizer(client *authzed.Client, mapping Mapping, consistency Consistency, timeout time.Duration) *Authorizer {
	return &Authorizer{client: client, mapping: mapping.WithDefaults(), consistency: consistency, timeout: timeout}
}

// Readable returns the IDs of documents principal may read, directly or
// through a group.
func (a *Authorizer) Readable(ctx context.Context, principal string) (map[string]struct{}, error) {
	if !validObjectID(principal) {
		return map[string]struct{}{}, nil // no such subject can hold a relationship
	}
	ctx, cancel := bounded(ctx, a.timeout)
	defer cancel()
	stream, err := a.client.LookupResources(ctx, &v1.LookupResourcesRequest{
		Consistency:        a.consistencyRequirement(),
		ResourceObjectType: a.mapping.DocumentType,
		Permission:         a.mapping.GrantRelation,
		Subject:            &v1.SubjectReference{Object: &v1.ObjectReference{ObjectType: a.mapping.SubjectType, ObjectId: principal}},
	})
	if err != nil {
		return nil, classify("LookupResources", err)
	}
	out := map[string]struct{}{}
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, classify("LookupResources", err)
		}
		if resp.GetPermissionship() == v1.LookupPermissionship_LOOKUP_PERMISSIONSHIP_HAS_PERMISSION {
			out[resp.GetResourceObjectId()] = struct{}{}
		}
	}
}

func (a *Authorizer) consistencyRequirement() *v1.Consistency {
	if a.consistency == FullyConsistent {
		return &v1.Consistency{Requirement: &v1.Consistency_FullyConsistent{FullyConsistent: true}}
	}
	return &v1.Consistency{Requirement: &v1.Consistency_MinimizeLatency{MinimizeLatency: true}}
}
