package suite

import (
	"context"
	"errors"
	"fmt"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/corpusdriver"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/scoring"
)

// TargetSource is where a Target's parts come from. The SuiteRun controller
// and the CLI's live mode differ only here (API server or manifest files,
// shared or private rate limiter), so the target they execute against is
// assembled by one function.
type TargetSource struct {
	// Drivers builds the corpus driver.
	Drivers corpusdriver.Factory
	// Credential reads a persona's credential Secret key.
	Credential func(ctx context.Context, namespace string, ref v1alpha1.SecretKeyReference) ([]byte, error)
	// Wait blocks for the corpus's rate limiter before each call.
	Wait func(context.Context) error
}

// TargetError names the Corpus or Persona a target could not be built for;
// Err keeps its cause (a *secretref.Problem, *corpusdriver.ConfigError or a
// transient error) for the caller to classify.
type TargetError struct {
	Kind, Name string
	Err        error
}

func (e *TargetError) Error() string { return fmt.Sprintf("%s %q: %v", e.Kind, e.Name, e.Err) }

func (e *TargetError) Unwrap() error { return e.Err }

// BuildTarget assembles what Execute needs for a suite: the corpus driver,
// every persona's credential, the rate limiter, the corpus's per-call
// timeout, the depth (k, else the suite's, else the default) and parallelism.
func BuildTarget(ctx context.Context, src TargetSource, s *v1alpha1.EvalSuite, def *Definition, k int) (Target, error) {
	d, err := src.Drivers.ForCorpus(ctx, def.Corpus)
	if err != nil {
		return Target{}, &TargetError{Kind: "Corpus", Name: def.Corpus.Name, Err: err}
	}
	tokens := make(map[string]driver.Token, len(def.Personas))
	for name, p := range def.Personas {
		value, err := src.Credential(ctx, p.Namespace, p.Spec.CredentialSecretRef)
		if err != nil {
			return Target{}, &TargetError{Kind: "Persona", Name: name, Err: err}
		}
		tokens[name] = driver.Token(value)
	}
	if k <= 0 {
		k = int(s.Spec.K)
	}
	if k <= 0 {
		k = scoring.DefaultK
	}
	return Target{
		Searcher:    d,
		Answerer:    d,
		Tokens:      tokens,
		Wait:        src.Wait,
		Timeout:     corpusdriver.Timeout(def.Corpus),
		K:           k,
		Parallelism: int(max(s.Spec.Parallelism, 1)),
	}, nil
}

// IsTargetError reports whether err came from BuildTarget naming an object.
func IsTargetError(err error) (*TargetError, bool) {
	var te *TargetError
	ok := errors.As(err, &te)
	return te, ok
}
