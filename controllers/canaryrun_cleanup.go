package controllers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/metrics"
)

// cleanUp (CleaningUp) always runs, whatever the verdict: it removes the
// canary document, then completes the run, records metrics and emits the
// verdict event.
func (r *CanaryRunReconciler) cleanUp(ctx context.Context, rc *runCtx) (ctrl.Result, error) {
	run := rc.run
	r.Probes.Stop(rc.key)
	if controllerutil.ContainsFinalizer(run, CanaryRunFinalizer) {
		if res, done, err := r.removeCanary(ctx, rc, false); !done {
			return res, err
		}
	}
	run.Status.Phase = phaseFor(run.Status.Verdict)
	run.Status.CompletionTime = &metav1.Time{Time: rc.now}
	setCondition(run, ConditionComplete, metav1.ConditionTrue, string(run.Status.Verdict), run.Status.Message)
	if err := r.persist(ctx, rc); err != nil {
		return ctrl.Result{}, err
	}
	metrics.RecordCompletion(metricsRun(run), completion(run, rc.now))
	r.Recorder.Eventf(run, nil, eventType(run.Status.Verdict), string(run.Status.Verdict), "Complete", "%s", run.Status.Message)
	return ctrl.Result{}, r.removeFinalizer(ctx, rc)
}

// finalize cleans up a run deleted mid-flight (directly, or by garbage
// collection when its canary is deleted) before letting it go.
func (r *CanaryRunReconciler) finalize(ctx context.Context, rc *runCtx) (ctrl.Result, error) {
	r.Probes.Stop(rc.key)
	if !controllerutil.ContainsFinalizer(rc.run, CanaryRunFinalizer) {
		return ctrl.Result{}, nil
	}
	if res, done, err := r.removeCanary(ctx, rc, true); !done {
		return res, err
	}
	return ctrl.Result{}, r.removeFinalizer(ctx, rc)
}

// removeCanary revokes and deletes the canary document. While the target
// errs it sets CleanupPending and retries with backoff. When the target can
// no longer be reached at all (corpus or its credential gone) a run being
// deleted gives up with a Warning event, so a namespace deletion is not
// blocked forever; a run that is not being deleted keeps waiting.
func (r *CanaryRunReconciler) removeCanary(ctx context.Context, rc *runCtx, deleting bool) (ctrl.Result, bool, error) {
	run := rc.run
	defer r.zeroExposure(run)
	if run.Status.DocumentID == "" {
		return ctrl.Result{}, true, nil
	}
	deps, w, err := r.resolveDriver(ctx, run)
	if err != nil {
		return ctrl.Result{}, false, err
	}
	if w != nil {
		if deleting {
			r.Recorder.Eventf(run, nil, "Warning", ReasonCleanupAbandoned, "Cleanup",
				"canary document %s may remain at the target: %s", run.Status.DocumentID, w.message)
			return ctrl.Result{}, true, nil
		}
		setCondition(run, ConditionCleanupPending, metav1.ConditionTrue, w.reason, w.message)
		return ctrl.Result{RequeueAfter: waitRetry}, false, r.persist(ctx, rc)
	}
	subject := r.personaSubject(ctx, run)
	err = r.call(ctx, deps, func(ctx context.Context) error { return removeDocument(ctx, deps.driver, run, subject) })
	if err != nil {
		setCondition(run, ConditionCleanupPending, metav1.ConditionTrue, ReasonCleanupFailed,
			fmt.Sprintf("removing canary document %s failed, retrying: %v", run.Status.DocumentID, err))
		if perr := r.persist(ctx, rc); perr != nil {
			log.FromContext(ctx).Error(perr, "persisting cleanup status")
		}
		return ctrl.Result{}, false, fmt.Errorf("cleanup: %w", err)
	}
	setCondition(run, ConditionCleanupPending, metav1.ConditionFalse, ReasonCleanedUp, "the canary document was removed from the target")
	return ctrl.Result{}, true, nil
}

// removeDocument takes access away again (revocation may have been skipped
// by a failure) and deletes the document. Both are idempotent.
func removeDocument(ctx context.Context, d driver.Driver, run *v1alpha1.CanaryRun, subject string) error {
	if subject != "" {
		var err error
		if revocationMethod(run) == v1alpha1.RevokeRemoveFromGroup {
			err = d.RemoveMember(ctx, run.Spec.Revocation.Group, subject)
		} else {
			err = d.Revoke(ctx, run.Status.DocumentID, subject)
		}
		// A rejection (e.g. the document is already gone) does not matter:
		// the delete below is what must succeed.
		if err != nil && !driver.IsPermanent(err) {
			return err
		}
	}
	return d.DeleteDocument(ctx, run.Status.DocumentID)
}

