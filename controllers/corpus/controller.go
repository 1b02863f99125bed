package corpus

import (
	"context"
	"fmt"
	"time"

	"github.com/ragcanary/ragcanary/controllers/shared"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/reconcile"
	"github.com/ragcanary/ragcanary/internal/target"
)

// corpusSecretIndex indexes Corpora by the name of their credential Secret.
const corpusSecretIndex = ".spec.driver.credentialSecretRef.name"

// defaultHealthCheckInterval applies when a corpus does not set one.
const defaultHealthCheckInterval = time.Minute

// CorpusReconciler resolves a Corpus's driver and credential, checks the
// target's capabilities and reports Ready with a reason a person can act on.
type CorpusReconciler struct {
	client.Client
	// Door resolves the corpus into a driver and credential.
	Door  *target.Door
	Clock clock.PassiveClock
}

// corpusWorkers is how many corpora are checked at once. A check of a
// blackholed target takes two per-call timeouts (capabilities, credential);
// with one worker it would delay every other tenant's checks by as much.
const corpusWorkers = 8

// +kubebuilder:rbac:groups=ragcanary.dev,resources=corpora,verbs=get;list;watch
// +kubebuilder:rbac:groups=ragcanary.dev,resources=corpora/status,verbs=get;update;patch

// Reconcile checks one Corpus.
func (r *CorpusReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var corpus v1alpha1.Corpus
	if err := r.Get(ctx, req.NamespacedName, &corpus); err != nil {
		if apierrors.IsNotFound(err) {
			r.Door.Forget(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := corpus.DeepCopy()

	result, err := r.check(ctx, &corpus)
	if err != nil {
		return ctrl.Result{}, err
	}
	corpus.Status.ObservedGeneration = corpus.Generation
	if err := shared.PatchStatus(ctx, r.Client, before, &corpus, before.Status, corpus.Status); err != nil {
		return ctrl.Result{}, err
	}
	return result, nil
}

// check sets the Ready condition and capabilities. Configuration the user
// must fix ends the reconcile with no requeue (a spec or Secret change brings
// the corpus back); an unreachable target is re-checked on the health
// interval. Only API-server failures are returned as errors.
func (r *CorpusReconciler) check(ctx context.Context, corpus *v1alpha1.Corpus) (ctrl.Result, error) {
	resolved, err := r.Door.Corpus(ctx, corpus)
	if err != nil {
		out := reconcile.Compute(err, reconcile.Policy{})
		if out.Err != nil {
			return ctrl.Result{}, fmt.Errorf("resolving corpus: %w", out.Err)
		}
		r.setFailed(corpus, out)
		return out.Result, nil
	}
	defer resolved.Release()
	d := resolved.Driver
	if err := r.checkPersonaCredentials(ctx, corpus, resolved); err != nil {
		out := reconcile.Compute(err, reconcile.Policy{})
		if out.Err != nil {
			return ctrl.Result{}, fmt.Errorf("checking persona credentials: %w", out.Err)
		}
		r.setFailed(corpus, out)
		return out.Result, nil
	}

	interval := healthCheckInterval(corpus)
	// The driver bounds each call by the corpus timeout.
	caps, err := d.Capabilities(ctx)
	now := metav1.NewTime(r.Clock.Now())
	corpus.Status.LastCheckTime = &now
	if err != nil {
		out := reconcile.Compute(err, targetCall("capabilities check", interval))
		r.setFailed(corpus, out)
		log.FromContext(ctx).Info("corpus target check failed", "reason", out.Condition.Reason)
		return out.Result, nil
	}
	// A reply is checked before it reaches status: a hostile or broken one
	// must not stand in status as the target's capabilities.
	if err := target.CheckCapabilities(caps); err != nil {
		p := target.AsProblem(err)
		corpus.Status.Capabilities = nil
		corpus.Status.MeasurableSurfaces = nil
		r.setReady(corpus, metav1.ConditionFalse, p.Reason, p.Message)
		return ctrl.Result{RequeueAfter: interval}, nil
	}
	corpus.Status.Capabilities = shared.ToCorpusCapabilities(caps)
	corpus.Status.MeasurableSurfaces = target.MeasurableSurfaces(corpus.Spec.Surfaces, corpus.Status.Capabilities)
	res, stop := r.checkHook(ctx, corpus, resolved.CheckPermissions, "permissions backend", interval)
	corpus.Status.Permissions = nil
	if resolved.PermissionsStatus != nil {
		corpus.Status.Permissions = resolved.PermissionsStatus()
	}
	if stop {
		return res, nil
	}
	if res, stop := r.checkHook(ctx, corpus, resolved.CheckDriver, "driver", interval); stop {
		return res, nil
	}
	if res, stop := r.checkHook(ctx, corpus, resolved.CheckDirectory, "directory", interval); stop {
		return res, nil
	}
	if err := checkSourceCredential(ctx, d); err != nil {
		out := reconcile.Compute(err, targetCall("source credential check", interval))
		r.setFailed(corpus, out)
		return out.Result, nil
	}
	r.setReady(corpus, metav1.ConditionTrue, v1alpha1.ReasonReachable,
		fmt.Sprintf("target answered with driver contract %s", caps.ContractVersion))
	return ctrl.Result{RequeueAfter: interval}, nil
}

// checkHook runs one of the resolved corpus's checks: a separate
// permissions backend (reachable, key accepted, schema as mapped) or the
// driver's own (Postgres: schema, statements, reader under row-level
// security). stop is true when Ready was set to False.
func (r *CorpusReconciler) checkHook(ctx context.Context, corpus *v1alpha1.Corpus, check func(context.Context) error, what string, interval time.Duration) (ctrl.Result, bool) {
	if check == nil {
		return ctrl.Result{}, false
	}
	err := check(ctx)
	if err == nil {
		return ctrl.Result{}, false
	}
	out := reconcile.Compute(err, targetCall(what+" check", interval))
	if _, user := target.IsUserProblem(err); user {
		// The user's problem speaks for itself, without the call's name.
		out = reconcile.Compute(err, reconcile.Policy{StalledRequeue: interval, WaitingRequeue: interval})
	}
	r.setFailed(corpus, out)
	return out.Result, true
}

// targetCall is the policy for a check that calls the target: what it
// refuses or fails is shown and re-checked on the health interval.
func targetCall(what string, interval time.Duration) reconcile.Policy {
	return reconcile.Policy{StalledRequeue: interval, WaitingRequeue: interval, TargetRequeue: interval, What: what}
}

// setFailed shows a failure as the Ready condition.
func (r *CorpusReconciler) setFailed(corpus *v1alpha1.Corpus, out reconcile.Outcome) {
	r.setReady(corpus, metav1.ConditionFalse, out.Condition.Reason, out.Condition.Message)
}

func (r *CorpusReconciler) setReady(corpus *v1alpha1.Corpus, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&corpus.Status.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionReady, Status: status, Reason: reason, Message: message,
		ObservedGeneration: corpus.Generation,
	})
}

// credentialCheckDocument is a document ID no canary uses. Deleting it is an
// authenticated, idempotent no-op, so it proves the source credential works
// without changing the target.
const credentialCheckDocument = "ragcanary-credential-check"

func checkSourceCredential(ctx context.Context, d driver.Driver) error {
	return d.DeleteDocument(ctx, credentialCheckDocument)
}

func healthCheckInterval(corpus *v1alpha1.Corpus) time.Duration {
	if i := corpus.Spec.HealthCheckInterval; i != nil && i.Duration > 0 {
		return i.Duration
	}
	return defaultHealthCheckInterval
}

// secretIndexValues indexes a Corpus by the Secrets it reads, so a change
// to any of them re-checks it.
func secretIndexValues(o client.Object) []string {
	return o.(*v1alpha1.Corpus).Spec.SecretNames()
}

// SetupWithManager registers the controller. Secrets are watched as
// metadata only, and only in the namespaces the cache options allow
// (ScopeSecrets): the chart may grant Secret access in those alone.
func (r *CorpusReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.Corpus{}, corpusSecretIndex,
		secretIndexValues); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Corpus{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Secret{},
			handler.EnqueueRequestsFromMapFunc(shared.Referrers(r.Client,
				func() client.ObjectList { return &v1alpha1.CorpusList{} }, corpusSecretIndex)),
			builder.OnlyMetadata).
		WithOptions(controller.Options{MaxConcurrentReconciles: corpusWorkers}).
		Named("corpus").
		Complete(r)
}
