package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/corpusdriver"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/secretref"
)

// waiting is a user-fixable reason a run cannot proceed: a missing Corpus,
// Persona or credential. Policy: a run waits with a Waiting condition and
// re-checks periodically instead of failing at once, because objects are
// often applied in any order. Only the phase deadlines turn a wait into a
// verdict: a run still Pending after its visibility timeout, or not visible
// by then, is SetupFailed; during exclusion, the exclusion timeout decides
// with what was measured (Inconclusive when nothing was).
type waiting struct {
	reason  string
	message string
}

// runDeps are the resolved references of a run. Tokens are secrets.
type runDeps struct {
	corpus   *v1alpha1.Corpus
	driver   driver.Driver
	persona  *v1alpha1.Persona
	token    driver.Token
	controls []controlPersona
}

type controlPersona struct {
	persona *v1alpha1.Persona
	token   driver.Token
}

// resolveDriver reads the corpus and builds its driver.
func (r *CanaryRunReconciler) resolveDriver(ctx context.Context, run *v1alpha1.CanaryRun) (*runDeps, *waiting, error) {
	var corpus v1alpha1.Corpus
	err := r.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: run.Spec.CorpusRef.Name}, &corpus)
	if apierrors.IsNotFound(err) {
		return nil, &waiting{ReasonCorpusNotFound, fmt.Sprintf("Corpus %q not found", run.Spec.CorpusRef.Name)}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	d, err := r.Drivers.ForCorpus(ctx, &corpus)
	if reason, msg, ok := corpusdriver.IsUserProblem(err); ok {
		return nil, &waiting{reason, fmt.Sprintf("Corpus %q: %s", corpus.Name, msg)}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return &runDeps{corpus: &corpus, driver: d}, nil, nil
}

// resolveRefs resolves the corpus, the persona and every control persona
// with their credentials.
func (r *CanaryRunReconciler) resolveRefs(ctx context.Context, run *v1alpha1.CanaryRun) (*runDeps, *waiting, error) {
	deps, w, err := r.resolveDriver(ctx, run)
	if w != nil || err != nil {
		return nil, w, err
	}
	deps.persona, deps.token, w, err = r.resolvePersona(ctx, run.Namespace, run.Spec.PersonaRef.Name)
	if w != nil || err != nil {
		return nil, w, err
	}
	for _, ref := range run.Spec.ControlPersonaRefs {
		p, tok, w, err := r.resolvePersona(ctx, run.Namespace, ref.Name)
		if w != nil || err != nil {
			return nil, w, err
		}
		deps.controls = append(deps.controls, controlPersona{persona: p, token: tok})
	}
	return deps, nil, nil
}

func (r *CanaryRunReconciler) resolvePersona(ctx context.Context, ns, name string) (*v1alpha1.Persona, driver.Token, *waiting, error) {
	var p v1alpha1.Persona
	err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &p)
	if apierrors.IsNotFound(err) {
		return nil, "", &waiting{ReasonPersonaNotFound, fmt.Sprintf("Persona %q not found", name)}, nil
	}
	if err != nil {
		return nil, "", nil, err
	}
	cred, err := secretref.Resolve(ctx, r.APIReader, ns, p.Spec.CredentialSecretRef)
	var problem *secretref.Problem
	if errors.As(err, &problem) {
		return nil, "", &waiting{problem.Reason, fmt.Sprintf("Persona %q: %s", name, problem.Message)}, nil
	}
	if err != nil {
		return nil, "", nil, err
	}
	return &p, driver.Token(cred), nil, nil
}

// capabilities are what the target supports: as the corpus status last
// reported them, or asked of the target while the corpus has not been
// checked yet, so a run created together with its corpus is checked too.
// A target that cannot be asked makes the run wait.
func (r *CanaryRunReconciler) capabilities(ctx context.Context, deps *runDeps) (*v1alpha1.CorpusCapabilities, *waiting) {
	if caps := deps.corpus.Status.Capabilities; caps != nil {
		return caps, nil
	}
	var caps driver.Capabilities
	err := r.call(ctx, deps, func(ctx context.Context) error {
		var err error
		caps, err = deps.driver.Capabilities(ctx)
		return err
	})
	if err != nil {
		// Driver errors are sanitized: operation, kind and status code only.
		return nil, &waiting{v1alpha1.ReasonUnreachable,
			fmt.Sprintf("Corpus %q: capabilities check failed: %v", deps.corpus.Name, err)}
	}
	return toCorpusCapabilities(caps), nil
}

// setupProblem reports a configuration that cannot produce a valid
// measurement on a target with caps, or "" when there is none.
func setupProblem(run *v1alpha1.CanaryRun, deps *runDeps, caps *v1alpha1.CorpusCapabilities) string {
	if slices.Contains(probingSurfaces(run), v1alpha1.SurfaceAnswer) && !caps.AnswerSurface {
		return fmt.Sprintf("Corpus %q has no answer surface; remove Answer from probing.surfaces", deps.corpus.Name)
	}
	if m := revocationMethod(run); !slices.Contains(caps.RevocationMethods, m) {
		return fmt.Sprintf("Corpus %q does not support revocation method %s (it supports %s)",
			deps.corpus.Name, m, methodList(caps.RevocationMethods))
	}
	for _, c := range deps.controls {
		// A control persona sharing the subject or the revocation group would
		// be granted access by the canary itself: no valid isolation test.
		if c.persona.Spec.Subject == deps.persona.Spec.Subject {
			return fmt.Sprintf("control Persona %q has the same subject as the probed persona", c.persona.Name)
		}
		if g := run.Spec.Revocation.Group; revocationMethod(run) == v1alpha1.RevokeRemoveFromGroup &&
			slices.Contains(c.persona.Spec.Groups, g) {
			return fmt.Sprintf("control Persona %q is a member of the revocation group %q", c.persona.Name, g)
		}
	}
	return ""
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
