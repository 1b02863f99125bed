// Package corpusdriver turns a Corpus into a driver.Driver: it resolves the
// corpus credential, enforces the operator's target URL allowlist and picks
// the driver implementation. Controllers depend on the Factory interface so
// tests can point them at a reference target.
package corpusdriver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	httpdriver "github.com/ragcanary/ragcanary/internal/driver/http"
	"github.com/ragcanary/ragcanary/internal/secretref"
)

// Factory builds the driver for a corpus.
type Factory interface {
	// ForCorpus returns a driver for the corpus. A *secretref.Problem or a
	// *ConfigError means the user must fix something; other errors are transient.
	ForCorpus(ctx context.Context, corpus *v1alpha1.Corpus) (driver.Driver, error)
}

// ConfigError is a corpus configuration the operator refuses, such as a URL
// outside the allowlist or an unsupported driver type.
type ConfigError struct {
	Reason  string
	Message string
}

func (e *ConfigError) Error() string { return e.Message }

// Reasons for ConfigError.
const (
	ReasonURLNotAllowed     = "URLNotAllowed"
	ReasonDriverUnsupported = "DriverUnsupported"
)

// sharedHTTPClient keeps connections to each target alive across the many
// concurrent probes and suite executions. http.DefaultClient keeps only two
// idle connections per host, so parallel calls would open and close
// connections all the time and the handshakes would show up as probe latency.
var sharedHTTPClient = &http.Client{Transport: newTransport()}

func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 64
	return t
}

// DefaultTimeout is used when a corpus has no driver timeout set.
const DefaultTimeout = 10 * time.Second

// Builder is the production Factory.
type Builder struct {
	// Reader reads credential Secrets, uncached.
	Reader client.Reader
	// AllowedURLPrefixes limits which targets the operator calls. Empty
	// allows any http(s) URL.
	AllowedURLPrefixes []string
}

// ForCorpus implements Factory.
func (b *Builder) ForCorpus(ctx context.Context, corpus *v1alpha1.Corpus) (driver.Driver, error) {
	spec := corpus.Spec.Driver
	switch spec.Type {
	case v1alpha1.DriverHTTP:
		if spec.HTTP == nil {
			return nil, &ConfigError{Reason: ReasonDriverUnsupported, Message: "spec.driver.http is required for type HTTP"}
		}
		if err := b.checkAllowed(spec.HTTP.URL); err != nil {
			return nil, err
		}
		token, err := secretref.Resolve(ctx, b.Reader, corpus.Namespace, spec.HTTP.CredentialSecretRef)
		if err != nil {
			return nil, err
		}
		return httpdriver.New(httpdriver.Config{
			BaseURL:     spec.HTTP.URL,
			SourceToken: string(token),
			Timeout:     Timeout(corpus),
			HTTPClient:  sharedHTTPClient,
			// No driver-level retries: a retried probe would stretch the
			// probe's [start, end] window and widen every measured bound.
			// Lifecycle steps are retried by the controllers' own backoff.
			Retries: 0,
		})
	default:
		return nil, &ConfigError{Reason: ReasonDriverUnsupported,
			Message: fmt.Sprintf("driver type %q is not available in this version of ragcanary; use HTTP", spec.Type)}
	}
}

// Timeout is the per-call timeout for a corpus.
func Timeout(corpus *v1alpha1.Corpus) time.Duration {
	if t := corpus.Spec.Driver.Timeout; t != nil && t.Duration > 0 {
		return t.Duration
	}
	return DefaultTimeout
}

// checkAllowed refuses URLs outside the allowlist. Prefixes are compared on
// the parsed scheme://host[:port]/path so "http://a.example" does not allow
// "http://a.example.evil".
func (b *Builder) checkAllowed(raw string) error {
	if len(b.AllowedURLPrefixes) == 0 {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return &ConfigError{Reason: ReasonURLNotAllowed, Message: "spec.driver.http.url is not a valid absolute URL"}
	}
	for _, prefix := range b.AllowedURLPrefixes {
		if urlHasPrefix(u, prefix) {
			return nil
		}
	}
	return &ConfigError{Reason: ReasonURLNotAllowed,
		Message: fmt.Sprintf("target %s://%s is not in the operator's allowed target URLs; ask the operator admin to allow it", u.Scheme, u.Host)}
}

func urlHasPrefix(u *url.URL, prefix string) bool {
	p, err := url.Parse(prefix)
	if err != nil || p.Host == "" {
		return false
	}
	if !strings.EqualFold(u.Scheme, p.Scheme) || !strings.EqualFold(u.Host, p.Host) {
		return false
	}
	want := strings.TrimSuffix(p.Path, "/")
	return u.Path == want || strings.HasPrefix(u.Path, want+"/") || want == ""
}

// IsUserProblem reports whether err is for the user to fix (a condition,
// not a retry), and returns its reason and message.
func IsUserProblem(err error) (reason, message string, ok bool) {
	var sp *secretref.Problem
	if errors.As(err, &sp) {
		return sp.Reason, sp.Message, true
	}
	var ce *ConfigError
	if errors.As(err, &ce) {
		return ce.Reason, ce.Message, true
	}
	return "", "", false
}
