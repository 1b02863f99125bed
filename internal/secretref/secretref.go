// Package secretref resolves SecretKeyReferences for controllers without
// letting a secret value reach status, events or logs: callers get the value
// only when they ask for it, and failures carry a reason and a message that
// name the Secret and key, never their contents.
package secretref

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// Problem is a user-fixable failure to resolve a reference: the Secret or
// the key is missing. It is reported as a condition, not retried with backoff.
type Problem struct {
	// Reason is a CamelCase condition reason.
	Reason string
	// Message tells a person what to create or fix.
	Message string
}

func (p *Problem) Error() string { return p.Message }

// Resolve reads the referenced key from a Secret in namespace. It returns a
// *Problem when the Secret or key does not exist, and other errors (API
// failures) unchanged so callers retry them.
//
// Reads go through reader, which should be an uncached API reader: the
// operator then needs no cluster-wide cache of Secret values.
func Resolve(ctx context.Context, reader client.Reader, namespace string, ref v1alpha1.SecretKeyReference) ([]byte, error) {
	var secret corev1.Secret
	err := reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, &secret)
	if apierrors.IsNotFound(err) {
		return nil, &Problem{
			Reason:  v1alpha1.ReasonSecretNotFound,
			Message: fmt.Sprintf("Secret %q not found in namespace %q; create it with key %q", ref.Name, namespace, ref.Key),
		}
	}
	if err != nil {
		return nil, fmt.Errorf("reading Secret %q: %w", ref.Name, err)
	}
	value, ok := secret.Data[ref.Key]
	if !ok || len(value) == 0 {
		return nil, &Problem{
			Reason:  v1alpha1.ReasonKeyNotFound,
			Message: fmt.Sprintf("Secret %q has no non-empty key %q; add the key or change the reference", ref.Name, ref.Key),
		}
	}
	return value, nil
}
