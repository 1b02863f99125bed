package credential

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
	"k8s.io/utils/clock"

	"github.com/ragcanary/ragcanary/internal/driver"
)

// Grant is how an OAuth2 source obtains its tokens.
type Grant string

const (
	// ClientCredentials: the client's own ID and secret (RFC 6749 §4.4).
	ClientCredentials Grant = "ClientCredentials"
	// RefreshToken: a refresh token issued to the persona once, exchanged
	// for each new access token (RFC 6749 §6).
	RefreshToken Grant = "RefreshToken"
)

// OAuth2Config is an OAuth2 token source's settings. Its secrets come from
// the persona's labelled Secret.
type OAuth2Config struct {
	Grant        Grant
	TokenURL     string
	ClientID     string
	ClientSecret string
	// RefreshToken is the RefreshToken grant's starting token.
	RefreshToken string
	Scopes       []string
	// RefreshBefore: a token is replaced once less than this is left of
	// its life, or less than half its life if that is shorter, so a probe
	// never carries a token about to expire in flight.
	RefreshBefore time.Duration
	// HTTPClient sends the token requests. It must be the caller's
	// address-checked client that follows no redirects: a token endpoint
	// that redirects would carry the client secret elsewhere.
	HTTPClient *http.Client
	Clock      clock.PassiveClock
	// Timeout bounds one token request (default DefaultTimeout): the
	// endpoint is a tenant's, and the caller may hold no deadline.
	Timeout time.Duration
}

// DefaultTimeout bounds a token request when the config sets none.
const DefaultTimeout = 10 * time.Second

// OAuth2 is a persona's OAuth2 credential: it keeps the current access
// token and replaces it before it expires.
type OAuth2 struct {
	cfg OAuth2Config

	mu      sync.Mutex
	current *oauth2.Token
	// asked is when the current token was asked for and expiry when it
	// ends, reckoned from then on the source's clock: the server issued it
	// after it was asked, so it lives at least that long.
	asked, expiry time.Time
	// refresh is the refresh token in use: a server that rotates refresh
	// tokens hands out a new one with each access token.
	refresh string
	fetches int
}

// NewOAuth2 checks cfg and returns its source; no token is fetched yet.
func NewOAuth2(cfg OAuth2Config) (*OAuth2, error) {
	switch {
	case cfg.TokenURL == "":
		return nil, errors.New("oauth2: no token URL")
	case cfg.ClientID == "":
		return nil, errors.New("oauth2: no client ID")
	case cfg.Grant == RefreshToken && cfg.RefreshToken == "":
		return nil, errors.New("oauth2: the RefreshToken grant needs a refresh token")
	case cfg.Grant != RefreshToken && cfg.Grant != ClientCredentials:
		return nil, fmt.Errorf("oauth2: unknown grant %q", cfg.Grant)
	case cfg.HTTPClient == nil:
		return nil, errors.New("oauth2: no HTTP client")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	return &OAuth2{cfg: cfg, refresh: cfg.RefreshToken}, nil
}

// Token returns an access token with more than the refresh margin left,
// fetching a new one when the current one is due. When fetching fails
// while the current token is still valid, the current one is returned: a
// refresh tried early is no reason to fail a probe.
func (o *OAuth2) Token(ctx context.Context) (driver.Token, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.cfg.Clock.Now()
	if o.current != nil && !o.due(now) {
		return driver.Token(o.current.AccessToken), nil
	}
	t, err := o.fetch(ctx)
	if err != nil {
		if o.current != nil && (o.expiry.IsZero() || now.Before(o.expiry)) {
			return driver.Token(o.current.AccessToken), nil
		}
		return "", err
	}
	o.current, o.asked, o.expiry = t, now, time.Time{}
	if life := lifetime(t); life > 0 {
		o.expiry = now.Add(life)
	}
	if t.RefreshToken != "" {
		o.refresh = t.RefreshToken
	}
	return driver.Token(t.AccessToken), nil
}

// Fetches counts the token requests made, for tests and metrics.
func (o *OAuth2) Fetches() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.fetches
}

// lifetime is the token's expires_in. x/oauth2 keeps it only as an
// instant on the wall clock, taken as the reply arrived; whole seconds
// recover it.
func lifetime(t *oauth2.Token) time.Duration {
	if t.ExpiresIn > 0 {
		return time.Duration(t.ExpiresIn) * time.Second
	}
	if t.Expiry.IsZero() {
		return 0
	}
	return time.Until(t.Expiry).Round(time.Second)
}

// due reports whether the current token is within its refresh margin. A
// token the server gave no lifetime is kept until it is refused.
func (o *OAuth2) due(now time.Time) bool {
	if o.expiry.IsZero() {
		return false
	}
	margin := o.cfg.RefreshBefore
	if half := o.expiry.Sub(o.asked) / 2; half < margin {
		margin = half
	}
	return !now.Before(o.expiry.Add(-margin))
}

