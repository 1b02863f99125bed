// Package target is the only door from ragcanary to a system under test.
// Controllers, the probe engine, suites, `ragcanary eval` live mode and
// `ragcanary conformance` all reach a target through it, so its rules hold
// everywhere:
//
//   - only URLs the operator's allowlist admits are called, after they are
//     parsed and normalised; userinfo and empty hosts are refused;
//   - no redirect is ever followed (a 3xx is an error naming the status);
//   - a Secret is read as a credential only when it is labelled
//     ragcanary.dev/credential=true;
//   - every call is bounded by the corpus timeout, in one layer (the driver);
//   - failures come back as one intent-typed *Problem (stalled, waiting,
//     transient) that callers map to conditions in one place.
//
// Resolving is done once per stage by callers (a probe loop keeps the
// driver and tokens it was started with), not on every heartbeat.
package target

import (
	"context"
	"net/http"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	httpdriver "github.com/ragcanary/ragcanary/internal/driver/http"
	"github.com/ragcanary/ragcanary/internal/surface"
)

// DefaultTimeout is used when a corpus has no driver timeout set.
const DefaultTimeout = 10 * time.Second

// Door resolves Corpora and Personas into what a caller needs to talk to the
// system under test. It is safe for concurrent use.
type Door struct {
	// Reader reads credential Secrets; in the operator the bounded
	// secretcache reader in front of the API server.
	Reader client.Reader
	// Allow is the operator's target allowlist.
	Allow Allowlist
	// Limiters are the per-corpus rate limiters shared by probes and suites;
	// nil gives every resolved corpus a private limiter (the CLI).
	Limiters *Limiters
	// DefaultLimit applies to corpora that set no rate limit.
	DefaultLimit Limit
	// Addresses is what the door may connect to after resolution, enforced
	// in the dialer of every connection the door opens itself.
	Addresses AddressPolicy
	// HTTPClient overrides the door's own client (tests); it is wrapped so
	// it never follows redirects either way, and its transport is the
	// caller's, so Addresses does not apply to it.
	HTTPClient *http.Client
	// UserAgent is sent on every HTTP request to a target (see UserAgent);
	// empty leaves each client library's own.
	UserAgent string
	// History holds every chat surface's conversations under one byte
	// budget, shared fairly between corpora; nil gives each chat client a
	// history of its own (the CLI).
	History *surface.History

	// shared are the connections the door opened for corpora, held by the
	// corpora resolved from it.
	shared *conns
}

// Corpus is a resolved Corpus: its driver, bounded per call by Timeout, and
// its rate limit. It holds a credential: never log it.
type Corpus struct {
	Object  *v1alpha1.Corpus
	Driver  driver.Driver
	Timeout time.Duration
	// Key names the corpus's limiter ("namespace/name").
	Key   string
	Limit Limit

	// CheckPermissions verifies the corpus's separate permissions backend
	// (reachable, key accepted, schema as mapped); nil when permission
	// changes go to the driver itself.
	CheckPermissions func(ctx context.Context) error
	// PermissionsStatus is what CheckPermissions resolved; nil when the
	// backend leaves nothing to resolve.
	PermissionsStatus func() *v1alpha1.PermissionsStatus
	// CheckDriver verifies what the driver needs beyond reachability (for
	// Postgres: schema, statements, a reader filtered by row-level
	// security); nil when there is nothing more to check. A user problem
	// is a Stalled *Problem.
	CheckDriver func(ctx context.Context) error
	// CheckDirectory verifies the corpus's directory (reachable, bind
	// accepted); nil without one.
	CheckDirectory func(ctx context.Context) error

	limiters *Limiters
	recipe   Recipe
	holds    *holds
	// source is the driver before surfaces or a permissions backend
	// wrapped it.
	source driver.Driver
	// perms is the separate permissions backend, nil without one.
	perms PermissionsBackend
}

// Source is the corpus's own driver, unwrapped by spec.surfaces or
// spec.permissions: assert driver.Captures or driver.DocumentFinder on it
// (the REST source implements both).
func (c *Corpus) Source() driver.Driver { return c.source }

// Release lets go of the connections this resolution holds. Every
// resolved corpus is released by its resolver, once its step is done; a
// connection closes when no corpus holds it and it is no corpus's current
// configuration. Release is idempotent.
func (c *Corpus) Release() { c.holds.release() }

