package target

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/driver/rest"
)

// restRecipe checks a REST source's URLs against the allowlist and reads
// its credential: what rebuilds its driver without the Corpus or Secret.
func (d *Door) restRecipe(ctx context.Context, obj *v1alpha1.Corpus) (Recipe, error) {
	spec := obj.Spec.Driver.REST
	if spec == nil {
		return Recipe{}, Stall(v1alpha1.ReasonDriverUnsupported, "spec.driver.rest is required for type REST")
	}
	if err := d.checkRESTURLs(spec); err != nil {
		return Recipe{}, err
	}
	r := Recipe{Driver: *obj.Spec.Driver.DeepCopy(), RateLimit: obj.Spec.RateLimit, Surfaces: obj.Spec.Surfaces.DeepCopy()}
	if a := spec.Auth; a != nil {
		cred, err := Credential(ctx, d.Reader, obj.Namespace, a.SecretRef)
		if err != nil {
			return Recipe{}, err
		}
		r.Credential = cred
	}
	return r, nil
}

// checkRESTURLs: the base URL and the OAuth2 token URL pass the allowlist.
func (d *Door) checkRESTURLs(spec *v1alpha1.RESTDriver) error {
	if _, err := d.Allow.Check("spec.driver.rest.url", spec.URL); err != nil {
		return err
	}
	if a := spec.Auth; a != nil && a.Type == v1alpha1.RESTAuthOAuth2ClientCredentials {
		if _, err := d.Allow.Check("spec.driver.rest.auth.tokenURL", a.TokenURL); err != nil {
			return err
		}
	}
	return nil
}

// restDriver builds a REST source from a recipe, its URLs allowed again:
// requests and token requests go through the door's client (address
// policy, no redirects, user agent), bounded per call by timeout and in
// size by replies.
func (d *Door) restDriver(r Recipe, timeout time.Duration, replies *ReplyBudget) (driver.Driver, error) {
	spec := r.Driver.REST
	u, err := d.Allow.Check("spec.driver.rest.url", spec.URL)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, Stall(v1alpha1.ReasonInvalidURL, "spec.driver.rest.url must be an absolute http or https URL")
	}
	cfg := rest.Config{Spec: spec, BaseURL: u.String(), Timeout: timeout, ReplyBudget: replies,
		HTTPClient: NoRedirects(d.httpClient())}
	if a := spec.Auth; a != nil {
		cfg.Auth = &rest.Auth{Type: a.Type, Secret: r.Credential, Scheme: a.Scheme, Username: a.Username,
			Header: a.Header, ClientID: a.ClientID, Scopes: a.Scopes}
		if a.Type == v1alpha1.RESTAuthOAuth2ClientCredentials {
			t, err := d.Allow.Check("spec.driver.rest.auth.tokenURL", a.TokenURL)
			if err != nil {
				return nil, err
			}
			cfg.Auth.TokenURL = t.String()
		}
	}
	drv, err := rest.New(cfg)
	if err != nil {
		return nil, Stall(v1alpha1.ReasonInvalidRESTSource, "spec.driver.rest: %v", err)
	}
	return drv, nil
}

// restIdentity is the base URL as the allowlist normalises it, and a
// short hash of the static values and the operations, which decide
// where documents and grants are written.
func restIdentity(spec *v1alpha1.RESTDriver) (string, error) {
	u, err := normalize(spec.URL)
	if err != nil {
		return "", Stall(v1alpha1.ReasonInvalidURL, "spec.driver.rest.url: %v", err)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	base := u.String()
	raw, err := json.Marshal(struct {
		Values     map[string]v1alpha1.RESTValue `json:"values"`
		Operations v1alpha1.RESTOperations       `json:"operations"`
	}{spec.Values, spec.Operations})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(raw)
	return "rest " + base + "?requests=" + hex.EncodeToString(sum[:8]), nil
}
