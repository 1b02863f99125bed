package spicedb

import (
	"context"
	"fmt"
	"time"

	v1 "github.com/authzed/authzed-go/proto/authzed/api/v1"
	authzed "github.com/authzed/authzed-go/v1"
	"google.golang.org/grpc/codes"

	"github.com/ragcanary/ragcanary/internal/driver"
)

// Permissions writes ragcanary's permission changes as SpiceDB
// relationships. It implements driver.Permissions and driver.GroupGranter;
// every call is bounded by Timeout and its errors are classified driver
// errors naming only the operation and the gRPC code.
type Permissions struct {
	client  *authzed.Client
	mapping Mapping
	timeout time.Duration
}

var (
	_ driver.Permissions  = (*Permissions)(nil)
	_ driver.GroupGranter = (*Permissions)(nil)
)

// NewPermissions uses client with mapping; timeout bounds each call.
func NewPermissions(client *authzed.Client, mapping Mapping, timeout time.Duration) *Permissions {
	return &Permissions{client: client, mapping: mapping.WithDefaults(), timeout: timeout}
}

// Grant relates principal (a subject) to the document.
func (p *Permissions) Grant(ctx context.Context, documentID, principal string) error {
	return p.write(ctx, "Grant", v1.RelationshipUpdate_OPERATION_TOUCH, p.grant(documentID, p.user(principal)))
}

// Revoke deletes the subject's grant; a missing grant is no error.
func (p *Permissions) Revoke(ctx context.Context, documentID, principal string) error {
	return p.write(ctx, "Revoke", v1.RelationshipUpdate_OPERATION_DELETE, p.grant(documentID, p.user(principal)))
}

// GrantGroup relates the group's members to the document.
func (p *Permissions) GrantGroup(ctx context.Context, documentID, group string) error {
	return p.write(ctx, "GrantGroup", v1.RelationshipUpdate_OPERATION_TOUCH, p.grant(documentID, p.members(group)))
}

// RevokeGroup deletes the group's grant.
func (p *Permissions) RevokeGroup(ctx context.Context, documentID, group string) error {
	return p.write(ctx, "RevokeGroup", v1.RelationshipUpdate_OPERATION_DELETE, p.grant(documentID, p.members(group)))
}

// AddMember makes principal a member of group.
func (p *Permissions) AddMember(ctx context.Context, group, principal string) error {
	return p.write(ctx, "AddMember", v1.RelationshipUpdate_OPERATION_TOUCH, p.membership(group, principal))
}

// RemoveMember deletes the membership; a missing one is no error.
func (p *Permissions) RemoveMember(ctx context.Context, group, principal string) error {
	return p.write(ctx, "RemoveMember", v1.RelationshipUpdate_OPERATION_DELETE, p.membership(group, principal))
}

type relationship struct {
	resource *v1.ObjectReference
	relation string
	subject  *v1.SubjectReference
}

func (p *Permissions) user(principal string) *v1.SubjectReference {
	return &v1.SubjectReference{Object: &v1.ObjectReference{ObjectType: p.mapping.SubjectType, ObjectId: principal}}
}

func (p *Permissions) members(group string) *v1.SubjectReference {
	return &v1.SubjectReference{Object: &v1.ObjectReference{ObjectType: p.mapping.GroupType, ObjectId: group},
		OptionalRelation: p.mapping.MemberRelation}
}

func (p *Permissions) grant(documentID string, subject *v1.SubjectReference) relationship {
	return relationship{resource: &v1.ObjectReference{ObjectType: p.mapping.DocumentType, ObjectId: documentID},
		relation: p.mapping.GrantRelation, subject: subject}
}

func (p *Permissions) membership(group, principal string) relationship {
	return relationship{resource: &v1.ObjectReference{ObjectType: p.mapping.GroupType, ObjectId: group},
		relation: p.mapping.MemberRelation, subject: p.user(principal)}
}

func (p *Permissions) write(ctx context.Context, op string, operation v1.RelationshipUpdate_Operation, r relationship) error {
	for _, id := range []string{r.resource.ObjectId, r.subject.Object.ObjectId} {
		if !validObjectID(id) {
			return driver.NewError(driver.Permanent, op, 0, "ID is not a valid SpiceDB object ID", nil)
		}
	}
	ctx, cancel := bounded(ctx, p.timeout)
	defer cancel()
	_, err := p.client.WriteRelationships(ctx, &v1.WriteRelationshipsRequest{Updates: []*v1.RelationshipUpdate{{
		Operation:    operation,
		Relationship: &v1.Relationship{Resource: r.resource, Relation: r.relation, Subject: r.subject},
	}}})
	return classify(op, err)
}

// classify maps a gRPC failure to a driver error kind. The text is the code
// only: SpiceDB's messages can quote the relationship written.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	code := errorCode(err)
	reason := fmt.Sprintf("spicedb %s", code)
	switch code {
	case codes.Unauthenticated, codes.PermissionDenied:
		return driver.NewError(driver.Unauthorized, op, 0, reason, err)
	case codes.InvalidArgument, codes.FailedPrecondition, codes.NotFound, codes.AlreadyExists, codes.OutOfRange, codes.Unimplemented:
		return driver.NewError(driver.Permanent, op, 0, reason, err)
	default:
		return driver.NewError(driver.Transient, op, 0, reason, err)
	}
}
