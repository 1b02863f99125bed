package canaryrun

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ragcanary/ragcanary/controllers/shared"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/revocation"
	"github.com/ragcanary/ragcanary/internal/target"
)

// Policy for a reference a run cannot resolve (a missing Corpus, Persona or
// credential, an unlabelled Secret, a URL outside the allowlist): the run
// waits with a Waiting condition and re-checks periodically instead of
// failing at once, because objects are often applied in any order. Only the
// phase deadlines turn a wait into a verdict: a run still setting up after
// its visibility timeout is SetupFailed; during exclusion, the exclusion
// timeout decides with what was measured (Inconclusive when nothing was).

// runDeps are the resolved references of a run. Tokens are secrets. The
// step that resolved them releases them (release) when it is done.
type runDeps struct {
	corpus   *target.Corpus
	persona  target.Persona
	controls []target.Persona
	// done ends a step's hold on a reconcile's resolution (resolveRefs);
	// nil for the reconcile's own, which releases the corpus.
	done func()
}

func (d *runDeps) release() {
	if d.done != nil {
		d.done()
		return
	}
	d.corpus.Release()
}

// resolveCorpus reads the corpus and resolves it through the door; the
// caller releases it. Errors are *target.Problem (Waiting or Stalled) or
// transient API errors.
func (r *CanaryRunReconciler) resolveCorpus(ctx context.Context, run *v1alpha1.CanaryRun) (*target.Corpus, error) {
	var corpus v1alpha1.Corpus
	err := r.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: run.Spec.CorpusRef.Name}, &corpus)
	if apierrors.IsNotFound(err) {
		return nil, target.Wait(v1alpha1.ReasonCorpusNotFound, "Corpus %q not found", run.Spec.CorpusRef.Name)
	}
	if err != nil {
		return nil, err
	}
	c, err := r.Door.Corpus(ctx, &corpus)
	if err != nil {
		return nil, target.Named("Corpus", corpus.Name, err)
	}
	return c, nil
}

// resolveRefs resolves the corpus, pinned to the target the run planted
// in (resolvePlanted), the persona and every control persona with their
// credentials; the caller releases them. The steps of one reconcile share
// one resolution: each resolution reads several Secrets straight from the
// API server, and at 10,000 runs starting together those reads were as
// many requests as all the writes (make bench-canaries). A failed
// resolution is not kept; the next step tries again.
func (r *CanaryRunReconciler) resolveRefs(ctx context.Context, rc *runCtx) (*runDeps, error) {
	if rc.refs == nil {
		deps, err := r.resolveRefsOnce(ctx, rc)
		if err != nil {
			return nil, err
		}
		rc.refs = deps
	}
	step := *rc.refs
	step.done = rc.refs.corpus.Hold()
	return &step, nil
}

// releaseRefs ends the reconcile's hold on its resolution.
func (rc *runCtx) releaseRefs() {
	if rc.refs != nil {
		rc.refs.release()
		rc.refs = nil
	}
}

func (r *CanaryRunReconciler) resolveRefsOnce(ctx context.Context, rc *runCtx) (*runDeps, error) {
	c, err := r.resolvePlanted(ctx, rc)
	if err != nil {
		return nil, err
	}
	deps, err := r.resolvePersonas(ctx, rc.run, c)
	if err != nil {
		c.Release()
		return nil, err
	}
	restoreCaptures(rc.run, c)
	return deps, nil
}

func (r *CanaryRunReconciler) resolvePersonas(ctx context.Context, run *v1alpha1.CanaryRun, c *target.Corpus) (*runDeps, error) {
	deps := &runDeps{corpus: c}
	var err error
	// Once a credential revocation is requested, the probed persona's
	// token may be refused: that is the measurement, not a missing
	// reference.
	revoked := revocationMethod(run) == v1alpha1.RevokeCredential && run.Status.RevokeRequestedTime != nil
	if deps.persona, err = r.resolvePersonaAs(ctx, c, run.Namespace, run.Spec.PersonaRef.Name, revoked); err != nil {
		return nil, err
	}
	for _, ref := range run.Spec.ControlPersonaRefs {
		p, err := r.resolvePersona(ctx, c, run.Namespace, ref.Name)
		if err != nil {
			return nil, err
		}
		deps.controls = append(deps.controls, p)
	}
	for _, p := range append([]target.Persona{deps.persona}, deps.controls...) {
		if c.Object == nil {
			break // a corpus rebuilt from a run's recipe to clean up: nothing is probed
		}
		if err := target.CheckTokenAudience(&c.Object.Spec, p.Object, requestedSurfaces(run)); err != nil {
			return nil, err
		}
	}
	return deps, nil
}

