// Package manager holds how the ragcanary manager process is served: what
// cmd/manager wires from its flags into controller-runtime's options.
package manager

import (
	"crypto/tls"
	"errors"
	"fmt"
	"path/filepath"

	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// MetricsServing says how /metrics is served.
type MetricsServing struct {
	// BindAddress is host:port; "0" disables the endpoint.
	BindAddress string
	// Secure serves over TLS and admits only callers whose bearer token the
	// API server authenticates (TokenReview) and authorizes for GET /metrics
	// (SubjectAccessReview). Plain HTTP is for local runs only: anyone who
	// reaches the port reads every series.
	Secure bool
	// CertDir holds CertName and KeyName; empty serves a self-signed
	// certificate generated at start.
	CertDir  string
	CertName string
	KeyName  string
	// EnableHTTP2 allows HTTP/2. It is off by default: HTTP/2 rapid reset
	// (CVE-2023-44487) lets any client that reaches the port load the server
	// before authentication runs.
	EnableHTTP2 bool
}

// Default certificate file names, as cert-manager and kubernetes.io/tls
// Secrets name them.
const (
	DefaultCertName = "tls.crt"
	DefaultKeyName  = "tls.key"
)

// errCertWithoutTLS refuses a certificate that would never be served.
var errCertWithoutTLS = errors.New("a metrics certificate directory is set but metrics are served without TLS: drop --metrics-cert-path or keep --metrics-secure")

// Options are the controller-runtime metrics server options for m.
func (m MetricsServing) Options() (metricsserver.Options, error) {
	opts := metricsserver.Options{BindAddress: m.BindAddress}
	if !m.Secure {
		if m.CertDir != "" {
			return metricsserver.Options{}, errCertWithoutTLS
		}
		return opts, nil
	}
	opts.SecureServing = true
	opts.FilterProvider = filters.WithAuthenticationAndAuthorization
	if !m.EnableHTTP2 {
		opts.TLSOpts = append(opts.TLSOpts, http1Only)
	}
	if m.CertDir == "" {
		return opts, nil
	}
	if err := m.checkCert(); err != nil {
		return metricsserver.Options{}, err
	}
	opts.CertDir, opts.CertName, opts.KeyName = m.CertDir, m.certName(), m.keyName()
	return opts, nil
}

// checkCert loads the configured pair once: controller-runtime falls back to
// a self-signed certificate when either file is missing, which would hide a
// mounting mistake behind a certificate no scraper trusts.
func (m MetricsServing) checkCert() error {
	cert, key := filepath.Join(m.CertDir, m.certName()), filepath.Join(m.CertDir, m.keyName())
	if _, err := tls.LoadX509KeyPair(cert, key); err != nil {
		return fmt.Errorf("loading the metrics certificate %s and key %s: %w", cert, key, err)
	}
	return nil
}

func (m MetricsServing) certName() string {
	if m.CertName == "" {
		return DefaultCertName
	}
	return m.CertName
}

func (m MetricsServing) keyName() string {
	if m.KeyName == "" {
		return DefaultKeyName
	}
	return m.KeyName
}

func http1Only(c *tls.Config) {
	c.NextProtos = []string{"http/1.1"}
}
