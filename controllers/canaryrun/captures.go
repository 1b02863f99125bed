package canaryrun

import (
	"context"
	"errors"
	"maps"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/driver/rest"
	"github.com/ragcanary/ragcanary/internal/target"
)

// A REST source captures values from its replies (the created issue's
// number, a permission's ID) that later operations on the same document
// need. The driver is rebuilt for every reconcile, so the values live in
// the run's status: restored into the driver when it is resolved, kept back
// into status after a step acts, and so written by the same status patch
// that records the step — before the next step, which may need them, acts.

// capturesOf is the corpus's capturing source, or nil.
func capturesOf(c *target.Corpus) driver.Captures {
	if c == nil {
		return nil
	}
	cs, _ := c.Source().(driver.Captures)
	return cs
}

// restoreCaptures hands the run's persisted captures to a freshly resolved
// corpus's source.
func restoreCaptures(run *v1alpha1.CanaryRun, c *target.Corpus) {
	cs := capturesOf(c)
	if cs == nil || run.Status.DocumentID == "" || len(run.Status.SourceCaptures) == 0 {
		return
	}
	values := make(map[string]string, len(run.Status.SourceCaptures))
	for k, v := range run.Status.SourceCaptures {
		values[k] = string(v)
	}
	cs.Restore(run.Status.DocumentID, values)
}

// keepCaptures copies what the source now holds for the run's document
// into status; the caller's status write persists it.
func keepCaptures(run *v1alpha1.CanaryRun, c *target.Corpus) {
	cs := capturesOf(c)
	if cs == nil || run.Status.DocumentID == "" {
		return
	}
	held := cs.Captured(run.Status.DocumentID)
	kept := make(map[string]v1alpha1.CaptureValue, len(held))
	for k, v := range held {
		kept[k] = v1alpha1.CaptureValue(v)
	}
	if len(kept) == 0 {
		kept = nil
	}
	if !maps.Equal(kept, run.Status.SourceCaptures) {
		run.Status.SourceCaptures = kept
	}
}

// foundPlanted reports whether the run's document already exists at a
// source that can look it up: a restart after CreateDocument was sent but
// before its captures were persisted finds it (and its captures) again
// instead of creating a second one. Sources that cannot look up, and runs
// whose captures were persisted, report false.
func foundPlanted(ctx context.Context, run *v1alpha1.CanaryRun, c *target.Corpus) (bool, error) {
	if len(run.Status.SourceCaptures) > 0 {
		return false, nil
	}
	found, _, err := lookUp(ctx, c, run.Status.DocumentID)
	return found, err
}

// lookUp asks the corpus's source for a document by its ID; can is false
// when the source has no lookup (a REST source without lookupDocument).
func lookUp(ctx context.Context, c *target.Corpus, id string) (found, can bool, err error) {
	if c == nil {
		return false, false, nil
	}
	f, ok := c.Source().(driver.DocumentFinder)
	if !ok {
		return false, false, nil
	}
	found, err = f.Lookup(ctx, id)
	if errors.Is(err, rest.ErrNotDeclared) {
		return false, false, nil
	}
	return found, true, err
}

// mayHaveLeftOne names, for a source that captures but cannot look a
// document up, what a failed re-plant may mean: an earlier attempt of this
// run created the document and the operator stopped before recording it.
func mayHaveLeftOne(ctx context.Context, c *target.Corpus, id string) string {
	if capturesOf(c) == nil {
		return ""
	}
	if _, can, _ := lookUp(ctx, c, id); can {
		return ""
	}
	return "; if an earlier attempt of this run created the document before the operator recorded it, it may have been left behind at the source (declare lookupDocument so a run finds it again)"
}
