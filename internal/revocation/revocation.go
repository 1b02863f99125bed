// Package revocation holds the ways a canary's access is taken away, one
// Strategy per method of the driver contract's vocabulary
// (v1alpha1.RevocationMethods). A run chooses its strategy once, from its
// spec, and every step that differs by method — sharing, revoking, undoing
// at cleanup, and the checks a configuration must pass — asks it, so a new
// method is one Strategy here (plus its driver support), not a switch in
// each step.
//
// Content freshness (UpdateContent) stays a strategy: it shares, "revokes"
// (replaces the body) and undoes exactly like the others and is probed and
// persisted the same way; what differs is the verdict's rule, which
// internal/measure keys on the method. A kind of its own would copy the
// scheduling, the lifecycle and the status of RevocationCanary.
package revocation

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
)

// Canary is what a strategy acts on: the planted document, the persona's
// subject and the revocation group. Secret fields are never logged.
type Canary struct {
	DocumentID string
	// Subject is the probed persona's principal; "" when nobody knows it
	// any more (cleanup of a run whose Persona is gone).
	Subject string
	// Group is the revocation group (RemoveFromGroup).
	Group string
	// Updated is, for UpdateContent, the document that replaces the
	// planted one; built by the caller, which holds the second payload.
	Updated func() (driver.Document, error)
	// Credential, for RevokeCredential, revokes and restores the persona's
	// client at its authorization server; nil when its Persona declares no
	// revocation (or is gone).
	Credential Revoker
}

// Revoker revokes a persona's credential at its issuer and restores it.
// Both are idempotent: a step retried after a crash sends them again.
type Revoker interface {
	Revoke(ctx context.Context) error
	Restore(ctx context.Context) error
}

// Control is a control persona, for the configuration checks.
type Control struct {
	Name, Subject string
	Groups        []string
}

// Strategy is one revocation method.
type Strategy interface {
	// Method is the API's name of the method.
	Method() v1alpha1.RevocationMethod
	// Needs is the driver contract's method the target must support for
	// this one: itself, or for a method the operator makes at the issuer,
	// the one whose grants it shares with.
	Needs() v1alpha1.RevocationMethod
	// Share gives the persona access to the planted document.
	Share(ctx context.Context, d driver.Driver, c Canary) error
	// Revoke takes it away (for UpdateContent: replaces the content).
	Revoke(ctx context.Context, d driver.Driver, c Canary) error
	// Undo removes every grant and membership the run made, idempotently,
	// before the document is deleted; a permanent rejection (already gone)
	// is not an error.
	Undo(ctx context.Context, d driver.Driver, c Canary) error
	// Problem names what makes a configuration unable to give a valid
	// measurement with this method, or "" (e.g. a control persona in the
	// revocation group would be granted access by the canary itself).
	Problem(c Canary, persona Control, controls []Control) string
}

// For returns the strategy of a method; "" is RemoveGrant, the CRD default.
func For(m v1alpha1.RevocationMethod) (Strategy, error) {
	if m == "" {
		m = v1alpha1.RevokeRemoveGrant
	}
	s, ok := strategies[m]
	if !ok {
		return nil, fmt.Errorf("revocation method %q is not one of %v", m, Methods())
	}
	return s, nil
}

// Methods are every method a canary may name: the contract's, then the
// operator's own.
func Methods() []v1alpha1.RevocationMethod {
	return append(slices.Clone(v1alpha1.RevocationMethods), v1alpha1.OperatorRevocationMethods...)
}

var strategies = map[v1alpha1.RevocationMethod]Strategy{
	v1alpha1.RevokeRemoveGrant:     removeGrant{},
	v1alpha1.RevokeRemoveFromGroup: removeFromGroup{},
	v1alpha1.RevokeDeleteDocument:  deleteDocument{},
	v1alpha1.RevokeUpdateContent:   updateContent{},
	v1alpha1.RevokeCredential:      revokeCredential{},
}

// grantsDirectly is the sharing and undoing of the methods that grant the
// persona itself.
type grantsDirectly struct{}

func (grantsDirectly) Share(ctx context.Context, d driver.Driver, c Canary) error {
	return d.Grant(ctx, c.DocumentID, c.Subject)
}

func (grantsDirectly) Undo(ctx context.Context, d driver.Driver, c Canary) error {
	if c.Subject == "" {
		return nil
	}
	return ignorePermanent(d.Revoke(ctx, c.DocumentID, c.Subject))
}

func (grantsDirectly) Problem(_ Canary, persona Control, controls []Control) string {
	return sameSubject(persona, controls)
}

type removeGrant struct{ grantsDirectly }

func (removeGrant) Needs() v1alpha1.RevocationMethod { return v1alpha1.RevokeRemoveGrant }

func (removeGrant) Method() v1alpha1.RevocationMethod { return v1alpha1.RevokeRemoveGrant }
func (removeGrant) Revoke(ctx context.Context, d driver.Driver, c Canary) error {
	return d.Revoke(ctx, c.DocumentID, c.Subject)
}

type deleteDocument struct{ grantsDirectly }

func (deleteDocument) Needs() v1alpha1.RevocationMethod { return v1alpha1.RevokeDeleteDocument }