func (r *CanaryRunReconciler) resolvePersona(ctx context.Context, corpus *target.Corpus, ns, name string) (target.Persona, error) {
	return r.resolvePersonaAs(ctx, corpus, ns, name, false)
}

// resolvePersonaAs resolves a persona; revoked resolves the probed persona
// of a RevokeCredential run past its revocation, without a token now.
func (r *CanaryRunReconciler) resolvePersonaAs(ctx context.Context, corpus *target.Corpus, ns, name string, revoked bool) (target.Persona, error) {
	var p v1alpha1.Persona
	err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &p)
	if apierrors.IsNotFound(err) {
		return target.Persona{}, target.Wait(v1alpha1.ReasonPersonaNotFound, "Persona %q not found", name)
	}
	if err != nil {
		return target.Persona{}, err
	}
	if revoked {
		return r.Door.RevokedPersona(ctx, &p)
	}
	return r.Door.PersonaFor(ctx, corpus, &p)
}

// capabilities are what the target supports: as the corpus status last
// reported them, or asked of the target while the corpus has not been
// checked yet, so a run created together with its corpus is checked too.
// A target that cannot be asked makes the run wait.
func (r *CanaryRunReconciler) capabilities(ctx context.Context, deps *runDeps) (*v1alpha1.CorpusCapabilities, error) {
	if caps := deps.corpus.Object.Status.Capabilities; caps != nil {
		return caps, nil
	}
	caps, err := deps.corpus.Driver.Capabilities(ctx)
	if err != nil {
		// Driver errors are sanitized: operation, kind and status code only.
		return nil, target.Wait(v1alpha1.ReasonUnreachable,
			"Corpus %q: capabilities check failed: %v", deps.corpus.Object.Name, err)
	}
	if err := target.CheckCapabilities(caps); err != nil {
		return nil, target.Named("Corpus", deps.corpus.Object.Name, err)
	}
	return shared.ToCorpusCapabilities(caps), nil
}

// setupProblem reports a configuration that cannot produce a valid
// measurement on a target with caps, or "" when there is none.
func setupProblem(run *v1alpha1.CanaryRun, deps *runDeps, caps *v1alpha1.CorpusCapabilities) string {
	if msg := target.SurfaceProblem(deps.corpus.Object.Name, requestedSurfaces(run), deps.corpus.Object.Spec.Surfaces, caps); msg != "" {
		return msg
	}
	if msg := conversationProblem(run, deps); msg != "" {
		return msg
	}
	s, err := strategyOf(run)
	if err != nil {
		return err.Error()
	}
	if m := s.Needs(); !slices.Contains(caps.RevocationMethods, m) {
		return fmt.Sprintf("Corpus %q does not support revocation method %s (it supports %s)",
			deps.corpus.Object.Name, m, methodList(caps.RevocationMethods))
	}
	if s.Method() == v1alpha1.RevokeCredential && deps.corpus.Object.Spec.Driver.Type == v1alpha1.DriverPostgres {
		return fmt.Sprintf("Corpus %q is a Postgres corpus, which names the persona by subject and sends no credential: a RevokeCredential canary has nothing to revoke there", deps.corpus.Object.Name)
	}
	// A control persona the canary itself would grant (same subject, or a
	// member of the revocation group) makes no valid isolation test.
	persona := revocation.Control{Name: deps.persona.Object.Name, Subject: deps.persona.Object.Spec.Subject}
	controls := make([]revocation.Control, len(deps.controls))
	for i, c := range deps.controls {
		controls[i] = revocation.Control{Name: c.Object.Name, Subject: c.Object.Spec.Subject, Groups: c.Object.Spec.Groups}
	}
	return s.Problem(canaryOf(run, persona.Subject, revokerOf(deps.persona.Revoker)), persona, controls)
}

func methodList(ms []v1alpha1.RevocationMethod) string {
	if len(ms) == 0 {
		return "none"
	}
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m)
	}
	return strings.Join(out, ", ")
}
