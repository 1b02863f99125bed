package persona

import (
	"context"
	"time"

	"github.com/ragcanary/ragcanary/controllers/shared"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// personaSecretIndex indexes Personas by the names of their credential
// Secrets (PersonaSpec.SecretNames).
const personaSecretIndex = ".spec.secretNames"

// oauth2Recheck is how often an OAuth2 persona's credential is checked
// again: a client revoked at the authorization server changes no object
// the operator watches.
const oauth2Recheck = 5 * time.Minute

// PersonaReconciler marks a Persona Ready when its credential can be used:
// its Secret exists and holds the named key, or its OAuth2 token endpoint
// issues it a token. It never reads the credential into status, events or
// logs.
type PersonaReconciler struct {
	client.Client
	// Secrets reads credential Secrets: in the operator the door's reader,
	// whose value cache is checked against the Secret metadata informer.
	Secrets client.Reader
	// Door obtains OAuth2 personas' tokens (and keeps them for the runs).
	Door *target.Door
}

// +kubebuilder:rbac:groups=ragcanary.dev,resources=personas,verbs=get;list;watch
// +kubebuilder:rbac:groups=ragcanary.dev,resources=personas/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch

// Reconcile evaluates one Persona.
func (r *PersonaReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var persona v1alpha1.Persona
	if err := r.Get(ctx, req.NamespacedName, &persona); err != nil {
		if apierrors.IsNotFound(err) && r.Door != nil {
			r.Door.ForgetPersona(req.Namespace, req.Name)
		}
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
		log.FromContext(ctx).Info("persona credential unavailable", "reason", ready.Reason, "secrets", persona.Spec.SecretNames())
	}
	var res ctrl.Result
	if persona.Spec.OAuth2 != nil {
		res.RequeueAfter = oauth2Recheck
	}
	return res, shared.PatchStatus(ctx, r.Client, before, &persona, before.Status, persona.Status)
}

// credentialCondition computes the Ready condition from the referenced
// Secret. A missing Secret or key is the user's to fix: it becomes a False
// condition and the Secret watch brings the Persona back when it changes,
// so there is no retry loop. API errors are returned for backoff.
func (r *PersonaReconciler) credentialCondition(ctx context.Context, p *v1alpha1.Persona) (metav1.Condition, error) {
	cond := metav1.Condition{Type: v1alpha1.ConditionReady, ObservedGeneration: p.Generation}
	err := r.checkCredential(ctx, p)
	out := reconcile.Compute(err, reconcile.Policy{})
	switch {
	case out.Err != nil:
		return cond, out.Err
	case out.Condition != nil:
		cond.Status, cond.Reason, cond.Message = out.Condition.Status, out.Condition.Reason, out.Condition.Message
	case p.Spec.OAuth2 != nil:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, v1alpha1.ReasonTokenIssued, "the token endpoint issued a token"
	default:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, v1alpha1.ReasonSecretFound, "credential Secret and key are present"
	}
	return cond, nil
}

// checkCredential reads the persona's key, or has the door obtain its
// OAuth2 token.
func (r *PersonaReconciler) checkCredential(ctx context.Context, p *v1alpha1.Persona) error {
	if p.Spec.OAuth2 != nil {
		if r.Door == nil {
			return target.Stall(v1alpha1.ReasonKeyNotFound, "this operator cannot obtain OAuth2 tokens")
		}
		_, err := r.Door.Persona(ctx, p)
		return err
	}
	for _, ref := range p.Spec.SecretRefs() {
		if _, err := target.Credential(ctx, r.Secrets, p.Namespace, ref.Ref); err != nil {
			return err
		}
	}
	if len(p.Spec.SecretRefs()) == 0 {
		return target.Stall(v1alpha1.ReasonKeyNotFound, "set spec.credentialSecretRef or spec.oauth2")
	}
	return nil
}

// SetupWithManager registers the controller. Secrets are watched as metadata
// only: a change to a referenced Secret re-evaluates its Personas without the
// operator caching any Secret data. The watch covers the namespaces the
// cache options allow (ScopeSecrets).
func (r *PersonaReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.Persona{}, personaSecretIndex,
		func(o client.Object) []string {
			return o.(*v1alpha1.Persona).Spec.SecretNames()
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