// Hold takes another hold of the corpus's connections for a holder that
// outlives the resolver's step (a probe loop); the holder calls the
// returned func, once, when it is done.
func (c *Corpus) Hold() func() { return c.holds.another() }

// Wait blocks until the corpus's rate limit allows one call.
func (c *Corpus) Wait(ctx context.Context) error { return c.limiters.Wait(ctx, c.Key) }

// Recipe is what rebuilds the corpus's driver later without the Corpus or its
// Secret: a run keeps it so it can always remove what it planted.
func (c *Corpus) Recipe() Recipe { return c.recipe }

// Forget releases what the door keeps for a deleted corpus: its limiter,
// and its connections once the last run holding them lets go.
func (d *Door) Forget(namespace, name string) {
	key := LimiterKey(namespace, name)
	if d.Limiters != nil {
		d.Limiters.Forget(key)
	}
	d.conns().postgres.forget(key)
	d.conns().spicedb.forget(key)
	d.conns().chats.forget(key)
	d.History.Forget(key)
}

// EndConversation frees the history of the corpus's conversation id (a
// run that ended); one held elsewhere or gone already is no error.
func (d *Door) EndConversation(namespace, corpus, id string) {
	d.History.End(LimiterKey(namespace, corpus), id)
}

// LimiterKey is the rate-limit key of a corpus.
func LimiterKey(namespace, name string) string { return namespace + "/" + name }

// CorpusTimeout is the per-call timeout for a corpus.
func CorpusTimeout(corpus *v1alpha1.Corpus) time.Duration {
	if t := corpus.Spec.Driver.Timeout; t != nil && t.Duration > 0 {
		return t.Duration
	}
	return DefaultTimeout
}

// Corpus resolves a Corpus: allowlist, credential, driver, timeout, limit.
// A failure is a *Problem; its message names the field or Secret to fix.
// The caller releases the result (Release). Its configuration becomes the
// corpus's current one.
func (d *Door) Corpus(ctx context.Context, obj *v1alpha1.Corpus) (*Corpus, error) {
	spec := obj.Spec.Driver
	switch spec.Type {
	case v1alpha1.DriverHTTP:
		if spec.HTTP == nil {
			return nil, Stall(v1alpha1.ReasonDriverUnsupported, "spec.driver.http is required for type HTTP")
		}
		if _, err := d.Allow.Check("spec.driver.http.url", spec.HTTP.URL); err != nil {
			return nil, err
		}
		cred, err := Credential(ctx, d.Reader, obj.Namespace, spec.HTTP.CredentialSecretRef)
		if err != nil {
			return nil, err
		}
		r := Recipe{Driver: *spec.DeepCopy(), Credential: cred, RateLimit: obj.Spec.RateLimit, Surfaces: obj.Spec.Surfaces.DeepCopy()}
		if err := d.backendsRecipe(ctx, obj, &r); err != nil {
			return nil, err
		}
		return d.build(obj, r, true)
	case v1alpha1.DriverPostgres:
		r, err := d.postgresRecipe(ctx, obj)
		if err != nil {
			return nil, err
		}
		r.Surfaces = obj.Spec.Surfaces.DeepCopy()
		if err := d.backendsRecipe(ctx, obj, &r); err != nil {
			return nil, err
		}
		return d.build(obj, r, true)
	case v1alpha1.DriverREST:
		r, err := d.restRecipe(ctx, obj)
		if err != nil {
			return nil, err
		}
		if err := d.backendsRecipe(ctx, obj, &r); err != nil {
			return nil, err
		}
		return d.build(obj, r, true)
	default:
		return nil, Stall(v1alpha1.ReasonDriverUnsupported,
			"driver type %q is not available in this version of ragcanary; use HTTP, Postgres or REST", spec.Type)
	}
}

// backendsRecipe adds to r what the corpus keeps outside its driver: a
// permissions backend and a directory, each with its credential.
func (d *Door) backendsRecipe(ctx context.Context, obj *v1alpha1.Corpus, r *Recipe) error {
	if p := obj.Spec.Permissions; p != nil {
		key, err := d.permissionsKey(ctx, obj.Namespace, p)
		if err != nil {
			return err
		}
		r.PermissionsKey, r.Permissions = key, p.DeepCopy()
	}
	if dir := obj.Spec.Directory; dir != nil {
		return d.directoryRecipe(ctx, obj.Namespace, dir, r)
	}
	return nil
}

