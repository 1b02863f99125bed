package canaryrun

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/metrics"
	"github.com/ragcanary/ragcanary/internal/revocation"
	"github.com/ragcanary/ragcanary/internal/target"
)

// finalize cleans up a run deleted mid-flight (directly, or by garbage
// collection when its canary is deleted) before letting it go.
func (r *CanaryRunReconciler) finalize(ctx context.Context, rc *runCtx) (ctrl.Result, error) {
	_ = r.Probes.Stop(rc.key)
	r.inFlight.Stop(rc.key)
	r.endConversation(rc.run)
	if !controllerutil.ContainsFinalizer(rc.run, v1alpha1.FinalizerCanaryRun) {
		return ctrl.Result{}, nil
	}
	if res, done, err := r.removeCanary(ctx, rc, true); !done {
		return res, err
	}
	return ctrl.Result{}, r.removeFinalizer(ctx, rc)
}

// removeCanary revokes and deletes the canary document where it was
// planted: through the live Corpus while it names that target, else
// (another target, or no Corpus that resolves) the run's kept copy. While the
// target errs it sets CleanupPending and retries with backoff; a rejection
// that a retry cannot change (permanent or refused credential) is reported
// as CleanupPending/CleanupRejected and re-checked rarely instead of in a
// backoff loop. Only when neither the Corpus nor a kept copy can reach the
// target does a run being deleted give up, with a Warning event, so a
// namespace deletion is never blocked forever.
func (r *CanaryRunReconciler) removeCanary(ctx context.Context, rc *runCtx, deleting bool) (ctrl.Result, bool, error) {
	run := rc.run
	defer r.zeroExposure(run)
	if run.Status.DocumentID == "" {
		if !r.mayHavePlanted(ctx, run) {
			return ctrl.Result{}, true, r.releaseCleanupRecipe(ctx, run)
		}
		// Planting's names wait for Sharing's write: the document may
		// exist under the ID the run derives.
		run.Status.DocumentID = DocumentID(run)
	}
	corpus, subject, err := r.cleanupTarget(ctx, rc)
	if p, user := target.IsUserProblem(err); user {
		if deleting {
			// Logged too: events are refused in a namespace being deleted.
			log.FromContext(ctx).Info("cleanup abandoned: the canary document may remain at the target",
				"document", run.Status.DocumentID, "reason", p.Reason)
			r.Recorder.Eventf(run, nil, "Warning", v1alpha1.ReasonCleanupAbandoned, "Cleanup",
				"canary document %s may remain at the target: %s", run.Status.DocumentID, p.Message)
			return ctrl.Result{}, true, r.releaseCleanupRecipe(ctx, run)
		}
		setCondition(run, v1alpha1.ConditionCleanupPending, metav1.ConditionTrue, p.Reason, p.Message)
		return ctrl.Result{RequeueAfter: waitRetry}, false, r.persist(ctx, rc)
	}
	if err != nil {
		return ctrl.Result{}, false, err
	}
	defer corpus.Release()
	err = removeDocumentAt(ctx, corpus, run, subject, r.cleanupRevoker(ctx, run))
	if err != nil && (driver.IsPermanent(err) || driver.IsUnauthorized(err)) {
		msg := fmt.Sprintf("the target rejected removing canary document %s: %v; fix the target or its credential (re-checked every %s)",
			run.Status.DocumentID, err, cleanupRecheck)
		if c := meta.FindStatusCondition(run.Status.Conditions, v1alpha1.ConditionCleanupPending); c == nil || c.Reason != v1alpha1.ReasonCleanupRejected {
			r.Recorder.Eventf(run, nil, "Warning", v1alpha1.ReasonCleanupRejected, "Cleanup", "%s", msg)
		}
		setCondition(run, v1alpha1.ConditionCleanupPending, metav1.ConditionTrue, v1alpha1.ReasonCleanupRejected, msg)
		return ctrl.Result{RequeueAfter: cleanupRecheck}, false, r.persist(ctx, rc)
	}
	if err != nil {
		setCondition(run, v1alpha1.ConditionCleanupPending, metav1.ConditionTrue, v1alpha1.ReasonCleanupFailed,
			fmt.Sprintf("removing canary document %s failed, retrying: %v", run.Status.DocumentID, err))
		if perr := r.persist(ctx, rc); perr != nil {
			log.FromContext(ctx).Error(perr, "persisting cleanup status")
		}
		return ctrl.Result{}, false, fmt.Errorf("cleanup: %w", err)
	}
	setCondition(run, v1alpha1.ConditionCleanupPending, metav1.ConditionFalse, v1alpha1.ReasonCleanedUp, "the canary document was removed from the target")
	return ctrl.Result{}, true, r.releaseCleanupRecipe(ctx, run)
}

// mayHavePlanted reports whether a run whose status names no document may
// still have planted one: its cleanup copy exists (planting keeps it before
// writing anything to the target), or cannot be read, which the cleanup
// path reports.
func (r *CanaryRunReconciler) mayHavePlanted(ctx context.Context, run *v1alpha1.CanaryRun) bool {
	kept, _, err := r.keptRecipe(ctx, run)
	return kept != nil || err != nil
}

