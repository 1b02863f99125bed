package suite

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/scoring"
)

// Execution is one job's outcome. Err set means the system gave no usable
// reply: the execution is a probe error and is never scored as "nothing
// retrieved".
type Execution struct {
	// ID is the job's scoring case ID, CaseKey(CaseID, Persona).
	ID      string
	CaseID  string
	Persona string
	Stratum string
	// Answered is true when the answer surface was asked.
	Answered bool
	// Hits are the retrieved IDs, best first: chunk IDs, or for a fixture
	// suite the fixture IDs of the planted versions (each once).
	Hits []string
	// Citations are the answer's cited IDs, mapped like Hits.
	Citations []string
	// Status is what the answer surface declared, Reason why; empty when
	// it did not say.
	Status scoring.Action
	Reason string
	// Text is the answer as the persona saw it. It is kept, in the run's
	// evidence, because a leak through generated text is a disclosure.
	Text string
	// Latency is the time the system took for this job (search and answer).
	Latency time.Duration
	// Err is the failure, a sanitized *driver.Error when the driver failed.
	Err error
}

// Target is where and how executions run.
type Target struct {
	Searcher driver.Searcher
	Answerer driver.Answerer
	// Tokens holds each persona's credential by persona name.
	Tokens map[string]driver.Token
	// Wait blocks for the corpus's shared rate limiter before each call.
	Wait func(context.Context) error
	// K is the search depth.
	K int
	// Parallelism bounds concurrent executions; at least 1.
	Parallelism int
	// Scope maps a fixture suite's run-scoped IDs back; nil without a fixture.
	Scope *Scope
}

// errNoCredential is an execution whose persona has no resolved credential;
// the caller resolves every persona first, so this only guards a bug.
var errNoCredential = errors.New("no credential for persona")

// Execute runs every job of the plan, at most Parallelism at a time, and
// returns them in job order. It returns ctx's error when ctx ends first: a
// partial set must not be scored.
func Execute(ctx context.Context, t Target, plan *Plan) ([]Execution, error) {
	jobs := make([]Execution, len(plan.Jobs))
	for i, j := range plan.Jobs {
		jobs[i] = Execution{ID: j.Case.ID, CaseID: j.SuiteCase, Persona: j.Case.Persona, Stratum: j.Case.Stratum, Answered: j.AskAnswer}
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(t.Parallelism, 1) {
		wg.Go(func() {
			for i := range next {
				t.run(ctx, &jobs[i], plan.Jobs[i].Case.Question)
			}
		})
	}
	for i := range jobs {
		select {
		case next <- i:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return jobs, nil
}

// run fills one execution: search, then the answer surface when asked.
// Latency counts the calls only, not the rate limiter's waits.
func (t Target) run(ctx context.Context, x *Execution, question string) {
	token, ok := t.Tokens[x.Persona]
	if !ok {
		x.Err = errNoCredential
		return
	}
	hits, took, err := call(ctx, t, func(ctx context.Context) ([]driver.Hit, error) {
		return t.Searcher.Search(ctx, token, question, t.K)
	})
	x.Latency += took
	if err != nil {
		x.Err = err
		return
	}
	x.Hits = t.hitIDs(hits)
	if !x.Answered {
		return
	}
	answer, took, err := call(ctx, t, func(ctx context.Context) (driver.Answer, error) {
		return t.Answerer.Answer(ctx, token, question)
	})
	x.Latency += took
	if err != nil {
		x.Err = err
		return
	}
	x.Citations = t.ids(answer.Citations)
	x.Status, x.Reason = scoring.Action(answer.Status), string(answer.Reason)
	x.Text = answer.Text
}

// hitIDs are the hits as cases speak of them: chunk IDs without a fixture;
// with one, each hit's document (its DocumentID, else the chunk ID's
// document part) mapped back to the fixture version.
func (t Target) hitIDs(hits []driver.Hit) []string {
	if t.Scope == nil {
		return chunkIDs(hits)
	}
	docs := make([]string, 0, len(hits))
	for _, h := range hits {
		if h.DocumentID != "" {
			docs = append(docs, h.DocumentID)
		} else {
			docs = append(docs, h.ChunkID)
		}
	}
	return t.Scope.FixtureIDs(docs)
}

// ids maps target IDs to the IDs cases speak: unchanged without a fixture.
func (t Target) ids(ids []string) []string {
	if t.Scope == nil {
		return append([]string{}, ids...)
	}
	return t.Scope.FixtureIDs(ids)
}

// call waits for the rate limiter and runs f, timing f alone; the driver
// bounds it by the corpus timeout.
func call[T any](ctx context.Context, t Target, f func(context.Context) (T, error)) (T, time.Duration, error) {
	var zero T
	if err := t.Wait(ctx); err != nil {
		return zero, 0, err
	}
	start := time.Now()
	v, err := f(ctx)
	return v, time.Since(start), err
}

func chunkIDs(hits []driver.Hit) []string {
	ids := make([]string, 0, len(hits))
	for _, h := range hits {
		ids = append(ids, h.ChunkID)
	}
	return ids
}

// supportIDs are what a search-only v2 job cites: its hits that are
// required, alternative or expected-citation evidence, each once.
func supportIDs(hits []string, e scoring.Expected) []string {
	support := slices.Concat(e.RequiredEvidence, e.ExpectedCitations)
	for _, set := range e.RequiredAnyOf {
		support = append(support, set...)
	}
	out := []string{}
	for _, id := range hits {
		if slices.Contains(support, id) && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}
