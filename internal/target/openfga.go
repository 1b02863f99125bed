package target

import (
	"context"
	"errors"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/openfga"
)

// openfgaBackend is OpenFGA as a PermissionsBackend. The store a name
// resolves to is looked up once, by the first call that needs it, and every
// later write through this backend goes to that store; a run resolves it
// once for all its steps (see PinnedRecipe). The lookup's replies, like
// every other, draw on the corpus's reply budget.
type openfgaBackend struct {
	perms  *openfga.Permissions
	client *openfga.Client
}

func openOpenFGABackend(d *Door, _ string, p *v1alpha1.Permissions, key []byte, timeout time.Duration, replies *ReplyBudget, _ *holds) (PermissionsBackend, error) {
	s := p.OpenFGA
	cfg := openfga.Config{
		APIURL: s.APIURL, StoreID: s.StoreID, StoreName: s.StoreName, AuthorizationModelID: s.AuthorizationModelID,
		Token: string(key), HTTPClient: NoRedirects(d.httpClient()), Timeout: timeout, Mapping: openfgaMapping(s),
	}
	if replies != nil {
		cfg.ReplyBudget = replies
	}
	client, err := openfga.Dial(cfg)
	if err != nil {
		return nil, Stall(v1alpha1.ReasonInvalidURL, "spec.permissions.openfga.apiURL: %v", err)
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

// storePinner is a backend whose store the spec may name rather than
// give: a run resolves the name once and pins the ID it got.
type storePinner interface {
	// resolveStore is the store's ID, looked up when the spec names it.
	resolveStore(ctx context.Context) (string, error)
	// useStore sends every later call to the store id without a lookup.
	useStore(id string) error
}

func (b *openfgaBackend) resolveStore(ctx context.Context) (string, error) {
	id, err := b.client.ResolveStore(ctx)
	return id, openfgaProblem(err)
}

func (b *openfgaBackend) useStore(id string) error { return b.client.UseStore(id) }

// namesStore reports whether r's permissions backend names its OpenFGA
// store rather than giving its ID.
func namesStore(r Recipe) bool {
	return r.Permissions != nil && r.Permissions.OpenFGA != nil && r.Permissions.OpenFGA.StoreName != ""
}

// usePinned sends a backend built from r to the store r pinned, if any: a
// pin the backend cannot use (not an OpenFGA ID: the kept copy was
// edited) is a user problem, never a silent lookup by name.
func usePinned(backend PermissionsBackend, r Recipe) error {
	if r.OpenFGAStoreID == "" || !namesStore(r) {
		return nil
	}
	p, ok := backend.(storePinner)
	if !ok {
		return nil
	}
	if err := p.useStore(r.OpenFGAStoreID); err != nil {
		return Stall("CleanupSecretInvalid", "the run's kept copy pins an OpenFGA store that is not an OpenFGA ID")
	}
	return nil
}

// PinnedRecipe is the recipe a run keeps before it writes anything: an
// OpenFGA store name resolved now, once, to the store ID it names, which
// the run's grants, revokes and cleanup then use whatever the name names
// later. The corpus itself uses that store from now on. A store that
// cannot be resolved is the lookup's error (a Stalled *Problem when the
// user must fix the name).
func (c *Corpus) PinnedRecipe(ctx context.Context) (Recipe, error) {
	p, ok := c.perms.(storePinner)
	if !ok || !namesStore(c.recipe) || c.recipe.OpenFGAStoreID != "" {
		return c.recipe, nil
	}
	id, err := p.resolveStore(ctx)
	if err != nil {
		return Recipe{}, err
	}
	if err := p.useStore(id); err != nil {
		return Recipe{}, err
	}
	c.recipe.OpenFGAStoreID = id
	return c.recipe, nil
}

// PinTo reports whether c reaches the target kept names (equal target
// identities, read from the resolved configurations; one that cannot be
// read is never the same) and, when it does, sends c where kept pinned its
// store name, so a live corpus used in the kept copy's stead writes where
// the run began.
func (c *Corpus) PinTo(kept Recipe) bool {
	a, errA := c.Identity()
	b, errB := kept.Identity()
	if errA != nil || errB != nil || a != b {
		return false
	}
	if kept.OpenFGAStoreID == "" || c.perms == nil {
		return true
	}
	if usePinned(c.perms, kept) != nil {
		return false
	}
	c.recipe.OpenFGAStoreID = kept.OpenFGAStoreID
	return true
}
