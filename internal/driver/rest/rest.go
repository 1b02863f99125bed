// Package rest is the declarative REST source (spec.driver.type: REST):
// each driver operation is a short list of HTTP requests declared in the
// Corpus, and only declared operations exist. Templates see only named
// values (document ID, title, body, subject, group, principal, run name,
// static values, captured values) through the hardened template engine.
// Captured values are the target's text: bounded, validated, kept per
// document, escaped wherever they are used, and never able to move a
// request off the base URL's path.
//
// The driver plants only: Search and Answer are refused, the corpus
// declares spec.surfaces for them.
package rest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"k8s.io/utils/clock"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	httpdriver "github.com/ragcanary/ragcanary/internal/driver/http"
)

// Defaults applied when a Config field is zero.
const (
	DefaultTimeout       = 10 * time.Second
	DefaultMaxReplyBytes = 1 << 20
)

// Config configures a Driver.
type Config struct {
	// Spec is spec.driver.rest; required.
	Spec *v1alpha1.RESTDriver
	// BaseURL is Spec.URL as the caller allowed and normalised it.
	BaseURL string
	// Auth is the resolved credential; nil or an empty Type sends none.
	Auth *Auth
	// Timeout bounds each request, reading the reply included.
	Timeout time.Duration
	// MaxReplyBytes bounds a reply; ReplyBudget (nil: none) bounds the
	// bytes held at once by every call sharing it.
	MaxReplyBytes int64
	ReplyBudget   httpdriver.ReplyBudget
	// HTTPClient sends requests, OAuth2 token requests included; required.
	// Its redirect policy is replaced: the driver never follows one.
	HTTPClient *http.Client
	// Clock decides when a cached OAuth2 token expired; the real clock
	// when nil.
	Clock clock.PassiveClock
}

// Driver is the REST source. It implements driver.Driver and
// driver.Captures; New returns it wrapped with driver.GroupGranter only
// when grantGroup and revokeGroup are declared. It is safe for concurrent
// use.
type Driver struct {
	ops      map[string]*operation
	base     *url.URL
	auth     authenticator
	timeout  time.Duration
	maxReply int64
	budget   httpdriver.ReplyBudget
	client   *http.Client
	values   map[string]string
	captures captureStore
}

// groupDriver is a Driver whose spec declares group grants.
type groupDriver struct{ *Driver }

var (
	_ driver.Driver         = (*Driver)(nil)
	_ driver.Captures       = (*Driver)(nil)
	_ driver.DocumentFinder = (*Driver)(nil)
	_ driver.GroupGranter   = groupDriver{}
)

// New validates cfg and returns the driver: a *Driver, or one that is
// also a driver.GroupGranter when grantGroup and revokeGroup are
// declared. Every error names the field to fix.
func New(cfg Config) (driver.Driver, error) {
	d, err := newDriver(cfg)
	if err != nil {
		return nil, err
	}
	_, grant := d.ops[opGrantGroup]
	_, revoke := d.ops[opRevokeGroup]
	if grant != revoke {
		return nil, errors.New("rest source: declare grantGroup and revokeGroup together, or neither")
	}
	if grant {
		return groupDriver{d}, nil
	}
	return d, nil
}

// Unwrap returns the *Driver behind what New returned, or nil.
func Unwrap(d driver.Driver) *Driver {
	switch d := d.(type) {
	case *Driver:
		return d
	case groupDriver:
		return d.Driver
	}
	return nil
}

