package persona

import (
	"context"

	"github.com/ragcanary/ragcanary/controllers/shared"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/reconcile"
	"github.com/ragcanary/ragcanary/internal/target"
)

// personaSecretIndex indexes Personas by the name of their credential Secret.
const personaSecretIndex = ".spec.credentialSecretRef.name"

// PersonaReconciler marks a Persona Ready when its credential Secret exists
// and holds the named key. It never reads the credential into status, events
// or logs.
type PersonaReconciler struct {
	client.Client
	// Secrets reads credential Secrets: in the operator the door's reader,
	// whose value cache is checked against the Secret metadata informer.
	Secrets client.Reader
}

// +kubebuilder:rbac:groups=ragcanary.dev,resources=personas,verbs=get;list;watch
// +kubebuilder:rbac:groups=ragcanary.dev,resources=personas/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch

// Reconcile evaluates one Persona.
func (r *PersonaReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var persona v1alpha1.Persona
	if err := r.Get(ctx, req.NamespacedName, &persona); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := persona.DeepCopy()

	ready, err := r.credentialCondition(ctx, &persona)
	if err != nil {
		return ctrl.Result{}, err
	}
	meta.SetStatusCondition(&persona.Status.Conditions, ready)
	persona.Status.ObservedGeneration = persona.Generation
	if ready.Status == metav1.ConditionFalse {
		log.FromContext(ctx).Info("persona credential unavailable", "reason", ready.Reason, "secret", persona.Spec.CredentialSecretRef.Name)
	}
	return ctrl.Result{}, shared.PatchStatus(ctx, r.Client, before, &persona, before.Status, persona.Status)
}

// credentialCondition computes the Ready condition from the referenced
// Secret. A missing Secret or key is the user's to fix: it becomes a False
// condition and the Secret watch brings the Persona back when it changes,
// so there is no retry loop. API errors are returned for backoff.
func (r *PersonaReconciler) credentialCondition(ctx context.Context, p *v1alpha1.Persona) (metav1.Condition, error) {
	cond := metav1.Condition{Type: v1alpha1.ConditionReady, ObservedGeneration: p.Generation}
	_, err := target.Credential(ctx, r.Secrets, p.Namespace, p.Spec.CredentialSecretRef)
	out := reconcile.Compute(err, reconcile.Policy{})
	switch {
	case out.Err != nil:
		return cond, out.Err
	case out.Condition != nil:
		cond.Status, cond.Reason, cond.Message = out.Condition.Status, out.Condition.Reason, out.Condition.Message
	default:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, v1alpha1.ReasonSecretFound, "credential Secret and key are present"
	}
	return cond, nil
}

// SetupWithManager registers the controller. Secrets are watched as metadata
// only: a change to a referenced Secret re-evaluates its Personas without the
// operator caching any Secret data. The watch covers the namespaces the
// cache options allow (ScopeSecrets).
func (r *PersonaReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.Persona{}, personaSecretIndex,
		func(o client.Object) []string {
			return []string{o.(*v1alpha1.Persona).Spec.CredentialSecretRef.Name}
		}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Persona{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Secret{},
			handler.EnqueueRequestsFromMapFunc(shared.Referrers(r.Client,
				func() client.ObjectList { return &v1alpha1.PersonaList{} }, personaSecretIndex)),
			builder.OnlyMetadata).
		Named("persona").
		Complete(r)
}
