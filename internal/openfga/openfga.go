// Package openfga keeps document permissions in an OpenFGA authorization
// server: the operator writes and deletes tuples for grants and group
// memberships (Permissions), and the reference target asks it at query time
// which documents a principal may read (Authorizer). Both speak the same
// mapping of ragcanary's operations onto an authorization model.
//
// Every call goes through the official SDK with its retries off and one
// deadline per call: a retry inside the SDK would stretch the window a
// canary measures, so a failure is reported at once and the caller decides.
package openfga

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	fga "github.com/openfga/go-sdk"
	"github.com/openfga/go-sdk/telemetry"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	httpdriver "github.com/ragcanary/ragcanary/internal/driver/http"
)

// Mapping names the model's types and relations ragcanary uses: a grant is
// documentType:<doc>#grantRelation@subjectType:<principal> (or
// @groupType:<group>#memberRelation for a group), a membership is
// groupType:<group>#memberRelation@subjectType:<principal>.
type Mapping struct {
	DocumentType   string
	GrantRelation  string
	GroupType      string
	MemberRelation string
	SubjectType    string
}

// WithDefaults fills empty names from the reference model's: document,
// viewer, group, member, user.
func (m Mapping) WithDefaults() Mapping {
	or := func(v, def string) string {
		if v == "" {
			return def
		}
		return v
	}
	return Mapping{DocumentType: or(m.DocumentType, "document"), GrantRelation: or(m.GrantRelation, "viewer"),
		GroupType: or(m.GroupType, "group"), MemberRelation: or(m.MemberRelation, "member"), SubjectType: or(m.SubjectType, "user")}
}

// DefaultMapping is the mapping of the reference model.
var DefaultMapping = Mapping{}.WithDefaults()

// Config says which OpenFGA server, store and model to use.
type Config struct {
	// APIURL is the server's HTTP API root, http(s)://host:port[/path];
	// it must not carry credentials, a query or a fragment.
	APIURL string
	// StoreID names the store; set it or StoreName, not both.
	StoreID string
	// StoreName is resolved once, by ResolveStore, to the one store of
	// that name.
	StoreName string
	// AuthorizationModelID pins the model; empty means the store's
	// latest model, looked up by the server on every call.
	AuthorizationModelID string
	// Token is the preshared key or API token, sent as a bearer
	// credential and only to APIURL's scheme and host.
	Token string
	// HTTPClient is the caller's guarded client (address allowlist, no
	// redirects); nil means a default one without environment proxies.
	// Either way the client never follows a redirect.
	HTTPClient *http.Client
	// Timeout bounds every call; DefaultTimeout when zero.
	Timeout time.Duration
	// Mapping is what CheckModel and EnsureModel check and write; zero
	// names mean DefaultMapping's.
	Mapping Mapping
	// ReplyBudget, when set, is the corpus's reply budget: every reply
	// body holds its bytes from it while it is read, and a store lookup
	// holds all its pages' bytes until it ends.
	ReplyBudget httpdriver.ReplyBudget
}

// DefaultTimeout bounds a call when Config.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// maxReplyBytes bounds a reply body: the SDK reads whole bodies into
// memory, and no reply ragcanary asks for comes near this.
const maxReplyBytes = 8 << 20

// Client is a connection to one store of one OpenFGA server. It is safe for
// concurrent use.
type Client struct {
	api       *fga.APIClient
	storeID   string
	storeName string
	modelID   string
	timeout   time.Duration
	mapping   Mapping
	replies   httpdriver.ReplyBudget

	mu       sync.Mutex
	resolved string
	// checked is the model the last successful CheckModel read.
	checked string
}

// Resolved returns the store ID and the model ID the last checks found;
// empty before they succeeded.
func (c *Client) Resolved() (store, model string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.resolved, c.checked
}

// ulid is the shape of OpenFGA store and model IDs.
var ulid = regexp.MustCompile(`^[0-7][0-9A-HJKMNP-TV-Z]{25}$`)

// Dial validates cfg and builds a client; it does no network I/O. Its
// errors never echo the URL, which may be a secret of its own.
func Dial(cfg Config) (*Client, error) {
	api, err := apiURL(cfg.APIURL)
	if err != nil {
		return nil, err
	}
	switch {
	case cfg.StoreID == "" && cfg.StoreName == "":
		return nil, errors.New("openfga: set a store ID or a store name")
	case cfg.StoreID != "" && cfg.StoreName != "":
		return nil, errors.New("openfga: set a store ID or a store name, not both")
	case cfg.StoreID != "" && !ulid.MatchString(cfg.StoreID):
		return nil, errors.New("openfga: the store ID is not an OpenFGA ID (a ULID)")
	case cfg.AuthorizationModelID != "" && !ulid.MatchString(cfg.AuthorizationModelID):
		return nil, errors.New("openfga: the authorization model ID is not an OpenFGA ID (a ULID)")
	case cfg.Timeout < 0:
		return nil, errors.New("openfga: the timeout must not be negative")
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	conf, err := fga.NewConfiguration(fga.Configuration{
		ApiUrl:     api.String(),
		HTTPClient: guarded(cfg.HTTPClient, api, cfg.Token, timeout, cfg.ReplyBudget),
		// v0.6.3 takes the retry count from MinWaitInMs (and the wait
		// from it too), so both must be zero for a single attempt.
		RetryParams: &fga.RetryParams{MaxRetry: 0, MinWaitInMs: 0},
		Telemetry:   quietTelemetry,
		UserAgent:   "ragcanary",
	})
	if err != nil {
		return nil, errors.New("openfga: the API URL is not usable")
	}
	return &Client{api: fga.NewAPIClient(conf), storeID: cfg.StoreID, storeName: cfg.StoreName,
		modelID: cfg.AuthorizationModelID, timeout: timeout, mapping: cfg.Mapping.WithDefaults(), replies: cfg.ReplyBudget}, nil
}

// apiURL parses and normalises the API root.
func apiURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" ||
		u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, errors.New("openfga: the API URL must be an absolute http or https URL without credentials, query or fragment")
	}
	u.Path, u.RawPath = strings.TrimRight(u.Path, "/"), ""
	return u, nil
}