// Recipe rebuilds a corpus's driver from what a run kept.
type Recipe struct {
	// Driver is the corpus's driver spec when the recipe was taken.
	Driver v1alpha1.Driver `json:"driver"`
	// Credential is the source credential (for Postgres the writer's
	// connection string); secret.
	Credential []byte `json:"credential"`
	// ReadCredential is a Postgres corpus's reader connection string, when
	// it has its own; secret.
	ReadCredential []byte `json:"readCredential,omitempty"`
	// Permissions is the corpus's separate permissions backend, if any, and
	// PermissionsKey its credential (secret).
	Permissions    *v1alpha1.Permissions `json:"permissions,omitempty"`
	PermissionsKey []byte                `json:"permissionsKey,omitempty"`
	// OpenFGAStoreID is the store an OpenFGA store name resolved to when a
	// run kept the recipe (see PinnedRecipe): the run's grants and revokes
	// go there even if the name is pointed at another store later.
	OpenFGAStoreID string `json:"openfgaStoreID,omitempty"`
	// RateLimit is the corpus's own limit, so a corpus rebuilt from the
	// recipe never resets the shared bucket to the defaults.
	RateLimit v1alpha1.RateLimit `json:"rateLimit,omitempty"`
	// Surfaces are where the corpus's surfaces are probed when not through
	// the driver, so a run keeps probing where it began.
	Surfaces *v1alpha1.CorpusSurfaces `json:"surfaces,omitempty"`
	// Directory is the corpus's group authority, if any, with its bind
	// password and CA (secret): a run restores memberships where it
	// changed them.
	Directory         *v1alpha1.Directory `json:"directory,omitempty"`
	DirectoryPassword []byte              `json:"directoryPassword,omitempty"`
	DirectoryCA       []byte              `json:"directoryCA,omitempty"`
}

// FromRecipe rebuilds a corpus from a recipe. The allowlist is checked again,
// so narrowing it also stops cleanup calls to a target no longer allowed.
// The caller releases the result; the recipe never becomes the corpus's
// current configuration.
func (d *Door) FromRecipe(namespace, name string, r Recipe) (*Corpus, error) {
	obj := &v1alpha1.Corpus{}
	obj.Namespace, obj.Name = namespace, name
	obj.Spec.Driver = r.Driver
	obj.Spec.Permissions = r.Permissions
	obj.Spec.RateLimit = r.RateLimit
	obj.Spec.Surfaces = r.Surfaces
	switch {
	case r.Driver.Type == v1alpha1.DriverHTTP && r.Driver.HTTP != nil:
	case r.Driver.Type == v1alpha1.DriverPostgres && r.Driver.Postgres != nil:
	case r.Driver.Type == v1alpha1.DriverREST && r.Driver.REST != nil:
	default:
		return nil, Stall(v1alpha1.ReasonDriverUnsupported, "the kept driver configuration is not an HTTP, Postgres or REST driver")
	}
	return d.build(obj, r, false)
}

// build makes the corpus's driver and backend; live makes the recipe the
// corpus's current configuration. On failure nothing stays held.
func (d *Door) build(obj *v1alpha1.Corpus, r Recipe, live bool) (*Corpus, error) {
	h := &holds{}
	c, err := d.buildHeld(obj, r, live, h)
	if err != nil {
		h.release()
		return nil, err
	}
	return c, nil
}

