package e2e

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
)

// tokenPersona is a persona whose credential is the Secret of its own name.
func tokenPersona(ns, name, subject string) *v1alpha1.Persona {
	return objects.Persona(ns, name, subject, objects.Credential(name, objects.TokenKey))
}

// scenarioCorpus is an HTTP corpus at url reading the "source" Secret,
// with a 30s exclusion SLO.
func scenarioCorpus(ns, name, url string, opts ...objects.CorpusOption) *v1alpha1.Corpus {
	return objects.Corpus(ns, name, url, append([]objects.CorpusOption{objects.ExclusionSLO(30 * time.Second)}, opts...)...)
}

// aliceNamespace is a namespace with the source credential and alice, the
// persona most scenarios measure.
func aliceNamespace(ns string) []client.Object {
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		objects.CredentialSecret(ns, "source", sourceToken),
		objects.CredentialSecret(ns, "alice", aliceToken),
		tokenPersona(ns, "alice", "alice@example.com"),
	}
}
