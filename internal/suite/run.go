package suite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/scoring"
	"github.com/ragcanary/ragcanary/internal/target"
)

// SetupError is a fixture that could not be planted or did not become
// visible: the run evaluated nothing and says why.
type SetupError struct {
	Reason string
	Err    error
}

func (e *SetupError) Error() string { return e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

// visibilityPoll is the pause between visibility rounds.
const visibilityPoll = 500 * time.Millisecond

// Pause waits d or until ctx ends: the default pace of visibility rounds.
func Pause(d time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Run is one plan executed against a corpus: the cluster and live mode both
// call RunPlan with it, so they produce the same report for the same plan.
type Run struct {
	Plan   *Plan
	Target Target
	// Source plants and removes the fixture: the corpus driver.
	Source PlantTarget
	// Prefix scopes the fixture's IDs to this run.
	Prefix string
	// Pause paces visibility rounds; nil uses a 500 ms timer.
	Pause func(context.Context) error
	// Corpus is the corpus as seen, recorded in the evidence.
	Corpus *scoring.CorpusSnapshot
}

// RunPlan plants the fixture (if any), waits until it is visible, executes
// every job and scores them, and removes the fixture afterwards whatever
// happened. setup is a *SetupError when the fixture could not be used (no
// result then); cleanup is the removal's failure, reported apart so a
// scored run keeps its result while removal is retried; err is anything
// else (ctx ended), with nothing scored.
func RunPlan(ctx context.Context, r Run) (res Result, cleanup, err error) {
	f, err := r.Plan.LoadFixture()
	if err != nil {
		return Result{}, nil, err
	}
	t := r.Target
	var scope *Scope
	if f != nil {
		scope = NewScope(f, r.Prefix)
		t.Scope = scope
		defer func() {
			// Removal outlives a cancelled run context, bounded on its own.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), removalTimeout(f))
			defer cancel()
			cleanup = scope.Remove(rctx, r.Source, t.Wait)
		}()
		if err := plantAndAwait(ctx, r, scope, f, t); err != nil {
			return Result{}, nil, err
		}
	}
	execs, err := Execute(ctx, t, r.Plan)
	if err != nil {
		return Result{}, nil, err
	}
	res, err = Score(r.Plan, execs, r.Corpus)
	return res, nil, err
}

func plantAndAwait(ctx context.Context, r Run, scope *Scope, f *Fixture, t Target) error {
	if err := scope.Plant(ctx, r.Source, t.Wait); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &SetupError{Reason: v1alpha1.ReasonFixturePlantFailed, Err: fmt.Errorf("%s", sanitized(err))}
	}
	pause := r.Pause
	if pause == nil {
		pause = Pause(visibilityPoll)
	}
	err := scope.AwaitVisible(ctx, t.Searcher, t.Wait, checkers(r.Plan, t), f.VisibilityTimeout, pause)
	if errors.Is(err, ErrFixtureNotVisible) {
		return &SetupError{Reason: v1alpha1.ReasonFixtureNotVisible, Err: err}
	}
	return err
}

// sanitized is a planting error's safe text: a *driver.Error's own (no
// credentials, no bodies by contract), else a fixed phrase.
func sanitized(err error) string {
	var de *driver.Error
	if errors.As(err, &de) {
		return "planting the fixture failed: " + de.Error()
	}
	return "planting the fixture failed"
}

// removalTimeout bounds removal: a few calls' worth per planted object.
func removalTimeout(f *Fixture) time.Duration {
	n := len(f.Documents)
	for _, g := range f.Groups {
		n += len(g.Members)
	}
	return time.Minute + time.Duration(n)*5*time.Second
}

func checkers(p *Plan, t Target) []Checker {
	var out []Checker
	for _, ps := range p.Personas {
		if tok, ok := t.Tokens[ps.Name]; ok {
			out = append(out, Checker{Reader: Reader{Subject: ps.Subject, Groups: ps.Groups}, Token: tok})
		}
	}
	return out
}

// BuildTarget resolves what Execute needs through the door: the corpus
// driver and rate limiter and every persona's credential, at the plan's
// depth and parallelism; it also returns the resolved corpus (its driver
// plants and removes the fixture). The SuiteRun controller and the CLI's live mode
// differ only in the door they pass (API server or manifest files, shared
// or private limiters). A failure is a *target.Problem naming the Corpus
// or Persona. The caller releases the corpus.
func BuildTarget(ctx context.Context, door *target.Door, plan *Plan, corpusObj *v1alpha1.Corpus, personas map[string]*v1alpha1.Persona) (Target, *target.Corpus, error) {
	corpus, err := door.Corpus(ctx, corpusObj)
	if err != nil {
		return Target{}, nil, target.Named("Corpus", corpusObj.Name, err)
	}
	tokens := make(map[string]driver.Token, len(personas))
	for name, p := range personas {
		resolved, err := door.PersonaFor(ctx, corpus, p)
		if err != nil {
			corpus.Release()
			return Target{}, nil, err
		}
		tokens[name] = resolved.Token
	}
	return Target{
		Searcher:    corpus.Driver,
		Answerer:    corpus.Driver,
		Tokens:      tokens,
		Wait:        corpus.Wait,
		K:           plan.K,
		Parallelism: max(plan.Parallelism, 1),
	}, corpus, nil
}

// CorpusSnapshot is the corpus as a run saw it: name, spec generation and
// the capabilities it reports (a failed capability call is recorded as none
// reported, never guessed).
func CorpusSnapshot(ctx context.Context, c *target.Corpus, obj *v1alpha1.Corpus) *scoring.CorpusSnapshot {
	snap := &scoring.CorpusSnapshot{Name: obj.Name, Generation: obj.Generation}
	if err := c.Wait(ctx); err != nil {
		return snap
	}
	caps, err := c.Driver.Capabilities(ctx)
	if err != nil {
		return snap
	}
	snap.Capabilities = append(snap.Capabilities, "contract:"+caps.ContractVersion)
	for _, m := range caps.RevocationMethods {
		snap.Capabilities = append(snap.Capabilities, "revoke:"+string(m))
	}
	if caps.Answer {
		snap.Capabilities = append(snap.Capabilities, "answer")
	}
	if caps.Conversation {
		snap.Capabilities = append(snap.Capabilities, "conversation")
	}
	return snap
}
