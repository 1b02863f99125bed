package target

import (
	"context"
	"errors"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/openfga"
)

// openfgaKind is OpenFGA as a permissions backend type.
var openfgaKind = permissionsKind{
	field: "spec.permissions.openfga",
	endpoint: func(p *v1alpha1.Permissions) string {
		if p.OpenFGA == nil {
			return ""
		}
		return p.OpenFGA.APIURL
	},
	keyRef: func(p *v1alpha1.Permissions) v1alpha1.SecretKeyReference { return p.OpenFGA.APITokenSecretRef },
	open:   openOpenFGABackend,
}

// openfgaBackend is OpenFGA as a PermissionsBackend. The store a name
// resolves to is looked up once, by the first call that needs it, and every
// later write through this backend goes to that store.
type openfgaBackend struct {
	perms  *openfga.Permissions
	client *openfga.Client
}

func openOpenFGABackend(d *Door, _ string, p *v1alpha1.Permissions, key []byte, timeout time.Duration, _ *holds) (PermissionsBackend, error) {
	s := p.OpenFGA
	client, err := openfga.Dial(openfga.Config{
		APIURL: s.APIURL, StoreID: s.StoreID, StoreName: s.StoreName, AuthorizationModelID: s.AuthorizationModelID,
		Token: string(key), HTTPClient: NoRedirects(d.httpClient()), Timeout: timeout, Mapping: openfgaMapping(s),
	})
	if err != nil {
		return nil, Stall(ReasonInvalidURL, "spec.permissions.openfga.apiURL: %v", err)
	}
	return &openfgaBackend{perms: openfga.NewPermissions(client, openfgaMapping(s)), client: client}, nil
}

// openfgaMapping is the corpus's model mapping.
func openfgaMapping(s *v1alpha1.OpenFGAPermissions) openfga.Mapping {
	m := s.PermissionsMapping
	return openfga.Mapping{DocumentType: m.DocumentType, GrantRelation: m.GrantRelation, GroupType: m.GroupType,
		MemberRelation: m.MemberRelation, SubjectType: m.SubjectType}.WithDefaults()
}

// CheckSchema resolves the store and checks the model holds the mapped
// types and relations.
func (b *openfgaBackend) CheckSchema(ctx context.Context) error {
	if _, err := b.client.ResolveStore(ctx); err != nil {
		return openfgaProblem(err)
	}
	return openfgaProblem(b.client.CheckModel(ctx))
}

// Resolved is what the last check resolved, for status.permissions.
func (b *openfgaBackend) Resolved() *v1alpha1.PermissionsStatus {
	store, model := b.client.Resolved()
	if store == "" {
		return nil
	}
	return &v1alpha1.PermissionsStatus{StoreID: store, AuthorizationModelID: model}
}

// openfgaProblem makes a store or model the corpus cannot use a Stalled
// problem naming what is missing; other errors pass as they are.
func openfgaProblem(err error) error {
	var sp *openfga.SchemaProblem
	if errors.As(err, &sp) {
		return Stall(v1alpha1.ReasonPermissionsSchemaMismatch, "spec.permissions.openfga: %s", sp.Message)
	}
	return err
}

// The writes name the store they resolve; a store the spec names that is
// gone or ambiguous is the user's to fix, as in the check.

func (b *openfgaBackend) Grant(ctx context.Context, doc, principal string) error {
	return openfgaProblem(b.perms.Grant(ctx, doc, principal))
}

func (b *openfgaBackend) Revoke(ctx context.Context, doc, principal string) error {
	return openfgaProblem(b.perms.Revoke(ctx, doc, principal))
}

func (b *openfgaBackend) GrantGroup(ctx context.Context, doc, group string) error {
	return openfgaProblem(b.perms.GrantGroup(ctx, doc, group))
}

func (b *openfgaBackend) RevokeGroup(ctx context.Context, doc, group string) error {
	return openfgaProblem(b.perms.RevokeGroup(ctx, doc, group))
}

func (b *openfgaBackend) AddMember(ctx context.Context, group, principal string) error {
	return openfgaProblem(b.perms.AddMember(ctx, group, principal))
}

func (b *openfgaBackend) RemoveMember(ctx context.Context, group, principal string) error {
	return openfgaProblem(b.perms.RemoveMember(ctx, group, principal))
}