// personaSubject is the probed persona's subject, or "" when the Persona is
// gone; deleting the document is then all cleanup can do.
func (r *CanaryRunReconciler) personaSubject(ctx context.Context, run *v1alpha1.CanaryRun) string {
	var p v1alpha1.Persona
	if err := r.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: run.Spec.PersonaRef.Name}, &p); err != nil {
		return ""
	}
	return p.Spec.Subject
}

// zeroExposure drops the live exposure gauge of a run that stops probing.
func (r *CanaryRunReconciler) zeroExposure(run *v1alpha1.CanaryRun) {
	if run.Status.RevokeAcknowledgedTime == nil {
		return
	}
	for _, s := range probingSurfaces(run) {
		metrics.SetLiveExposure(metricsRun(run), string(s), 0)
	}
}

func (r *CanaryRunReconciler) addFinalizer(ctx context.Context, rc *runCtx) error {
	if controllerutil.ContainsFinalizer(rc.run, CanaryRunFinalizer) {
		return nil
	}
	return r.patchFinalizers(ctx, rc, controllerutil.AddFinalizer)
}

func (r *CanaryRunReconciler) removeFinalizer(ctx context.Context, rc *runCtx) error {
	if !controllerutil.ContainsFinalizer(rc.run, CanaryRunFinalizer) {
		return nil
	}
	return r.patchFinalizers(ctx, rc, controllerutil.RemoveFinalizer)
}

// patchFinalizers changes only metadata.finalizers. Status must already be
// persisted: the reply replaces the in-memory object.
func (r *CanaryRunReconciler) patchFinalizers(ctx context.Context, rc *runCtx, change func(client.Object, string) bool) error {
	base := rc.run.DeepCopy()
	change(rc.run, CanaryRunFinalizer)
	if err := r.Patch(ctx, rc.run, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(err)
	}
	rc.before = rc.run.DeepCopy()
	return nil
}

// canaryDocument is the planted document. The token is the only rare term
// in it, so a search for the token finds this document and nothing else.
func canaryDocument(run *v1alpha1.CanaryRun, token string) driver.Document {
	return driver.Document{
		ID:    run.Status.DocumentID,
		Title: "ragcanary revocation canary",
		Body:  "This document is a ragcanary revocation canary. Canary token: " + token,
	}
}

// newToken is 128 random bits, lower-case alphanumeric so every tokenizer
// keeps it one term.
func newToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "rcanary" + hex.EncodeToString(b), nil
}

// ensureToken returns the run's token, creating its Secret (owned by the
// run) on first use. A Secret of that name not owned by the run is a
// problem for the user, reported as a message.
func (r *CanaryRunReconciler) ensureToken(ctx context.Context, run *v1alpha1.CanaryRun) (token, problem string, err error) {
	token, problem, err = r.readToken(ctx, run)
	if err == nil && problem == "" {
		return token, "", nil
	}
	if !apierrors.IsNotFound(err) {
		return "", problem, err
	}
	if token, err = newToken(); err != nil {
		return "", "", err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: run.Namespace, Name: run.Status.TokenSecretName},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{tokenSecretKey: []byte(token)},
	}
	if err := controllerutil.SetControllerReference(run, secret, r.Scheme()); err != nil {
		return "", "", err
	}
	if err := r.Create(ctx, secret); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return "", "", errTokenSecretRace
		}
		return "", "", err
	}
	return token, "", nil
}

// readToken reads the token from the run's Secret, uncached. A missing
// Secret is returned as a NotFound error.
func (r *CanaryRunReconciler) readToken(ctx context.Context, run *v1alpha1.CanaryRun) (token, problem string, err error) {
	var secret corev1.Secret
	key := types.NamespacedName{Namespace: run.Namespace, Name: run.Status.TokenSecretName}
	if err := r.APIReader.Get(ctx, key, &secret); err != nil {
		return "", "", err
	}
	if !metav1.IsControlledBy(&secret, run) {
		return "", fmt.Sprintf("Secret %q exists and is not owned by this run; delete or rename it", key.Name), nil
	}
	token = string(secret.Data[tokenSecretKey])
	if token == "" {
		return "", fmt.Sprintf("Secret %q has no canary token", key.Name), nil
	}
	return token, "", nil
}

func corpusName(run *v1alpha1.CanaryRun) types.NamespacedName {
	return types.NamespacedName{Namespace: run.Namespace, Name: run.Spec.CorpusRef.Name}
}
