package objects

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// CorpusOption adjusts a Corpus the builder made.
type CorpusOption func(*v1alpha1.Corpus)

// Corpus is an HTTP-driver corpus at url whose source credential is the
// "source" Secret's "token", with the CRD's defaults: a 10s call timeout,
// a 5m exclusion SLO and a 1m health check.
func Corpus(ns, name, url string, opts ...CorpusOption) *v1alpha1.Corpus {
	c := &v1alpha1.Corpus{
		ObjectMeta: meta(ns, name),
		Spec: v1alpha1.CorpusSpec{
			Driver: v1alpha1.Driver{
				Type:    v1alpha1.DriverHTTP,
				HTTP:    &v1alpha1.HTTPDriver{URL: url, CredentialSecretRef: SecretKey(SourceSecretName, TokenKey)},
				Timeout: DurationPtr(10 * time.Second),
			},
			Freshness:           v1alpha1.Freshness{ExclusionSLO: DurationPtr(5 * time.Minute)},
			HealthCheckInterval: DurationPtr(time.Minute),
		},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// SourceSecret makes the HTTP driver read its credential from key of Secret name.
func SourceSecret(name, key string) CorpusOption {
	return func(c *v1alpha1.Corpus) { c.Spec.Driver.HTTP.CredentialSecretRef = SecretKey(name, key) }
}

// CallTimeout bounds each call to the RAG system.
func CallTimeout(d time.Duration) CorpusOption {
	return func(c *v1alpha1.Corpus) { c.Spec.Driver.Timeout = DurationPtr(d) }
}

// ExclusionSLO is the corpus's exclusion SLO.
func ExclusionSLO(d time.Duration) CorpusOption {
	return func(c *v1alpha1.Corpus) { c.Spec.Freshness.ExclusionSLO = DurationPtr(d) }
}

// Surfaces declares where the corpus's surfaces are probed.
func Surfaces(s v1alpha1.CorpusSurfaces) CorpusOption {
	return func(c *v1alpha1.Corpus) { c.Spec.Surfaces = &s }
}

// Permissions sends permission changes to the authorization engine p
// names instead of the driver.
func Permissions(p v1alpha1.Permissions) CorpusOption {
	return func(c *v1alpha1.Corpus) { c.Spec.Permissions = &p }
}

// RateLimit lets the operator send the corpus perSecond requests a second,
// burst at once, rather than its defaults, for tests whose runs
// probe faster than that.
func RateLimit(perSecond, burst int32) CorpusOption {
	return func(c *v1alpha1.Corpus) {
		c.Spec.RateLimit = v1alpha1.RateLimit{RequestsPerSecond: perSecond, Burst: burst}
	}
}

// HealthCheck re-checks the driver's capabilities every d.
func HealthCheck(d time.Duration) CorpusOption {
	return func(c *v1alpha1.Corpus) { c.Spec.HealthCheckInterval = DurationPtr(d) }
}

// PersonaOption adjusts a Persona the builder made.
type PersonaOption func(*v1alpha1.Persona)

// Persona is a persona known to the RAG system as subject, whose credential
// is the "<name>-cred" Secret's "token".
func Persona(ns, name, subject string, opts ...PersonaOption) *v1alpha1.Persona {
	p := &v1alpha1.Persona{
		ObjectMeta: meta(ns, name),
		Spec: v1alpha1.PersonaSpec{Subject: subject,
			CredentialSecretRef: new(SecretKey(name+"-cred", TokenKey))},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Groups makes the persona a member of groups at the source.
func Groups(groups ...string) PersonaOption {
	return func(p *v1alpha1.Persona) { p.Spec.Groups = groups }
}

// Credential makes the persona's credential key of Secret name.
func Credential(name, key string) PersonaOption {
	return func(p *v1alpha1.Persona) { p.Spec.CredentialSecretRef = new(SecretKey(name, key)) }
}

// CredentialSecret holds value under TokenKey in a Secret labelled as a
// ragcanary credential, which the target door requires before reading it.
func CredentialSecret(ns, name, value string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{v1alpha1.LabelCredential: v1alpha1.LabelCredentialValue}},
		Data: map[string][]byte{TokenKey: []byte(value)}}
}
