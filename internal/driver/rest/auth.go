package rest

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"time"

	"k8s.io/utils/clock"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/credential"
	"github.com/ragcanary/ragcanary/internal/driver"
)

// Auth is a REST source's resolved credential. Secret is secret: never
// log it.
type Auth struct {
	Type v1alpha1.RESTAuthType
	// Secret is the token, password, header value or client secret.
	Secret []byte
	// Scheme precedes a Bearer token; "Bearer" when empty.
	Scheme string
	// Username is Basic's user.
	Username string
	// Header carries the secret for type Header.
	Header string
	// TokenURL, ClientID and Scopes are OAuth2 client credentials'; the
	// caller has allowed TokenURL.
	TokenURL string
	ClientID string
	Scopes   []string
}

// authenticator sets the credential on a request, in its own header only.
type authenticator interface {
	// set puts the credential on req and returns every form of it that
	// must appear nowhere else (the secret, an encoded form, a token).
	set(ctx context.Context, req *http.Request) (secrets []string, err error)
	// headerName is the header the credential travels in ("" for none).
	headerName() string
}

// newAuthenticator builds the authenticator of a. client sends OAuth2
// token requests (the door's: no redirects, address policy, bounded
// replies); clk decides when a cached token expired.
func newAuthenticator(a *Auth, client *http.Client, clk clock.PassiveClock) (authenticator, error) {
	if a == nil || a.Type == "" {
		return noAuth{}, nil
	}
	secret := string(a.Secret)
	if secret == "" {
		return nil, errors.New("auth: the secret is empty")
	}
	if !validHeaderValue(secret) || strings.ContainsAny(secret, "\r\n") {
		return nil, errors.New("auth: the secret is not a valid header value")
	}
	switch a.Type {
	case v1alpha1.RESTAuthBearer:
		scheme := a.Scheme
		if scheme == "" {
			scheme = "Bearer"
		}
		if !validToken(scheme) {
			return nil, errors.New("auth.scheme: not a valid scheme")
		}
		return staticAuth{name: "Authorization", value: scheme + " " + secret, secrets: []string{secret}}, nil
	case v1alpha1.RESTAuthBasic:
		if a.Username == "" || strings.ContainsAny(a.Username, ":\r\n") {
			return nil, errors.New("auth.username: required, without ':' or line breaks")
		}
		enc := base64.StdEncoding.EncodeToString([]byte(a.Username + ":" + secret))
		return staticAuth{name: "Authorization", value: "Basic " + enc, secrets: []string{secret, enc}}, nil
	case v1alpha1.RESTAuthHeader:
		if !validToken(a.Header) || refused[http.CanonicalHeaderKey(a.Header)] && http.CanonicalHeaderKey(a.Header) != "Authorization" {
			return nil, errors.New("auth.header: not a header a credential may travel in")
		}
		return staticAuth{name: a.Header, value: secret, secrets: []string{secret}}, nil
	case v1alpha1.RESTAuthOAuth2ClientCredentials:
		if a.TokenURL == "" || a.ClientID == "" {
			return nil, errors.New("auth: tokenURL and clientID are required for OAuth2ClientCredentials")
		}
		src, err := credential.NewOAuth2(credential.OAuth2Config{Grant: credential.ClientCredentials,
			TokenURL: a.TokenURL, ClientID: a.ClientID, ClientSecret: secret, Scopes: a.Scopes,
			RefreshBefore: expiryDelta, HTTPClient: client, Clock: clk})
		if err != nil {
			return nil, err
		}
		return &oauthAuth{src: src, clientSecret: secret}, nil
	}
	return nil, errors.New("auth.type must be Bearer, Basic, Header or OAuth2ClientCredentials")
}

type noAuth struct{}

func (noAuth) set(context.Context, *http.Request) ([]string, error) { return nil, nil }
func (noAuth) headerName() string                                   { return "" }

type staticAuth struct {
	name, value string
	secrets     []string
}

func (a staticAuth) set(_ context.Context, req *http.Request) ([]string, error) {
	req.Header.Set(a.name, a.value)
	return a.secrets, nil
}

func (a staticAuth) headerName() string { return a.name }

// oauthAuth sends a client-credentials token as a bearer token, replaced
// before it expires (package credential). The token and the client secret
// never reach an error, a log or a status.
type oauthAuth struct {
	src          *credential.OAuth2
	clientSecret string
}

// expiryDelta renews a token this long before it expires (or at half its
// life, if sooner), so a request never carries one that expires on its way.
const expiryDelta = 10 * time.Second

func (a *oauthAuth) headerName() string { return "Authorization" }

func (a *oauthAuth) set(ctx context.Context, req *http.Request) ([]string, error) {
	tok, err := a.src.Token(ctx)
	if err != nil {
		return nil, tokenError(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok.Reveal())
	return []string{a.clientSecret, tok.Reveal()}, nil
}

// tokenError is a failed token request as a driver error: a refusal of the
// client's credentials is Unauthorized, anything else Transient.
func tokenError(err error) error {
	var e *credential.Error
	if errors.As(err, &e) && e.Kind == credential.Refused {
		return driver.NewError(driver.Unauthorized, "OAuth2Token", e.Status, "the token endpoint refused the client credentials", nil)
	}
	status := 0
	if e != nil {
		status = e.Status
	}
	return driver.NewError(driver.Transient, "OAuth2Token", status, "the token request failed", nil)
}

// leaks reports whether any secret appears in any part.
func leaks(secrets []string, parts ...string) bool {
	for _, s := range secrets {
		if len(s) < minLeakCheck {
			continue
		}
		for _, p := range parts {
			if strings.Contains(p, s) {
				return true
			}
		}
	}
	return false
}

// minLeakCheck is the shortest secret searched for outside its header
// (the surfaces' rule): a shorter one would match ordinary text by chance.
const minLeakCheck = 8
