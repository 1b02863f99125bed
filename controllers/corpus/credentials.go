package corpus

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/target"
)

// checkPersonaCredentials refuses a corpus whose surfaces write any
// Persona's credential of its namespace into a URL, query value, body or
// static header (target.Corpus.GuardCredential): sent with another
// persona's probe, it would measure the wrong persona. A Persona whose
// credential cannot be read (missing or unlabelled Secret) has none the
// operator could send and is passed over; a transient failure is returned.
// Runs check their own personas again when they resolve them.
func (r *CorpusReconciler) checkPersonaCredentials(ctx context.Context, corpus *v1alpha1.Corpus, resolved *target.Corpus) error {
	if corpus.Spec.Surfaces == nil || corpus.Spec.Surfaces.Search == nil {
		return nil
	}
	var personas v1alpha1.PersonaList
	if err := r.List(ctx, &personas, client.InNamespace(corpus.Namespace)); err != nil {
		return fmt.Errorf("listing personas: %w", err)
	}
	for i := range personas.Items {
		_, err := r.Door.PersonaFor(ctx, resolved, &personas.Items[i])
		if p, user := target.IsUserProblem(err); user && p.Reason != v1alpha1.ReasonInvalidSurface {
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}