func newDriver(cfg Config) (*Driver, error) {
	if cfg.Spec == nil || cfg.HTTPClient == nil {
		return nil, errors.New("rest source: the spec and the door's client are required")
	}
	base, err := url.Parse(cfg.BaseURL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" || base.User != nil ||
		base.RawQuery != "" || base.Fragment != "" {
		return nil, errors.New("rest source: url must be an absolute http or https URL without credentials, query or fragment")
	}
	for name := range cfg.Spec.Values {
		if !validName(name) {
			return nil, fmt.Errorf("rest source: values[%s]: a name is a letter then letters, digits or _ (at most 64)", label(name))
		}
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	client := noRedirects(cfg.HTTPClient)
	maxReply := orDefault(cfg.MaxReplyBytes, DefaultMaxReplyBytes)
	tokenClient := *client
	tokenClient.Transport = boundedTransport{rt: transportOf(client), limit: maxReply, budget: cfg.ReplyBudget}
	tokenClient.Timeout = orDefault(cfg.Timeout, DefaultTimeout)
	auth, err := newAuthenticator(cfg.Auth, &tokenClient, clk)
	if err != nil {
		return nil, fmt.Errorf("rest source: %v", err)
	}
	ops, err := compile(cfg.Spec, auth.headerName())
	if err != nil {
		return nil, fmt.Errorf("rest source: %v", err)
	}
	return &Driver{ops: ops, base: base, auth: auth, timeout: orDefault(cfg.Timeout, DefaultTimeout),
		maxReply: maxReply, budget: cfg.ReplyBudget, client: client, values: staticValues(cfg.Spec.Values)}, nil
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// noRedirects copies c so that it never follows a redirect: the
// credential would travel to a URL nobody allowed.
func noRedirects(c *http.Client) *http.Client {
	out := *c
	out.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &out
}

func transportOf(c *http.Client) http.RoundTripper {
	if c.Transport != nil {
		return c.Transport
	}
	return http.DefaultTransport
}

// boundedTransport bounds token replies like every other reply.
type boundedTransport struct {
	rt     http.RoundTripper
	limit  int64
	budget httpdriver.ReplyBudget
}

func (b boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if err := httpdriver.BoundBody(resp, b.limit, b.budget); err != nil {
		return nil, err
	}
	return resp, nil
}

// runKey carries the run's name to the templates ({{.Run}}).
type runKey struct{}

// WithRun returns ctx carrying the run's name for {{.Run}}.
func WithRun(ctx context.Context, run string) context.Context {
	return context.WithValue(ctx, runKey{}, run)
}

func runOf(ctx context.Context) string {
	s, _ := ctx.Value(runKey{}).(string)
	return s
}

// do runs the declared operation name with data, for document doc ("" for
// group memberships, whose captures stay in the call).
func (d *Driver) do(ctx context.Context, name, doc string, data named) (map[string]string, error) {
	o := d.ops[name]
	if o == nil {
		return nil, notDeclared(name)
	}
	data.Run, data.Values = runOf(ctx), d.values
	if doc != "" {
		data.Captured = d.captures.get(doc)
	}
	return d.run(ctx, &call{op: o, data: data})
}

// keep adds a call's captures to the document's.
func (d *Driver) keep(op, doc string, captured map[string]string) error {
	if err := d.captures.merge(doc, captured); err != nil {
		return fmt.Errorf("rest source: %s: %w", op, err)
	}
	return nil
}

// createdMark is held among a document's captures once createDocument
// (or lookupDocument) succeeded, so a later CreateDocument of the same ID
// (UpdateContent replaces a document that way) runs updateContent, also
// in a driver rebuilt from persisted captures. Declared names start with
// a letter, so none can be it.
const createdMark = "_created"

// CreateDocument runs createDocument and keeps what it captured; for a
// document this run already created, it runs updateContent when declared.
func (d *Driver) CreateDocument(ctx context.Context, doc driver.Document) error {
	name, op := opCreate, "CreateDocument"
	if d.ops[opUpdate] != nil && d.captures.get(doc.ID)[createdMark] != "" {
		name, op = opUpdate, "UpdateContent"
	}
	got, err := d.do(ctx, name, doc.ID, named{DocumentID: doc.ID, Title: doc.Title, Body: doc.Body})
	if err != nil {
		return err
	}
	got[createdMark] = "true"
	return d.keep(op, doc.ID, got)
}

// DeleteDocument runs deleteDocument; on success the document's captures
// are forgotten.
func (d *Driver) DeleteDocument(ctx context.Context, id string) error {
	if _, err := d.do(ctx, opDelete, id, named{DocumentID: id}); err != nil {
		return err
	}
	d.captures.forget(id)
	return nil
}

// Grant runs grant for principal.
func (d *Driver) Grant(ctx context.Context, documentID, principal string) error {
	return d.perm(ctx, opGrant, documentID, principal, "")
}

// Revoke runs revoke for principal.
func (d *Driver) Revoke(ctx context.Context, documentID, principal string) error {
	return d.perm(ctx, opRevoke, documentID, principal, "")
}

func (d *Driver) perm(ctx context.Context, name, doc, principal, group string) error {
	got, err := d.do(ctx, name, doc, named{DocumentID: doc, Principal: principal, Subject: principal, Group: group})
	if err != nil {
		return err
	}
	return d.keep(driverOps[name], doc, got)
}

// AddMember runs addToGroup.
func (d *Driver) AddMember(ctx context.Context, group, principal string) error {
	_, err := d.do(ctx, opAddToGroup, "", named{Group: group, Subject: principal, Principal: principal})
	return err
}

// RemoveMember runs removeFromGroup.
func (d *Driver) RemoveMember(ctx context.Context, group, principal string) error {
	_, err := d.do(ctx, opRemoveFromGroup, "", named{Group: group, Subject: principal, Principal: principal})
	return err
}

// GrantGroup runs grantGroup; {{.Group}} and {{.Principal}} are the group.
func (g groupDriver) GrantGroup(ctx context.Context, documentID, group string) error {
	return g.perm(ctx, opGrantGroup, documentID, group, group)
}

// RevokeGroup runs revokeGroup.
func (g groupDriver) RevokeGroup(ctx context.Context, documentID, group string) error {
	return g.perm(ctx, opRevokeGroup, documentID, group, group)
}

// Lookup runs lookupDocument to find a created document again by its
// run-derived ID and keeps what it captures. A 404 reply is not found;
// any other failure is an error, never "not found".
func (d *Driver) Lookup(ctx context.Context, documentID string) (bool, error) {
	got, err := d.do(ctx, opLookup, documentID, named{DocumentID: documentID})
	if err != nil {
		var de *driver.Error
		if errors.As(err, &de) && de.Kind == driver.Permanent && de.StatusCode == http.StatusNotFound {
			return false, nil
		}
		return false, err
	}
	got[createdMark] = "true"
	return true, d.keep("LookupDocument", documentID, got)
}

// Captured returns a copy of the values held for the document.
func (d *Driver) Captured(documentID string) map[string]string { return d.captures.get(documentID) }

// Restore replaces the values held for the document (from a run's
// status); invalid ones are dropped, so a request needing one fails
// naming it.
func (d *Driver) Restore(documentID string, values map[string]string) {
	d.captures.restore(documentID, values)
}

// errPlantsOnly: the REST source has no search or answer surface.
func errPlantsOnly(op string) error {
	return driver.NewError(driver.Permanent, op, 0, "the REST source plants only: declare spec.surfaces.search or .chat", nil)
}

// Search is refused: the corpus's spec.surfaces.search serves it.
func (d *Driver) Search(context.Context, driver.Token, string, int) ([]driver.Hit, error) {
	return nil, errPlantsOnly("Search")
}

// Answer is refused: the corpus's spec.surfaces.chat serves it.
func (d *Driver) Answer(context.Context, driver.Token, string) (driver.Answer, error) {
	return driver.Answer{}, errPlantsOnly("Answer")
}

// Capabilities follow from the declared operations.
func (d *Driver) Capabilities(context.Context) (driver.Capabilities, error) {
	return driver.Capabilities{ContractVersion: driver.ContractVersion, RevocationMethods: d.methods()}, nil
}

func (d *Driver) methods() []driver.RevocationMethod {
	has := func(names ...string) bool {
		for _, n := range names {
			if d.ops[n] == nil {
				return false
			}
		}
		return true
	}
	var out []driver.RevocationMethod
	if has(opGrant, opRevoke) {
		out = append(out, v1alpha1.RevokeRemoveGrant)
	}
	if has(opAddToGroup, opRemoveFromGroup) && (has(opGrantGroup) || has(opGrant)) {
		out = append(out, v1alpha1.RevokeRemoveFromGroup)
	}
	if has(opGrant, opDelete) {
		out = append(out, v1alpha1.RevokeDeleteDocument)
	}
	if has(opUpdate) {
		out = append(out, v1alpha1.RevokeUpdateContent)
	}
	return out
}

// transportError classifies a failure before a status was read, or while
// reading the reply; the cause's text (it may hold the URL) is never
// printed.
func transportError(op string, index int, err error) error {
	var netErr net.Error
	reason := "connection failed"
	switch {
	case errors.Is(err, httpdriver.ErrTooLarge):
		reason = "reply too large"
	case errors.Is(err, httpdriver.ErrBudgetExhausted):
		reason = "reply budget exhausted"
	case errors.Is(err, context.Canceled):
		reason = "canceled"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		reason = "timeout"
	}
	var de *driver.Error
	if errors.As(err, &de) {
		return de
	}
	return driver.NewError(driver.Transient, op, 0, fmt.Sprintf("request %d: %s", index, reason), err)
}
