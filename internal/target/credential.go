package target

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// Credential reads the referenced key of a Secret in namespace. It returns
// a Stalled *Problem when the Secret is missing, unlabelled or lacks the
// key, or when the operator may not read Secrets in namespace (retrying
// cannot help: granting access is a chart upgrade, which restarts the
// operator), and other errors as Transient. The operator's reader keeps
// values in a bounded cache checked against its Secret metadata watch
// (package secretcache); it never uses an informer of whole Secrets, which
// would hold every Secret in the watched namespaces.
func Credential(ctx context.Context, reader client.Reader, namespace string, ref v1alpha1.SecretKeyReference) ([]byte, error) {
	var secret corev1.Secret
	err := reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, &secret)
	if apierrors.IsNotFound(err) {
		return nil, Stall(v1alpha1.ReasonSecretNotFound,
			"Secret %q not found in namespace %q; create it with key %q and label %s=%q",
			ref.Name, namespace, ref.Key, v1alpha1.LabelCredential, v1alpha1.LabelCredentialValue)
	}
	if apierrors.IsForbidden(err) {
		return nil, Stall(v1alpha1.ReasonSecretAccessDenied,
			"the operator may not read Secrets in namespace %q, so it cannot read Secret %q; "+
				"add the namespace to the chart value secretNamespaces (the manager's --secret-namespaces)",
			namespace, ref.Name)
	}
	if err != nil {
		return nil, &Problem{Intent: Transient, Reason: "Transient", Message: "reading Secret " + ref.Name + " failed", Err: err}
	}
	return credentialFrom(&secret, ref)
}

// credentialFrom applies the label and key rules to a Secret already read.
func credentialFrom(secret *corev1.Secret, ref v1alpha1.SecretKeyReference) ([]byte, error) {
	if secret.Labels[v1alpha1.LabelCredential] != v1alpha1.LabelCredentialValue {
		return nil, Stall(v1alpha1.ReasonSecretNotLabeled,
			"Secret %q is not labelled as a ragcanary credential; add the label %s=%q if it is meant to be sent to the target",
			ref.Name, v1alpha1.LabelCredential, v1alpha1.LabelCredentialValue)
	}
	value, ok := secret.Data[ref.Key]
	if !ok || len(value) == 0 {
		return nil, Stall(v1alpha1.ReasonKeyNotFound,
			"Secret %q has no non-empty key %q; add the key or change the reference", ref.Name, ref.Key)
	}
	return value, nil
}
