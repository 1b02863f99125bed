package e2e

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// credentialSecret is a Secret the operator may read as a credential (it
// carries the label the target door requires), holding value under "token".
func credentialSecret(ns, name, value string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{"ragcanary.dev/credential": "true"}},
		Data: map[string][]byte{"token": []byte(value)}}
}

// tokenPersona is a persona whose credential is the Secret of its own name.
func tokenPersona(ns, name, subject string) *v1alpha1.Persona {
	return &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.PersonaSpec{Subject: subject, CredentialSecretRef: v1alpha1.SecretKeyReference{Name: name, Key: "token"}}}
}

// aliceNamespace is a namespace with the source credential and alice, the
// persona most scenarios measure.
func aliceNamespace(ns string) []client.Object {
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		credentialSecret(ns, "source", sourceToken),
		credentialSecret(ns, "alice", aliceToken),
		tokenPersona(ns, "alice", "alice@example.com"),
	}
}
