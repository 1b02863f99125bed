package target

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/spicedb"
)

// PermissionsBackend is a separate backend for a corpus's permission
// changes (an authorization engine), while documents and search stay with
// the driver. A backend type is selected once per corpus from
// backendOpeners; adding one is a case of v1alpha1.Permissions.Backend (its
// facts), one entry there and one implementation of this interface.
type PermissionsBackend interface {
	driver.Permissions
	driver.GroupGranter
	// CheckSchema verifies the backend holds the types and relations the
	// corpus maps to; a mismatch is a Stalled *Problem naming what is
	// missing.
	CheckSchema(ctx context.Context) error
}

// openBackend builds a backend of one type; the connection it uses is
// held by h, and its replies draw on replies, the corpus's reply budget.
type openBackend func(d *Door, corpus string, p *v1alpha1.Permissions, key []byte, timeout time.Duration, replies *ReplyBudget, h *holds) (PermissionsBackend, error)

// backendOpeners are the backend types this build can open. What a type's
// settings are (their field, endpoint, key and mapping) is the API's
// (v1alpha1.Permissions.Backend), read alike by the controllers, live mode
// and the door.
var backendOpeners = map[v1alpha1.PermissionsType]openBackend{
	v1alpha1.PermissionsSpiceDB: openSpiceDBBackend,
	v1alpha1.PermissionsOpenFGA: openOpenFGABackend,
}

// resolvingBackend is a backend whose check resolves names the spec left
// open (an OpenFGA store name, the latest model), shown in status.
type resolvingBackend interface {
	Resolved() *v1alpha1.PermissionsStatus
}

// withPermissions is a corpus driver whose permission changes go to a
// PermissionsBackend.
type withPermissions struct {
	passThrough
	perms PermissionsBackend
}

func (w *withPermissions) permissions() PermissionsBackend { return w.perms }

func (w *withPermissions) Grant(ctx context.Context, doc, principal string) error {
	return w.permissions().Grant(ctx, doc, principal)
}

func (w *withPermissions) Revoke(ctx context.Context, doc, principal string) error {
	return w.permissions().Revoke(ctx, doc, principal)
}

func (w *withPermissions) AddMember(ctx context.Context, group, principal string) error {
	return w.permissions().AddMember(ctx, group, principal)
}

func (w *withPermissions) RemoveMember(ctx context.Context, group, principal string) error {
	return w.permissions().RemoveMember(ctx, group, principal)
}

func (w *withPermissions) GrantGroup(ctx context.Context, doc, group string) error {
	return w.permissions().GrantGroup(ctx, doc, group)
}

func (w *withPermissions) RevokeGroup(ctx context.Context, doc, group string) error {
	return w.permissions().RevokeGroup(ctx, doc, group)
}

// passThrough is a wrapped corpus driver whose conversations go through to
// it: what a wrapper that moves only permission or membership changes
// elsewhere embeds.
type passThrough struct {
	driver.Driver
}

// StartConversation passes conversations through to the corpus driver.
func (p passThrough) StartConversation(ctx context.Context, persona driver.Token, question string) (string, driver.Answer, error) {
	c, ok := p.Driver.(driver.Conversations)
	if !ok {
		return "", driver.Answer{}, errNoConversations
	}
	return c.StartConversation(ctx, persona, question)
}

// FollowUp passes conversations through to the corpus driver.
func (p passThrough) FollowUp(ctx context.Context, persona driver.Token, id, question string) (driver.Answer, error) {
	c, ok := p.Driver.(driver.Conversations)
	if !ok {
		return driver.Answer{}, errNoConversations
	}
	return c.FollowUp(ctx, persona, id, question)
}

// errNoConversations: the wrapped driver has no conversation API (its
// capabilities say so too, and runs refuse the surface before probing).
var errNoConversations = driver.NewError(driver.Permanent, "Conversation", 0, "the driver has no conversation API", nil)

// permissionsBackend returns a corpus's backend and its opener after
// checking it against the door's rules (a type this build opens, with its
// settings, at an allowed endpoint). Nothing is sent before it passes.
func (d *Door) permissionsBackend(p *v1alpha1.Permissions) (v1alpha1.PermissionsBackend, openBackend, error) {
	b, ok := p.Backend()
	open, known := backendOpeners[p.Type]
	if !ok || !known {
		return b, nil, Stall(v1alpha1.ReasonDriverUnsupported, "spec.permissions: type %q is not available or its settings are missing; use %s",
			p.Type, knownPermissionsTypes())
	}
	if _, err := d.Allow.Check(b.EndpointField, b.Endpoint); err != nil {
		return b, nil, err
	}
	return b, open, nil
}

func knownPermissionsTypes() string {
	names := make([]string, 0, len(backendOpeners))
	for t := range backendOpeners {
		names = append(names, string(t))
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// permissionsKey checks a corpus's permissions backend and returns its key
// (a labelled credential).
func (d *Door) permissionsKey(ctx context.Context, namespace string, p *v1alpha1.Permissions) ([]byte, error) {
	b, _, err := d.permissionsBackend(p)
	if err != nil {
		return nil, err
	}
	return Credential(ctx, d.Reader, namespace, b.KeyRef)
}

// attachPermissions wraps c's driver with the recipe's permissions backend
// and sets the check the Corpus controller runs on it.
func (d *Door) attachPermissions(c *Corpus, corpus string, r Recipe) error {
	_, open, err := d.permissionsBackend(r.Permissions)
	if err != nil {
		return err
	}
	backend, err := open(d, corpus, r.Permissions, r.PermissionsKey, c.Timeout, c.limiters.Replies(c.Key), c.holds)
	if err != nil {
		return err
	}
	if err := usePinned(backend, r); err != nil {
		return err
	}
	c.perms = backend
	c.Driver = &withPermissions{passThrough: passThrough{c.Driver}, perms: backend}
	c.CheckPermissions = backend.CheckSchema
	if r, ok := backend.(resolvingBackend); ok {
		c.PermissionsStatus = r.Resolved
	}
	return nil
}

// spicedbBackend is SpiceDB as a PermissionsBackend.
type spicedbBackend struct {
	*spicedb.Permissions
	check func(ctx context.Context) error
}

func (b spicedbBackend) CheckSchema(ctx context.Context) error { return b.check(ctx) }

func openSpiceDBBackend(d *Door, corpus string, p *v1alpha1.Permissions, key []byte, timeout time.Duration, _ *ReplyBudget, h *holds) (PermissionsBackend, error) {
	s := p.SpiceDB
	client, err := d.openSpiceDB(corpus, s.Endpoint, key, s.Insecure, h)
	if err != nil {
		return nil, Stall(v1alpha1.ReasonInvalidURL, "spec.permissions.spicedb.endpoint: %v", err)
	}
	mapping := spicedbMapping(s)
	check := func(ctx context.Context) error {
		err := spicedb.CheckSchema(ctx, client, mapping, timeout)
		var sp *spicedb.SchemaProblem
		if errors.As(err, &sp) {
			return Stall(v1alpha1.ReasonPermissionsSchemaMismatch, "spec.permissions.spicedb: %s", sp.Message)
		}
		return err
	}
	return spicedbBackend{Permissions: spicedb.NewPermissions(client, mapping, timeout), check: check}, nil
}

// spicedbMapping is the corpus's schema mapping.
func spicedbMapping(s *v1alpha1.SpiceDBPermissions) spicedb.Mapping {
	return spicedb.Mapping{DocumentType: s.DocumentType, GrantRelation: s.GrantRelation, GroupType: s.GroupType,
		MemberRelation: s.MemberRelation, SubjectType: s.SubjectType}.WithDefaults()
}
