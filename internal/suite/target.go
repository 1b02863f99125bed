package suite

import (
	"context"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/scoring"
	"github.com/ragcanary/ragcanary/internal/target"
)

// BuildTarget resolves what Execute needs through the door: the corpus
// driver and rate limiter, every persona's credential, the depth (k, else
// the suite's, else the default) and parallelism. The SuiteRun controller
// and the CLI's live mode differ only in the door they pass (API server or
// manifest files, shared or private limiters). A failure is a
// *target.Problem naming the Corpus or Persona.
func BuildTarget(ctx context.Context, door *target.Door, s *v1alpha1.EvalSuite, def *Definition, k int) (Target, error) {
	corpus, err := door.Corpus(ctx, def.Corpus)
	if err != nil {
		return Target{}, target.Named("Corpus", def.Corpus.Name, err)
	}
	tokens := make(map[string]driver.Token, len(def.Personas))
	for name, p := range def.Personas {
		resolved, err := door.PersonaFor(ctx, corpus, p)
		if err != nil {
			return Target{}, err
		}
		tokens[name] = resolved.Token
	}
	if k <= 0 {
		k = int(s.Spec.K)
	}
	if k <= 0 {
		k = scoring.DefaultK
	}
	return Target{
		Searcher:    corpus.Driver,
		Answerer:    corpus.Driver,
		Tokens:      tokens,
		Wait:        corpus.Wait,
		K:           k,
		Parallelism: int(max(s.Spec.Parallelism, 1)),
	}, nil
}
