package target

import (
	"context"
	"crypto/sha256"
	"errors"
	"sync"
	"time"

	authzed "github.com/authzed/authzed-go/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/spicedb"
)

// withPermissions is a corpus driver whose permission changes go to a
// separate backend (an authorization engine) while documents and search stay
// with the driver.
type withPermissions struct {
	driver.Driver
	perms *spicedb.Permissions
	// inUse tells the client cache the client is still used, so a run
	// that holds this driver for long (a large fixture planted under a
	// rate limit) never has its client closed under it.
	inUse func()
}

// permissions is the backend, marked as in use.
func (w *withPermissions) permissions() *spicedb.Permissions {
	w.inUse()
	return w.perms
}

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

// StartConversation passes conversations through to the corpus driver:
// only permission changes go elsewhere.
func (w *withPermissions) StartConversation(ctx context.Context, persona driver.Token, question string) (string, driver.Answer, error) {
	c, ok := w.Driver.(driver.Conversations)
	if !ok {
		return "", driver.Answer{}, errNoConversations
	}
	return c.StartConversation(ctx, persona, question)
}

// FollowUp passes conversations through to the corpus driver.
func (w *withPermissions) FollowUp(ctx context.Context, persona driver.Token, id, question string) (driver.Answer, error) {
	c, ok := w.Driver.(driver.Conversations)
	if !ok {
		return driver.Answer{}, errNoConversations
	}
	return c.FollowUp(ctx, persona, id, question)
}

// errNoConversations: the wrapped driver has no conversation API (its
// capabilities say so too, and runs refuse the surface before probing).
var errNoConversations = driver.NewError(driver.Permanent, "Conversation", 0, "the driver has no conversation API", nil)

// permissionsKey checks a corpus's permissions backend against the door's
// rules (allowlist as grpc://host:port, labelled credential) and returns its
// key. Nothing is sent before both pass.
func (d *Door) permissionsKey(ctx context.Context, namespace string, p *v1alpha1.Permissions) ([]byte, error) {
	if p.Type != v1alpha1.PermissionsSpiceDB || p.SpiceDB == nil {
		return nil, Stall(ReasonDriverUnsupported, "spec.permissions: type %q is not available; use SpiceDB", p.Type)
	}
	if _, err := d.Allow.Check("spec.permissions.spicedb.endpoint", "grpc://"+p.SpiceDB.Endpoint); err != nil {
		return nil, err
	}
	return Credential(ctx, d.Reader, namespace, p.SpiceDB.PresharedKeySecretRef)
}

// spicedbMapping is the corpus's schema mapping.
func spicedbMapping(s *v1alpha1.SpiceDBPermissions) spicedb.Mapping {
	return spicedb.Mapping{DocumentType: s.DocumentType, GrantRelation: s.GrantRelation, GroupType: s.GroupType,
		MemberRelation: s.MemberRelation, SubjectType: s.SubjectType}.WithDefaults()
}

// clients keeps one gRPC client per (endpoint, key, plaintext), so resolving a
// corpus on every health check does not open a connection each time.
//
// A client nobody asked for or used in clientIdle is closed: it has no user
// left — typically it holds a key that was rotated away, or belongs to a
// corpus that was deleted.
type clients struct {
	mu   sync.Mutex
	m    map[[32]byte]*cachedClient
	now  func() time.Time
	idle time.Duration
}

type cachedClient struct {
	cl   *authzed.Client
	used time.Time
}

// clientIdle is far longer than any permission call (each is bounded by
// the corpus timeout) or any gap between the calls of one user.
const clientIdle = 30 * time.Minute

var spicedbClients = newClients(time.Now, clientIdle)

func newClients(now func() time.Time, idle time.Duration) *clients {
	return &clients{m: map[[32]byte]*cachedClient{}, now: now, idle: idle}
}

// get returns the client for (endpoint, key, plaintext) and a func its user
// calls whenever it uses the client, which keeps it open.
func (c *clients) get(endpoint string, key []byte, plaintext bool) (*authzed.Client, func(), error) {
	id := clientID(endpoint, key, plaintext)
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	c.closeIdle(now, id)
	e, ok := c.m[id]
	if !ok {
		cl, err := spicedb.Dial(endpoint, string(key), plaintext)
		if err != nil {
			return nil, nil, err
		}
		e = &cachedClient{cl: cl}
		c.m[id] = e
	}
	e.used = now
	return e.cl, func() { c.touch(e) }, nil
}

// touch marks e as used now.
func (c *clients) touch(e *cachedClient) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.used = c.now()
}

// closeIdle closes and forgets the clients, other than keep, that nobody
// asked for in c.idle. Called with c.mu held.
func (c *clients) closeIdle(now time.Time, keep [32]byte) {
	for id, e := range c.m {
		if id != keep && now.Sub(e.used) > c.idle {
			// Close only releases the connection; an error leaves nothing to do.
			_ = e.cl.Close()
			delete(c.m, id)
		}
	}
}

// clientID names a client by a hash, so the cache never holds a key as a
// map key in the clear.
func clientID(endpoint string, key []byte, plaintext bool) [32]byte {
	h := sha256.New()
	h.Write([]byte(endpoint))
	h.Write([]byte{0})
	h.Write(key)
	if plaintext {
		h.Write([]byte{1})
	}
	var id [32]byte
	copy(id[:], h.Sum(nil))
	return id
}

// attachPermissions wraps c's driver with the recipe's permissions backend
// and sets the check the Corpus controller runs on it.
func (c *Corpus) attachPermissions(r Recipe) error {
	s := r.Permissions.SpiceDB
	client, inUse, err := spicedbClients.get(s.Endpoint, r.PermissionsKey, s.Insecure)
	if err != nil {
		return Stall(ReasonInvalidURL, "spec.permissions.spicedb.endpoint: %v", err)
	}
	mapping := spicedbMapping(s)
	perms := spicedb.NewPermissions(client, mapping, c.Timeout)
	c.Driver = &withPermissions{Driver: c.Driver, perms: perms, inUse: inUse}
	c.CheckPermissions = func(ctx context.Context) error {
		inUse()
		err := spicedb.CheckSchema(ctx, client, mapping, c.Timeout)
		var sp *spicedb.SchemaProblem
		if errors.As(err, &sp) {
			return Stall(v1alpha1.ReasonPermissionsSchemaMismatch, "spec.permissions.spicedb: %s", sp.Message)
		}
		return err
	}
	return nil
}
