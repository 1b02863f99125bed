package target

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/credential"
	"github.com/ragcanary/ragcanary/internal/driver"
)

// Persona is a resolved Persona and its credential: Token is the one to
// send now, Source gives the one to send later (a run's probe loop
// outlives an OAuth2 token). Revoker revokes and restores its OAuth2
// client, nil when it declares no spec.oauth2.revocation.
type Persona struct {
	Object  *v1alpha1.Persona
	Token   driver.Token
	Source  credential.Source
	Revoker *CredentialRevoker
}

// Persona resolves a Persona's credential: its key, or its OAuth2 source's
// current token (fetched now, so a refused client is known before a run
// relies on it).
func (d *Door) Persona(ctx context.Context, obj *v1alpha1.Persona) (Persona, error) {
	switch spec := &obj.Spec; {
	case spec.OAuth2 != nil:
		p, err := d.RevokedPersona(ctx, obj)
		if err != nil {
			return Persona{}, err
		}
		if p.Token, err = p.Source.Token(ctx); err != nil {
			return Persona{}, Named("Persona", obj.Name, tokenProblem(err))
		}
		return p, nil
	case spec.CredentialSecretRef != nil:
		cred, err := Credential(ctx, d.Reader, obj.Namespace, *spec.CredentialSecretRef)
		if err != nil {
			return Persona{}, Named("Persona", obj.Name, err)
		}
		return Persona{Object: obj, Token: driver.Token(cred), Source: credential.Static(cred)}, nil
	}
	return Persona{}, Named("Persona", obj.Name, Stall(v1alpha1.ReasonKeyNotFound, "set spec.credentialSecretRef or spec.oauth2"))
}

// RevokedPersona resolves an OAuth2 persona whose client a run has
// revoked: its source and revoker, without asking for a token now. From
// the revocation on, a refused token is what the run measures, not a
// reason to stop resolving the persona.
func (d *Door) RevokedPersona(ctx context.Context, obj *v1alpha1.Persona) (Persona, error) {
	if obj.Spec.OAuth2 == nil {
		return d.Persona(ctx, obj)
	}
	src, err := d.personaOAuth2(ctx, obj)
	if err != nil {
		return Persona{}, Named("Persona", obj.Name, err)
	}
	rev, err := d.CredentialRevoker(ctx, obj)
	if err != nil {
		return Persona{}, err
	}
	return Persona{Object: obj, Source: src, Revoker: rev}, nil
}

// defaultRefreshBefore is spec.oauth2.refreshBefore's default.
const defaultRefreshBefore = 30 * time.Second

// personaOAuth2 returns the persona's OAuth2 source, kept across calls so
// its token is reused until due. A changed spec or Secret makes a new one.
func (d *Door) personaOAuth2(ctx context.Context, obj *v1alpha1.Persona) (*credential.OAuth2, error) {
	o := obj.Spec.OAuth2
	if _, err := d.Allow.Check("spec.oauth2.tokenURL", o.TokenURL); err != nil {
		return nil, err
	}
	values := map[string][]byte{}
	for _, r := range obj.Spec.SecretRefs() {
		v, err := Credential(ctx, d.Reader, obj.Namespace, r.Ref)
		if err != nil {
			return nil, err
		}
		values[r.Ref.Key] = v
	}
	refreshBefore := defaultRefreshBefore
	if o.RefreshBefore != nil {
		refreshBefore = o.RefreshBefore.Duration
	}
	id := idOf(values[v1alpha1.OAuth2ClientIDKey], values[v1alpha1.OAuth2ClientSecretKey], values[v1alpha1.OAuth2RefreshTokenKey],
		[]byte(string(o.Grant)), []byte(o.TokenURL), []byte(strings.Join(o.Scopes, " ")), []byte(refreshBefore.String()))
	return d.conns().tokens.get(obj.Namespace+"/"+obj.Name, id, func() (*credential.OAuth2, error) {
		return credential.NewOAuth2(credential.OAuth2Config{
			Grant: credential.Grant(o.Grant), TokenURL: o.TokenURL, Scopes: o.Scopes, RefreshBefore: refreshBefore,
			ClientID: string(values[v1alpha1.OAuth2ClientIDKey]), ClientSecret: string(values[v1alpha1.OAuth2ClientSecretKey]),
			RefreshToken: string(values[v1alpha1.OAuth2RefreshTokenKey]), HTTPClient: d.httpClient(),
		})
	})
}

