package controllers

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// referrersOfSecret maps a Secret to the objects in its namespace whose field
// index names it, so a Secret change re-evaluates exactly those objects.
func referrersOfSecret(c client.Client, newList func() client.ObjectList, index string) handler.MapFunc {
	return func(ctx context.Context, secret client.Object) []ctrl.Request {
		list := newList()
		if err := c.List(ctx, list, client.InNamespace(secret.GetNamespace()),
			client.MatchingFields{index: secret.GetName()}); err != nil {
			log.FromContext(ctx).Error(err, "listing referrers of secret", "index", index)
			return nil
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return nil
		}
		reqs := make([]ctrl.Request, 0, len(items))
		for _, item := range items {
			if o, ok := item.(client.Object); ok {
				reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(o)})
			}
		}
		return reqs
	}
}
