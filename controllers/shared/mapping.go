package shared

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Referrers maps an object (a Secret, Corpus, Persona or ConfigMap) to the
// objects in its namespace whose field index names it, so a change to it
// re-evaluates exactly those objects. An empty index maps to every object of
// the list's kind in the namespace, for references not worth indexing.
func Referrers(c client.Client, newList func() client.ObjectList, index string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []ctrl.Request {
		opts := []client.ListOption{client.InNamespace(obj.GetNamespace())}
		if index != "" {
			opts = append(opts, client.MatchingFields{index: obj.GetName()})
		}
		list := newList()
		if err := c.List(ctx, list, opts...); err != nil {
			log.FromContext(ctx).Error(err, "listing Referrers", "index", index)
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

// PhaseChanged passes run updates that change the run's phase or start its
// deletion, not the status checkpoints in between, so a parent reconciles
// when one of its runs moves on and not on every status write.
func PhaseChanged[T client.Object](phase func(T) string) predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldRun, okOld := e.ObjectOld.(T)
			newRun, okNew := e.ObjectNew.(T)
			if !okOld || !okNew {
				return true
			}
			return phase(oldRun) != phase(newRun) ||
				oldRun.GetDeletionTimestamp().IsZero() != newRun.GetDeletionTimestamp().IsZero()
		},
	}
}