// guarded is the client every SDK request goes through: a copy of the
// caller's (or a default without environment proxies, which would carry
// the token through a host nobody allowed) that never follows redirects,
// bounds reply bodies (each, and a store lookup's over its pages) drawing
// on budget, and adds the bearer token only to requests for the API's own
// scheme and host.
func guarded(hc *http.Client, api *url.URL, token string, timeout time.Duration, budget httpdriver.ReplyBudget) *http.Client {
	var out http.Client
	if hc != nil {
		out = *hc
	} else {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.Proxy = nil
		out = http.Client{Transport: t, Timeout: timeout}
	}
	base := out.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	out.Transport = &apiTransport{base: base, scheme: api.Scheme, host: api.Host, token: token, budget: budget}
	out.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &out
}

type apiTransport struct {
	base         http.RoundTripper
	scheme, host string
	token        string
	budget       httpdriver.ReplyBudget
}

func (t *apiTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.token != "" && req.URL.Scheme == t.scheme && strings.EqualFold(req.URL.Host, t.host) {
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+t.token)
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	// A store lookup's pages count against its own meter, which holds
	// their bytes from the budget for the whole lookup.
	if m, ok := req.Context().Value(listMeterKey{}).(*listMeter); ok {
		if err := httpdriver.BoundBody(resp, maxReplyBytes, nil); err != nil {
			return nil, err
		}
		if err := m.metered(resp); err != nil {
			return nil, err
		}
		return resp, nil
	}
	if err := httpdriver.BoundBody(resp, maxReplyBytes, t.budget); err != nil {
		return nil, err
	}
	return resp, nil
}

// quietTelemetry is every client's SDK telemetry configuration: one SDK
// instance whose meter is a no-op. The SDK otherwise records request
// metrics, labelled with the URL and the principal, on the global meter
// provider, which would export them as soon as anything in the process
// installs one. Sharing one configuration also keeps the SDK's instance
// map, keyed by configuration, from growing with every Dial.
var quietTelemetry = newQuietTelemetry()

func newQuietTelemetry() *telemetry.Configuration {
	cfg := &telemetry.Configuration{Metrics: &telemetry.MetricsConfiguration{}}
	instance := telemetry.Get(telemetry.TelemetryFactoryParameters{Configuration: cfg})
	instance.Metrics = &telemetry.Metrics{
		Meter:         noop.NewMeterProvider().Meter("openfga-sdk"),
		Counters:      map[string]metric.Int64Counter{},
		Histograms:    map[string]metric.Float64Histogram{},
		Configuration: cfg.Metrics,
	}
	return cfg
}

// bounded gives one call its deadline.
func (c *Client) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.timeout)
}

// modelOption is the pinned model for a request body, nil for the latest.
func (c *Client) modelOption() *string {
	if c.modelID == "" {
		return nil
	}
	return &c.modelID
}

// maxObjectBytes is OpenFGA's bound on a tuple's object, in bytes. It is
// applied to users (bound at 512) too: a group is an object in one tuple
// and a user in another, and an ID that fits one place but not the other
// would fail half-way through a scenario.
const maxObjectBytes = 256

// validID reports whether OpenFGA can hold id as an object ID as it is: no
// '#' (a userset's separator), ':' (the type's), '*' (the wildcard: a grant
// to user:* is a grant to everyone), whitespace or control characters, and
// valid UTF-8 (JSON would rewrite invalid bytes). IDs that do not fit are
// refused rather than rewritten, so what is in OpenFGA is exactly what the
// user's application reads.
func validID(id string) bool {
	if id == "" || !utf8.ValidString(id) {
		return false
	}
	for _, r := range id {
		if r == '#' || r == ':' || r == '*' || unicode.IsSpace(r) || unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// object is typ:id when OpenFGA can hold it as a tuple's object.
func object(typ, id string) (string, bool) {
	s := typ + ":" + id
	return s, validID(id) && len(s) <= maxObjectBytes
}

// user is typ:id, or the userset typ:id#relation, when OpenFGA can hold
// it as a tuple's user (and typ:id as an object).
func user(typ, id, relation string) (string, bool) {
	s, ok := object(typ, id)
	if relation != "" {
		s += "#" + relation
	}
	return s, ok
}
