package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
)

const personaCredential = "s3cr3t-persona-credential"

// TestPersonaReadyFollowsSecret: a Persona without its Secret is not Ready
// (SecretNotFound); a Secret without the key is KeyNotFound; adding the key
// flips it to Ready without touching the Persona; the credential never
// reaches status.
func TestPersonaReadyFollowsSecret(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	persona := objects.Persona(ns, "alice", "alice@example.com")
	if err := k8sClient.Create(ctx, persona); err != nil {
		t.Fatal(err)
	}
	waitPersonaReady(t, persona, metav1.ConditionFalse, v1alpha1.ReasonSecretNotFound)

	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alice-cred", Labels: credentialLabels()},
		Data:       map[string][]byte{"other": []byte("x")},
	}
	if err := k8sClient.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	waitPersonaReady(t, persona, metav1.ConditionFalse, v1alpha1.ReasonKeyNotFound)

	secret.Data["token"] = []byte(personaCredential)
	if err := k8sClient.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	got := waitPersonaReady(t, persona, metav1.ConditionTrue, v1alpha1.ReasonSecretFound)
	if got.Status.ObservedGeneration != got.Generation {
		t.Errorf("observedGeneration = %d, want %d", got.Status.ObservedGeneration, got.Generation)
	}
	if strings.Contains(fmt.Sprintf("%+v", got.Status), personaCredential) {
		t.Errorf("persona status contains the credential: %+v", got.Status)
	}

	// Deleting the Secret is noticed too.
	if err := k8sClient.Delete(ctx, secret); err != nil {
		t.Fatal(err)
	}
	waitPersonaReady(t, persona, metav1.ConditionFalse, v1alpha1.ReasonSecretNotFound)
}

// TestPersonaIgnoresUnrelatedSecrets: a Secret the Persona does not reference
// does not make it Ready.
func TestPersonaIgnoresUnrelatedSecrets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	persona := objects.Persona(ns, "bob", "bob")
	if err := k8sClient.Create(ctx, persona); err != nil {
		t.Fatal(err)
	}
	waitPersonaReady(t, persona, metav1.ConditionFalse, v1alpha1.ReasonSecretNotFound)
	other := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "someone-else", Labels: credentialLabels()},
		Data:       map[string][]byte{"token": []byte("x")},
	}
	if err := k8sClient.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	// Then the referenced one: only this must flip the condition, and the
	// condition must still have been False right before.
	var p v1alpha1.Persona
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(persona), &p); err != nil {
		t.Fatal(err)
	}
	if meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionReady) {
		t.Fatalf("persona became Ready from an unrelated Secret")
	}
	// The referenced Secret without the credential label is not read: the
	// Persona says which label to add.
	ref := other.DeepCopy()
	ref.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: "bob-cred"}
	if err := k8sClient.Create(ctx, ref); err != nil {
		t.Fatal(err)
	}
	got := waitPersonaReady(t, persona, metav1.ConditionFalse, v1alpha1.ReasonSecretNotLabeled)
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady); !strings.Contains(c.Message, `ragcanary.dev/credential="true"`) {
		t.Errorf("message %q does not name the label to add", c.Message)
	}
	ref.Labels = credentialLabels()
	if err := k8sClient.Update(ctx, ref); err != nil {
		t.Fatal(err)
	}
	waitPersonaReady(t, persona, metav1.ConditionTrue, v1alpha1.ReasonSecretFound)
}

func waitPersonaReady(t *testing.T, persona *v1alpha1.Persona, status metav1.ConditionStatus, reason string) *v1alpha1.Persona {
	t.Helper()
	var got v1alpha1.Persona
	testutil.Eventually(t, eventuallyTimeout, fmt.Sprintf("persona Ready=%s/%s", status, reason), func() error {
		if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(persona), &got); err != nil {
			return err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Status != status || c.Reason != reason {
			return fmt.Errorf("condition is %+v", c)
		}
		return nil
	})
	return &got
}

// A Persona names its credential one way: a key, or an OAuth2 client. The
// API server refuses both and neither.
func TestPersonaCredentialIsOneOfKeyOrOAuth2(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	oauth := &v1alpha1.PersonaOAuth2{Grant: v1alpha1.OAuth2ClientCredentials, TokenURL: "http://127.0.0.1:1/token",
		SecretRef: v1alpha1.LocalObjectReference{Name: "oauth"}}
	both := objects.Persona(ns, "both", "both@example.com")
	both.Spec.OAuth2 = oauth
	neither := objects.Persona(ns, "neither", "neither@example.com")
	neither.Spec.CredentialSecretRef = nil
	for _, p := range []*v1alpha1.Persona{both, neither} {
		err := k8sClient.Create(context.Background(), p)
		if err == nil || !strings.Contains(err.Error(), "set exactly one of credentialSecretRef and oauth2") {
			t.Errorf("creating %s: %v, want the one-of rule", p.Name, err)
		}
	}
	only := objects.Persona(ns, "oauth", "oauth@example.com")
	only.Spec.CredentialSecretRef, only.Spec.OAuth2 = nil, oauth
	if err := k8sClient.Create(context.Background(), only); err != nil {
		t.Fatalf("an OAuth2 persona: %v", err)
	}
}
