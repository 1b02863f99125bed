package openfga

import (
	"context"
	"net/http"

	fga "github.com/openfga/go-sdk"

	"github.com/ragcanary/ragcanary/internal/driver"
)

// Permissions writes ragcanary's permission changes as OpenFGA tuples. It
// implements driver.Permissions and driver.GroupGranter; every call writes
// or deletes one tuple, is bounded by the client's timeout, and fails with
// a classified driver error naming only the operation, the HTTP status and
// OpenFGA's error code.
type Permissions struct {
	client  *Client
	mapping Mapping
}

var (
	_ driver.Permissions  = (*Permissions)(nil)
	_ driver.GroupGranter = (*Permissions)(nil)
)

// NewPermissions writes through c under m (empty names: DefaultMapping's).
func NewPermissions(c *Client, m Mapping) *Permissions {
	return &Permissions{client: c, mapping: m.WithDefaults()}
}

// Grant relates principal (a subject) to the document; an existing grant
// is no error.
func (p *Permissions) Grant(ctx context.Context, documentID, principal string) error {
	return p.write(ctx, "Grant", p.grant(documentID, p.subject(principal)))
}

// Revoke deletes the subject's grant; a missing grant is no error.
func (p *Permissions) Revoke(ctx context.Context, documentID, principal string) error {
	return p.delete(ctx, "Revoke", p.grant(documentID, p.subject(principal)))
}

// GrantGroup relates the group's members to the document.
func (p *Permissions) GrantGroup(ctx context.Context, documentID, group string) error {
	return p.write(ctx, "GrantGroup", p.grant(documentID, p.members(group)))
}

// RevokeGroup deletes the group's grant.
func (p *Permissions) RevokeGroup(ctx context.Context, documentID, group string) error {
	return p.delete(ctx, "RevokeGroup", p.grant(documentID, p.members(group)))
}

// AddMember makes principal a member of group.
func (p *Permissions) AddMember(ctx context.Context, group, principal string) error {
	return p.write(ctx, "AddMember", p.membership(group, principal))
}

// RemoveMember deletes the membership; a missing one is no error.
func (p *Permissions) RemoveMember(ctx context.Context, group, principal string) error {
	return p.delete(ctx, "RemoveMember", p.membership(group, principal))
}

// tuple is one tuple key; ok is false when OpenFGA cannot hold its IDs.
type tuple struct {
	key fga.TupleKeyWithoutCondition
	ok  bool
}

type ref struct {
	s  string
	ok bool
}

func (p *Permissions) subject(principal string) ref {
	s, ok := user(p.mapping.SubjectType, principal, "")
	return ref{s, ok}
}

func (p *Permissions) members(group string) ref {
	s, ok := user(p.mapping.GroupType, group, p.mapping.MemberRelation)
	return ref{s, ok}
}

func (p *Permissions) grant(documentID string, u ref) tuple {
	obj, ok := object(p.mapping.DocumentType, documentID)
	return tuple{fga.TupleKeyWithoutCondition{User: u.s, Relation: p.mapping.GrantRelation, Object: obj}, ok && u.ok}
}

func (p *Permissions) membership(group, principal string) tuple {
	obj, ok := object(p.mapping.GroupType, group)
	u := p.subject(principal)
	return tuple{fga.TupleKeyWithoutCondition{User: u.s, Relation: p.mapping.MemberRelation, Object: obj}, ok && u.ok}
}

// write adds t. OpenFGA refuses a tuple that exists with the code
// write_failed_due_to_invalid_input, which it gives for nothing else (the
// SDK this builds on predates the Write API's on_duplicate option): with
// one tuple in the request, that code means the grant is already there.
func (p *Permissions) write(ctx context.Context, op string, t tuple) error {
	k := t.key
	return p.send(ctx, op, t, fga.WriteRequest{Writes: &fga.WriteRequestWrites{TupleKeys: []fga.TupleKey{
		{User: k.User, Relation: k.Relation, Object: k.Object}}}})
}

// delete removes t; OpenFGA's refusal of a tuple that does not exist (the
// same code as write's) means it is already gone.
func (p *Permissions) delete(ctx context.Context, op string, t tuple) error {
	return p.send(ctx, op, t, fga.WriteRequest{Deletes: &fga.WriteRequestDeletes{TupleKeys: []fga.TupleKeyWithoutCondition{t.key}}})
}

func (p *Permissions) send(ctx context.Context, op string, t tuple, body fga.WriteRequest) error {
	if !t.ok {
		return driver.NewError(driver.Permanent, op, 0, reasonInvalidID, nil)
	}
	ctx, cancel := p.client.bounded(ctx)
	defer cancel()
	store, err := p.client.store(ctx, op)
	if err != nil {
		return err
	}
	body.AuthorizationModelId = p.client.modelOption()
	_, resp, err := p.client.api.OpenFgaApi.Write(ctx, store).Body(body).Execute()
	if hasCode(resp, err, http.StatusBadRequest, fga.ERRORCODE_WRITE_FAILED_DUE_TO_INVALID_INPUT) {
		return nil
	}
	return classify(op, resp, err)
}
