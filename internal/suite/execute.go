package suite

import (
	"context"
	"errors"
	"sync"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
)

// Execution is one case asked as one persona. Err set means the system gave
// no usable reply: the execution is a probe error and is never scored as
// "nothing retrieved".
type Execution struct {
	CaseID  string
	Persona string
	Stratum string
	// Answered is true when the answer surface was asked.
	Answered bool
	// Hits are the search hits' chunk IDs, best first.
	Hits []string
	// Citations are the answer's cited chunk IDs.
	Citations []string
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
}

// errNoCredential is an execution whose persona has no resolved credential;
// the caller resolves every persona first, so this only guards a bug.
var errNoCredential = errors.New("no credential for persona")

// Execute runs every case × expectation, at most Parallelism at a time, and
// returns them in case order, then expectation order. It returns ctx's
// error when ctx ends first: a partial set must not be scored.
func Execute(ctx context.Context, t Target, cases []v1alpha1.EvalCase) ([]Execution, error) {
	var jobs []Execution
	var questions []string
	for _, c := range cases {
		for _, e := range c.Expectations {
			jobs = append(jobs, Execution{CaseID: c.ID, Persona: e.Persona, Stratum: c.Stratum, Answered: c.AskAnswer})
			questions = append(questions, c.Question)
		}
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(t.Parallelism, 1) {
		wg.Go(func() {
			for i := range next {
				t.run(ctx, &jobs[i], questions[i])
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
func (t Target) run(ctx context.Context, x *Execution, question string) {
	token, ok := t.Tokens[x.Persona]
	if !ok {
		x.Err = errNoCredential
		return
	}
	hits, err := call(ctx, t, func(ctx context.Context) ([]driver.Hit, error) {
		return t.Searcher.Search(ctx, token, question, t.K)
	})
	if err != nil {
		x.Err = err
		return
	}
	x.Hits = chunkIDs(hits)
	if !x.Answered {
		return
	}
	answer, err := call(ctx, t, func(ctx context.Context) (driver.Answer, error) {
		return t.Answerer.Answer(ctx, token, question)
	})
	if err != nil {
		x.Err = err
		return
	}
	// The text is not kept: abstention is judged by citations alone (see
	// Abstained), and the text may quote evidence nobody should store.
	x.Citations = append([]string{}, answer.Citations...)
}

// call waits for the rate limiter and runs f; the driver bounds it by the
// corpus timeout.
func call[T any](ctx context.Context, t Target, f func(context.Context) (T, error)) (T, error) {
	var zero T
	if err := t.Wait(ctx); err != nil {
		return zero, err
	}
	return f(ctx)
}

func chunkIDs(hits []driver.Hit) []string {
	ids := make([]string, 0, len(hits))
	for _, h := range hits {
		ids = append(ids, h.ChunkID)
	}
	return ids
}
