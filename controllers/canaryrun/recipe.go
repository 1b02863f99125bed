package canaryrun

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/target"
)

// A run keeps a copy of what cleanup needs — the corpus's driver spec, its
// source credential and the persona's subject — in a Secret it owns, held by
// a finalizer until the run's cleanup is done. The document can then always
// be removed, even when the Corpus, its Secret or the Persona are deleted
// first, as a namespace deletion does in any order. The copy is made before
// anything is written to the target and released after the document is gone.
const (
	recipeSecretSuffix = "-cleanup"
	recipeKey          = "recipe.json"
	recipeSubjectKey   = "subject"
	// RecipeFinalizer holds the cleanup copy until the run no longer needs it.
	RecipeFinalizer = "ragcanary.dev/cleanup-credential"
)

// RecipeSecretName is "<run>-cleanup", shortened with a hash when needed.
func RecipeSecretName(run *v1alpha1.CanaryRun) string {
	name := run.Name
	if len(name)+len(recipeSecretSuffix) > 253 {
		sum := sha256.Sum256([]byte(name))
		name = name[:253-len(recipeSecretSuffix)-9] + "-" + hex.EncodeToString(sum[:4])
	}
	return name + recipeSecretSuffix
}

// keepCleanupRecipe creates or refreshes the run's cleanup copy. It
// creates first and reads only when the Secret exists (a restart after an
// earlier attempt): a new run's planting then costs no Secret read.
func (r *CanaryRunReconciler) keepCleanupRecipe(ctx context.Context, run *v1alpha1.CanaryRun, deps *runDeps) error {
	// The copy pins what the corpus's names resolve to now (an OpenFGA
	// store name), so every later step writes where this one did.
	recipe, err := deps.corpus.PinnedRecipe(ctx)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(recipe)
	if err != nil {
		return err
	}
	data := map[string][]byte{recipeKey: raw, recipeSubjectKey: []byte(deps.persona.Object.Spec.Subject)}
	key := types.NamespacedName{Namespace: run.Namespace, Name: RecipeSecretName(run)}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: key.Namespace, Name: key.Name,
			Labels:     runSecretLabels(run),
			Finalizers: []string{RecipeFinalizer},
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
	if err := controllerutil.SetControllerReference(run, secret, r.Scheme()); err != nil {
		return err
	}
	if err := r.wroteSecret(secret, r.Create(ctx, secret)); !apierrors.IsAlreadyExists(err) {
		return err
	}
	var existing corev1.Secret
	if err := r.APIReader.Get(ctx, key, &existing); err != nil {
		return err
	}
	if !metav1.IsControlledBy(&existing, run) {
		return target.Stall("CleanupSecretTaken", "Secret %q exists and is not owned by this run; delete or rename it", key.Name)
	}
	labels, relabel := withRunSecretLabels(existing.Labels, run)
	if sameData(existing.Data, data) && controllerutil.ContainsFinalizer(&existing, RecipeFinalizer) && !relabel {
		return nil
	}
	existing.Data, existing.Labels = data, labels
	controllerutil.AddFinalizer(&existing, RecipeFinalizer)
	return r.wroteSecret(&existing, r.Update(ctx, &existing))
}

// secretWrites is the Secret value cache's side for writers.
type secretWrites interface {
	Remember(*corev1.Secret)
	Forget(types.NamespacedName)
}

// wroteSecret keeps the Secret value cache in step with a write of secret
// and returns err: the written version, as the API server returned it,
// when the write succeeded (the next read is then served from memory once
// the metadata informer shows that version), nothing when it failed.
func (r *CanaryRunReconciler) wroteSecret(secret *corev1.Secret, err error) error {
	if c, ok := r.Secrets.(secretWrites); ok {
		if err == nil {
			c.Remember(secret)
		} else {
			c.Forget(client.ObjectKeyFromObject(secret))
		}
	}
	return err
}