// fetch asks the token endpoint for a new token.
func (o *OAuth2) fetch(ctx context.Context) (*oauth2.Token, error) {
	o.fetches++
	ctx, cancel := context.WithTimeout(ctx, o.cfg.Timeout)
	defer cancel()
	ctx = context.WithValue(ctx, oauth2.HTTPClient, o.cfg.HTTPClient)
	var (
		t   *oauth2.Token
		err error
	)
	if o.cfg.Grant == ClientCredentials {
		cc := clientcredentials.Config{ClientID: o.cfg.ClientID, ClientSecret: o.cfg.ClientSecret,
			TokenURL: o.cfg.TokenURL, Scopes: o.cfg.Scopes, AuthStyle: oauth2.AuthStyleInHeader}
		t, err = cc.Token(ctx)
	} else {
		c := oauth2.Config{ClientID: o.cfg.ClientID, ClientSecret: o.cfg.ClientSecret, Scopes: o.cfg.Scopes,
			Endpoint: oauth2.Endpoint{TokenURL: o.cfg.TokenURL, AuthStyle: oauth2.AuthStyleInHeader}}
		t, err = c.TokenSource(ctx, &oauth2.Token{RefreshToken: o.refresh}).Token()
	}
	if err != nil {
		return nil, classify(err)
	}
	if t.AccessToken == "" || len(t.AccessToken) > MaxToken || !headerSafe(t.AccessToken) {
		return nil, &Error{Kind: Malformed, Detail: "the reply holds an empty, oversized or unprintable access token"}
	}
	return t, nil
}

// MaxToken bounds an access token the operator holds and sends.
const MaxToken = 8 << 10

// headerSafe: a token travels in a header, so it holds no control
// character that would end or split one.
func headerSafe(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// ErrorKind says what a failed token request means for the persona.
type ErrorKind string

const (
	// Refused: the endpoint answered that the client, its secret or the
	// refresh token is not valid; retrying will not help.
	Refused ErrorKind = "Refused"
	// Unavailable: the endpoint could not be reached or failed.
	Unavailable ErrorKind = "Unavailable"
	// Malformed: the endpoint's reply is not a token reply.
	Malformed ErrorKind = "Malformed"
)

// Error is a failed token request. It never holds the reply's body or its
// error_description, which a hostile or careless endpoint can fill with
// the secret it was sent.
type Error struct {
	Kind   ErrorKind
	Status int
	// Code is RFC 6749 §5.2's error code when it is one of the codes the
	// RFC defines.
	Code   string
	Detail string
	err    error
}

func (e *Error) Error() string {
	s := "oauth2 token request: " + string(e.Kind)
	if e.Status != 0 {
		s += fmt.Sprintf(" (HTTP %d", e.Status)
		if e.Code != "" {
			s += ", " + e.Code
		}
		s += ")"
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap gives a transport error (a timeout, a refused connection) to
// errors.Is, never a reply's body.
func (e *Error) Unwrap() error { return e.err }

// IsRefused reports whether err is a token endpoint's refusal: the client,
// its secret or its grant is not (or no longer) valid.
func IsRefused(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == Refused
}

// rfc6749Codes are the error codes a token endpoint may answer with.
var rfc6749Codes = map[string]bool{
	"invalid_request": true, "invalid_client": true, "invalid_grant": true,
	"unauthorized_client": true, "unsupported_grant_type": true, "invalid_scope": true,
}

// classify turns an x/oauth2 error into an Error that quotes nothing the
// endpoint wrote.
func classify(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		e := &Error{Kind: Unavailable}
		if re.Response != nil {
			e.Status = re.Response.StatusCode
		}
		if rfc6749Codes[re.ErrorCode] {
			e.Code = re.ErrorCode
		}
		// RFC 6749 section 5.2 answers a bad client or grant with 400 or 401.
		switch e.Status {
		case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden:
			e.Kind = Refused
		}
		return e
	}
	var nerr net.Error
	if errors.As(err, &nerr) {
		return &Error{Kind: Unavailable, Detail: transportDetail(nerr), err: nerr}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &Error{Kind: Unavailable, Detail: "cancelled", err: err}
	}
	return &Error{Kind: Malformed, Detail: "the reply is not a token reply"}
}

// transportDetail names a transport failure without the URL, which may
// carry a query the endpoint was given. The error itself stays reachable
// through Unwrap, so the caller can tell its own address policy's refusal.
func transportDetail(err net.Error) string {
	if err.Timeout() {
		return "timed out"
	}
	return "unreachable"
}