// ForgetPersona drops what the door keeps for a deleted persona.
func (d *Door) ForgetPersona(namespace, name string) { d.conns().tokens.forget(namespace + "/" + name) }

// tokenProblem is a failed token request as a condition: a refusal is the
// user's to fix, anything else may pass.
func tokenProblem(err error) error {
	var e *credential.Error
	switch {
	case errors.Is(err, ErrAddressDenied):
		return Stall(v1alpha1.ReasonURLNotAllowed, "spec.oauth2.tokenURL: %v", ErrAddressDenied)
	case errors.As(err, &e) && e.Kind == credential.Refused:
		return &Problem{Intent: Stalled, Reason: v1alpha1.ReasonCredentialRejected, Message: cleanMessage(
			"the token endpoint refused the persona's OAuth2 credentials: " + e.Error()), Err: err}
	}
	return &Problem{Intent: Transient, Reason: v1alpha1.ReasonUnreachable, Message: cleanMessage(err.Error()), Err: err}
}

// tokenSources are the personas' OAuth2 sources, one per persona, replaced
// when its configuration changes.
type tokenSources struct {
	mu sync.Mutex
	m  map[string]tokenSource
}

type tokenSource struct {
	id  configID
	src *credential.OAuth2
}

func (t *tokenSources) get(key string, id configID, build func() (*credential.OAuth2, error)) (*credential.OAuth2, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.m[key]; ok && s.id == id {
		return s.src, nil
	}
	src, err := build()
	if err != nil {
		return nil, Stall(v1alpha1.ReasonKeyNotFound, "spec.oauth2: %v", err)
	}
	if t.m == nil {
		t.m = map[string]tokenSource{}
	}
	t.m[key] = tokenSource{id: id, src: src}
	return src, nil
}

func (t *tokenSources) forget(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, key)
}

// AllowsToken reports whether the persona's OAuth2 token may be sent to
// raw: only to the token endpoint's own origin or a listed audience.
func AllowsToken(o *v1alpha1.PersonaOAuth2, raw string) bool {
	if o == nil {
		return true
	}
	to := origin(raw)
	if to == "" {
		return false
	}
	if to == origin(o.TokenURL) {
		return true
	}
	for _, a := range o.Audiences {
		if origin(a) == to {
			return true
		}
	}
	return false
}

// origin is scheme://host[:port], lower-cased and without the scheme's
// default port, "" for a URL that does not parse.
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	scheme := strings.ToLower(u.Scheme)
	if port == "" || scheme == "http" && port == "80" || scheme == "https" && port == "443" {
		return scheme + "://" + host
	}
	return scheme + "://" + host + ":" + port
}

// CheckTokenAudience refuses a run whose OAuth2 persona would send its
// token somewhere it may not go, before any probe does: every surface
// probed must lie on the token endpoint's origin or a listed audience.
// The conversation surface is refused too: a conversation belongs to the
// credential that began it, and an OAuth2 token is replaced mid-run.
func CheckTokenAudience(corpus *v1alpha1.CorpusSpec, p *v1alpha1.Persona, surfaces []v1alpha1.Surface) error {
	o := p.Spec.OAuth2
	if o == nil {
		return nil
	}
	for _, s := range surfaces {
		if s == v1alpha1.SurfaceConversation {
			return Stall(v1alpha1.ReasonInvalidSurface, "Persona %q: the Conversation surface needs a credential that stays the same for the run; "+
				"an OAuth2 token is replaced as it expires", p.Name)
		}
		raw := corpus.SurfaceURL(s)
		if raw != "" && !AllowsToken(o, raw) {
			return Stall(v1alpha1.ReasonURLNotAllowed, "Persona %q: its OAuth2 token may not be sent to %s (surface %s): "+
				"only to the token endpoint's origin %s or an origin in spec.oauth2.audiences", p.Name, origin(raw), s, origin(o.TokenURL))
		}
	}
	return nil
}