func (deleteDocument) Method() v1alpha1.RevocationMethod { return v1alpha1.RevokeDeleteDocument }
func (deleteDocument) Revoke(ctx context.Context, d driver.Driver, c Canary) error {
	return d.DeleteDocument(ctx, c.DocumentID)
}

type updateContent struct{ grantsDirectly }

func (updateContent) Needs() v1alpha1.RevocationMethod { return v1alpha1.RevokeUpdateContent }

func (updateContent) Method() v1alpha1.RevocationMethod { return v1alpha1.RevokeUpdateContent }
func (updateContent) Revoke(ctx context.Context, d driver.Driver, c Canary) error {
	if c.Updated == nil {
		return errors.New("no updated document to replace the canary's content with")
	}
	doc, err := c.Updated()
	if err != nil {
		return err
	}
	return d.CreateDocument(ctx, doc)
}

type removeFromGroup struct{}

func (removeFromGroup) Needs() v1alpha1.RevocationMethod { return v1alpha1.RevokeRemoveFromGroup }

func (removeFromGroup) Method() v1alpha1.RevocationMethod { return v1alpha1.RevokeRemoveFromGroup }

// Share adds the persona to the group and grants the group; a backend
// with typed principals grants the group's members.
func (removeFromGroup) Share(ctx context.Context, d driver.Driver, c Canary) error {
	if err := d.AddMember(ctx, c.Group, c.Subject); err != nil {
		return err
	}
	if g, ok := d.(driver.GroupGranter); ok {
		return g.GrantGroup(ctx, c.DocumentID, c.Group)
	}
	return d.Grant(ctx, c.DocumentID, c.Group)
}

func (removeFromGroup) Revoke(ctx context.Context, d driver.Driver, c Canary) error {
	return d.RemoveMember(ctx, c.Group, c.Subject)
}

// Undo removes the membership, and the group's grant where a separate
// permissions backend would keep it after the document is gone.
func (removeFromGroup) Undo(ctx context.Context, d driver.Driver, c Canary) error {
	if c.Subject != "" {
		if err := ignorePermanent(d.RemoveMember(ctx, c.Group, c.Subject)); err != nil {
			return err
		}
	}
	if g, ok := d.(driver.GroupGranter); ok {
		return ignorePermanent(g.RevokeGroup(ctx, c.DocumentID, c.Group))
	}
	return nil
}

// Problem: besides a shared subject, a control persona in the revocation
// group is granted access by the canary itself.
func (removeFromGroup) Problem(c Canary, persona Control, controls []Control) string {
	if p := sameSubject(persona, controls); p != "" {
		return p
	}
	for _, ctl := range controls {
		if slices.Contains(ctl.Groups, c.Group) {
			return fmt.Sprintf("control Persona %q is a member of the revocation group %q", ctl.Name, c.Group)
		}
	}
	return ""
}

// revokeCredential grants the persona, then revokes its client at the
// authorization server; the grant stays until cleanup, so what ends its
// access is the credential alone.
type revokeCredential struct{ grantsDirectly }

func (revokeCredential) Method() v1alpha1.RevocationMethod { return v1alpha1.RevokeCredential }
func (revokeCredential) Needs() v1alpha1.RevocationMethod  { return v1alpha1.RevokeRemoveGrant }

// errNoRevoker: the run cannot revoke what it was not told how to.
var errNoRevoker = errors.New("the persona declares no oauth2.revocation")

func (revokeCredential) Revoke(ctx context.Context, _ driver.Driver, c Canary) error {
	if c.Credential == nil {
		return errNoRevoker
	}
	return c.Credential.Revoke(ctx)
}

// Undo restores the client before removing the grant: a persona left
// revoked would fail every later run at visibility.
func (revokeCredential) Undo(ctx context.Context, d driver.Driver, c Canary) error {
	if c.Credential != nil {
		if err := c.Credential.Restore(ctx); err != nil {
			return err
		}
	}
	return grantsDirectly{}.Undo(ctx, d, c)
}

// Problem: besides a shared subject, a persona that declares no way to
// revoke its client.
func (revokeCredential) Problem(c Canary, persona Control, controls []Control) string {
	if p := sameSubject(persona, controls); p != "" {
		return p
	}
	if c.Credential == nil {
		return fmt.Sprintf("Persona %q declares no spec.oauth2.revocation: a RevokeCredential canary revokes the persona's OAuth2 client there and restores it at cleanup", persona.Name)
	}
	return ""
}

// sameSubject: a control persona sharing the probed persona's subject is
// granted by the canary itself, so no isolation test is valid.
func sameSubject(persona Control, controls []Control) string {
	for _, c := range controls {
		if c.Subject == persona.Subject {
			return fmt.Sprintf("control Persona %q has the same subject as the probed persona", c.Name)
		}
	}
	return ""
}

// ignorePermanent: a rejection (the grant or document is already gone)
// leaves nothing to undo.
func ignorePermanent(err error) error {
	if err != nil && driver.IsPermanent(err) {
		return nil
	}
	return err
}

// IsNotFound is a target answering 404: the thing is not there.
func IsNotFound(err error) bool {
	var de *driver.Error
	return errors.As(err, &de) && de.Kind == driver.Permanent && de.StatusCode == http.StatusNotFound
}