func (d *Door) buildHeld(obj *v1alpha1.Corpus, r Recipe, live bool, h *holds) (*Corpus, error) {
	timeout := CorpusTimeout(obj)
	key := LimiterKey(obj.Namespace, obj.Name)
	limiters := d.Limiters
	if limiters == nil {
		limiters = NewLimiters(clock.RealClock{})
	}
	limit := CorpusLimit(obj, d.DefaultLimit)
	limiters.Set(key, limit)
	current := ""
	if live {
		current = key
	}
	var drv driver.Driver
	var checkDriver func(context.Context) error
	switch r.Driver.Type {
	case v1alpha1.DriverPostgres:
		pg, err := d.postgresDriver(current, r, timeout, h)
		if err != nil {
			return nil, err
		}
		drv, checkDriver = pg, postgresCheck(pg)
	case v1alpha1.DriverREST:
		var err error
		if drv, err = d.restDriver(r, timeout, limiters.Replies(key)); err != nil {
			return nil, err
		}
	default:
		u, err := d.Allow.Check("spec.driver.http.url", r.Driver.HTTP.URL)
		if err != nil {
			return nil, err
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return nil, Stall(v1alpha1.ReasonInvalidURL, "spec.driver.http.url must be an absolute http or https URL")
		}
		if drv, err = d.httpDriver(u.String(), string(r.Credential), timeout, limiters.Replies(key)); err != nil {
			return nil, err
		}
	}
	c := &Corpus{Object: obj, Driver: drv, Timeout: timeout, Key: key, Limit: limit,
		CheckDriver: checkDriver, limiters: limiters, recipe: r, holds: h, source: drv}
	if r.Permissions != nil {
		if err := d.attachPermissions(c, current, r); err != nil {
			return nil, err
		}
	}
	// Inside the surfaces, outside the permissions backend: memberships go
	// to the directory, grants to the backend.
	if r.Directory != nil {
		if err := d.attachDirectory(c, r); err != nil {
			return nil, err
		}
	}
	// Outermost: permission changes still go to the permissions backend.
	if r.Surfaces != nil {
		if err := d.attachSurfaces(c, r.Surfaces, limiters.Replies(key)); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// HTTPDriver builds an HTTP contract driver for an already allowed base URL.
// The per-call timeout lives in the driver and nowhere else. No driver-level
// retries: a retried probe would stretch the probe's window and widen every
// measured bound; lifecycle steps are retried by the controllers' backoff.
// Its replies draw on a reply budget of its own.
func (d *Door) HTTPDriver(baseURL, sourceToken string, timeout time.Duration) (driver.Driver, error) {
	return d.httpDriver(baseURL, sourceToken, timeout, NewReplyBudget(d.DefaultLimit.ReplyBytes))
}

// httpDriver builds an HTTP driver whose replies draw on replies, the
// corpus's budget when it is built for a corpus.
func (d *Door) httpDriver(baseURL, sourceToken string, timeout time.Duration, replies *ReplyBudget) (driver.Driver, error) {
	drv, err := httpdriver.New(httpdriver.Config{
		BaseURL: baseURL, SourceToken: sourceToken, Timeout: timeout,
		HTTPClient: NoRedirects(d.httpClient()), Retries: 0, ReplyBudget: replies,
	})
	if err != nil {
		return nil, Stall(v1alpha1.ReasonInvalidURL, "spec.driver.http.url: %v", err)
	}
	return drv, nil
}

func (d *Door) httpClient() *http.Client {
	if d.HTTPClient != nil {
		return withUserAgent(d.HTTPClient, d.UserAgent)
	}
	return withUserAgent(d.conns().http, d.UserAgent)
}

// CheckCapabilities refuses capability replies ragcanary cannot rely on, so
// a hostile or broken reply never reaches status as if it were fact.
func CheckCapabilities(c driver.Capabilities) error {
	if c.ContractVersion != driver.ContractVersion {
		return Stall(v1alpha1.ReasonContractMismatch, "target implements driver contract %q; this ragcanary speaks %q",
			truncate(c.ContractVersion, 32), driver.ContractVersion)
	}
	if len(c.RevocationMethods) > len(knownMethods) {
		return Stall(v1alpha1.ReasonContractMismatch, "target reported %d revocation methods; the contract defines %d",
			len(c.RevocationMethods), len(knownMethods))
	}
	seen := map[driver.RevocationMethod]bool{}
	for _, m := range c.RevocationMethods {
		if !knownMethods[m] {
			return Stall(v1alpha1.ReasonContractMismatch, "target reported revocation method %q, which the contract does not define", truncate(string(m), 32))
		}
		if seen[m] {
			return Stall(v1alpha1.ReasonContractMismatch, "target reported revocation method %q twice", m)
		}
		seen[m] = true
	}
	return nil
}

// knownMethods is the contract's vocabulary (v1alpha1.RevocationMethods).
var knownMethods = func() map[driver.RevocationMethod]bool {
	m := map[driver.RevocationMethod]bool{}
	for _, x := range v1alpha1.RevocationMethods {
		m[x] = true
	}
	return m
}()

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