func sameData(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// cleanupTarget is how cleanup reaches the target: where the document was
// planted. The run's kept copy says where that is; the live Corpus is used
// only while it still names the same target (its credential may be newer),
// so a Corpus pointed elsewhere since never makes cleanup delete at the wrong
// place and report the document gone. Without a copy (a run planted by an
// earlier build) the live Corpus is all there is. subject is the persona's,
// "" when neither knows it. The caller releases the corpus.
func (r *CanaryRunReconciler) cleanupTarget(ctx context.Context, rc *runCtx) (*target.Corpus, string, error) {
	run := rc.run
	subject := r.personaSubject(ctx, run)
	kept, keptSubject, err := r.keptRecipe(ctx, run)
	if err != nil {
		return nil, "", err
	}
	if subject == "" {
		subject = keptSubject
	}
	live, liveErr := r.resolveCorpus(ctx, run)
	if liveErr == nil && (kept == nil || live.PinTo(*kept)) {
		return live, subject, nil
	}
	if liveErr == nil {
		r.noteTargetChanged(rc, live, *kept, nil)
		live.Release()
	}
	if kept == nil {
		return nil, "", liveErr
	}
	if _, user := target.IsUserProblem(liveErr); liveErr != nil && !user {
		return nil, "", liveErr
	}
	c, err := r.Door.FromRecipe(run.Namespace, run.Spec.CorpusRef.Name, *kept)
	if err != nil {
		return nil, "", target.Named("kept copy of Corpus", run.Spec.CorpusRef.Name, err)
	}
	return c, subject, nil
}

// resolvePlanted resolves the run's corpus, pinned from planting on to the
// target its kept copy names: the live Corpus while it names that target,
// the kept copy when it names another. The share, every probe, the
// revocation and cleanup then reach where the canary is, also after a
// restart (the copy outlives the operator), and another target's silence
// is never read as exclusion. A run without a copy (not planted yet, or
// planted by an earlier build) uses the live Corpus. When the copy cannot
// reach the planted target the error is a *targetChangedError. The caller
// releases the corpus.
func (r *CanaryRunReconciler) resolvePlanted(ctx context.Context, rc *runCtx) (*target.Corpus, error) {
	live, err := r.resolveCorpus(ctx, rc.run)
	if err != nil {
		return nil, err
	}
	kept, _, err := r.keptRecipe(ctx, rc.run)
	if err != nil {
		live.Release()
		return nil, err
	}
	if kept == nil || live.PinTo(*kept) {
		return live, nil
	}
	defer live.Release()
	planted, err := r.keptCorpus(rc.run, live.Object, *kept)
	r.noteTargetChanged(rc, live, *kept, err)
	if p, user := target.IsUserProblem(err); user {
		return nil, &targetChangedError{problem: p}
	}
	return planted, err
}

// keptCorpus rebuilds the planted target from the run's kept copy. Its
// object is the live Corpus (SLOs, probing, limits) with the kept driver
// and backend; the live status describes another target and is dropped.
func (r *CanaryRunReconciler) keptCorpus(run *v1alpha1.CanaryRun, live *v1alpha1.Corpus, kept target.Recipe) (*target.Corpus, error) {
	c, err := r.Door.FromRecipe(run.Namespace, run.Spec.CorpusRef.Name, kept)
	if err != nil {
		return nil, target.Named("kept copy of Corpus", run.Spec.CorpusRef.Name, err)
	}
	obj := live.DeepCopy()
	obj.Spec.Driver, obj.Spec.Permissions, obj.Spec.RateLimit = *kept.Driver.DeepCopy(), kept.Permissions.DeepCopy(), kept.RateLimit
	obj.Status = v1alpha1.CorpusStatus{}
	c.Object = obj
	return c, nil
}

// targetChangedError: the Corpus names another target and the kept copy
// cannot reach the planted one, so nothing the run could still observe is
// about its canary.
type targetChangedError struct{ problem *target.Problem }

func (e *targetChangedError) Error() string {
	return "the Corpus now names another target than the one the canary was planted in, and the run's kept copy cannot reach " +
		"the planted target (" + e.problem.Message + "); no probe of another target counts as exclusion"
}

// noteTargetChanged sets v1alpha1.ConditionTargetChanged and sends the Warning
// event, once per run: the condition, persisted with the step, remembers
// across restarts that it was sent. keptErr is why the kept copy cannot be
// used, nil when it is.
func (r *CanaryRunReconciler) noteTargetChanged(rc *runCtx, live *target.Corpus, kept target.Recipe, keptErr error) {
	if meta.IsStatusConditionTrue(rc.run.Status.Conditions, v1alpha1.ConditionTargetChanged) {
		return
	}
	msg := fmt.Sprintf("Corpus %q now names %s; the canary was planted in %s, ", rc.run.Spec.CorpusRef.Name,
		identityText(live.Identity()), identityText(kept.Identity()))
	if keptErr != nil {
		msg += "which the run's kept copy cannot reach: " + target.AsProblem(keptErr).Message
	} else {
		msg += "where the run keeps probing and cleaning up through its kept copy"
	}
	setCondition(rc.run, v1alpha1.ConditionTargetChanged, metav1.ConditionTrue, v1alpha1.ReasonTargetChanged, msg)
	r.Recorder.Eventf(rc.run, nil, "Warning", v1alpha1.ReasonTargetChanged, "Resolve", "%s", msg)
}

// identityText shows a target identity, or says it cannot be read.
func identityText(id target.TargetIdentity, err error) string {
	if err != nil {
		return "a target whose configuration cannot be read"
	}
	return id.String()
}

// keptRecipe reads the run's cleanup copy; nil when the run has none. It
// is read at every reconcile and written only while planting, so it is
// read through the Secret value cache, which keepCleanupRecipe's writes
// invalidate.
func (r *CanaryRunReconciler) keptRecipe(ctx context.Context, run *v1alpha1.CanaryRun) (*target.Recipe, string, error) {
	var secret corev1.Secret
	err := r.Secrets.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: RecipeSecretName(run)}, &secret)
	if apierrors.IsNotFound(err) || (err == nil && !metav1.IsControlledBy(&secret, run)) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	var recipe target.Recipe
	if jerr := json.Unmarshal(secret.Data[recipeKey], &recipe); jerr != nil {
		return nil, "", target.Stall("CleanupSecretInvalid", "Secret %q does not hold a readable cleanup copy", secret.Name)
	}
	return &recipe, string(secret.Data[recipeSubjectKey]), nil
}

// releaseCleanupRecipe lets the run's cleanup copy go: the finalizer comes
// off and the Secret is deleted (it would go with the run anyway).
func (r *CanaryRunReconciler) releaseCleanupRecipe(ctx context.Context, run *v1alpha1.CanaryRun) error {
	var secret corev1.Secret
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: RecipeSecretName(run)}, &secret)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !metav1.IsControlledBy(&secret, run) {
		return nil
	}
	if c, ok := r.Secrets.(secretWrites); ok {
		defer c.Forget(client.ObjectKeyFromObject(&secret))
	}
	if controllerutil.ContainsFinalizer(&secret, RecipeFinalizer) {
		base := secret.DeepCopy()
		controllerutil.RemoveFinalizer(&secret, RecipeFinalizer)
		if err := r.Patch(ctx, &secret, client.MergeFrom(base)); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return client.IgnoreNotFound(r.Delete(ctx, &secret))
}