// cleanupRecheck is how often a cleanup the target rejected is tried again.
const cleanupRecheck = 10 * time.Minute

// removeDocumentAt is removeDocument at a resolved corpus whose source may
// hold captures: they are restored first, and a run that never persisted
// any is looked up by its document ID where the source can, so a document
// whose creation the operator did not live to record is still removed, and
// one that was never created is not waited for.
func removeDocumentAt(ctx context.Context, corpus *target.Corpus, run *v1alpha1.CanaryRun, subject string, rev revocation.Revoker) error {
	restoreCaptures(run, corpus)
	if capturesOf(corpus) != nil && len(run.Status.SourceCaptures) == 0 {
		found, can, err := lookUp(ctx, corpus, run.Status.DocumentID)
		if err != nil {
			return err
		}
		if can && !found {
			return nil
		}
	}
	if err := removeDocument(ctx, corpus.Driver, run, subject, rev); err != nil {
		return err
	}
	keepCaptures(run, corpus)
	return nil
}

// removeDocument takes access away again (revocation may have been skipped
// by a failure) and deletes the document. Both are idempotent, and a target
// answering 404 (nothing there to remove) has nothing left to clean up.
func removeDocument(ctx context.Context, d driver.Driver, run *v1alpha1.CanaryRun, subject string, rev revocation.Revoker) error {
	// The strategy undoes every grant and membership it made (a rejection
	// such as "already gone" does not matter); the delete below is what
	// must succeed.
	if s, err := strategyOf(run); err == nil {
		if err := s.Undo(ctx, d, canaryOf(run, subject, rev)); err != nil {
			return err
		}
	}
	if err := d.DeleteDocument(ctx, run.Status.DocumentID); err != nil && !revocation.IsNotFound(err) {
		return err
	}
	return nil
}

// cleanupRevoker restores a RevokeCredential run's persona client at
// cleanup: nil for other methods, and when the Persona is gone or declares
// no revocation any more (its client then stays as the run left it,
// which the log says).
func (r *CanaryRunReconciler) cleanupRevoker(ctx context.Context, run *v1alpha1.CanaryRun) revocation.Revoker {
	if revocationMethod(run) != v1alpha1.RevokeCredential || run.Status.RevokeRequestedTime == nil {
		return nil
	}
	var p v1alpha1.Persona
	err := r.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: run.Spec.PersonaRef.Name}, &p)
	var rev *target.CredentialRevoker
	if err == nil {
		rev, err = r.Door.CredentialRevoker(ctx, &p)
	}
	if err != nil || rev == nil {
		log.FromContext(ctx).Info("cleanup cannot restore the persona's OAuth2 client: restore it at its authorization server",
			"persona", run.Spec.PersonaRef.Name, "reason", fmt.Sprint(err))
		return nil
	}
	return rev
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

// zeroExposure deletes the live exposure gauge of a run that stops probing.
func (r *CanaryRunReconciler) zeroExposure(run *v1alpha1.CanaryRun) {
	if run.Status.RevokeAcknowledgedTime == nil {
		return
	}
	for _, s := range probingSurfaces(run) {
		metrics.ClearLiveExposure(metricsRun(run), string(s))
	}
}

func (r *CanaryRunReconciler) addFinalizer(ctx context.Context, rc *runCtx) error {
	if controllerutil.ContainsFinalizer(rc.run, v1alpha1.FinalizerCanaryRun) {
		return nil
	}
	return r.patchFinalizers(ctx, rc, controllerutil.AddFinalizer)
}

func (r *CanaryRunReconciler) removeFinalizer(ctx context.Context, rc *runCtx) error {
	if !controllerutil.ContainsFinalizer(rc.run, v1alpha1.FinalizerCanaryRun) {
		return nil
	}
	return client.IgnoreNotFound(r.patchFinalizers(ctx, rc, controllerutil.RemoveFinalizer))
}

// patchFinalizers changes only metadata.finalizers. The reply replaces the
// in-memory object with the stored one; status changes not yet persisted
// (a step that persists with the next) are kept on top of it.
func (r *CanaryRunReconciler) patchFinalizers(ctx context.Context, rc *runCtx, change func(client.Object, string) bool) error {
	base := rc.run.DeepCopy()
	pending := rc.run.Status.DeepCopy()
	change(rc.run, v1alpha1.FinalizerCanaryRun)
	// A NotFound is returned, not ignored: plant must not write a document
	// for a run that is already gone.
	if err := r.Patch(ctx, rc.run, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	rc.before = rc.run.DeepCopy()
	rc.run.Status = *pending
	return nil
}

func corpusName(run *v1alpha1.CanaryRun) types.NamespacedName {
	return types.NamespacedName{Namespace: run.Namespace, Name: run.Spec.CorpusRef.Name}
}
