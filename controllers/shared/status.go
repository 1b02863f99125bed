package shared

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PatchStatus writes obj's status as a merge patch against before (the object
// as read at the start of the reconcile) only when the status changed, so a
// reconcile that learned nothing new writes nothing.
func PatchStatus(ctx context.Context, c client.Client, before, obj client.Object, oldStatus, newStatus any) error {
	if equality.Semantic.DeepEqual(oldStatus, newStatus) {
		return nil
	}
	return c.Status().Patch(ctx, obj, client.MergeFrom(before))
}
