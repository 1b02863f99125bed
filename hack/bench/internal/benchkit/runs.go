package benchkit

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// WaitPhase waits until n runs are in one of phases. A run that finished
// fails the wait: the setup did not hold.
func WaitPhase(ctx context.Context, c client.WithWatch, n int, phases ...v1alpha1.CanaryPhase) error {
	return WaitRuns(ctx, c, n, fmt.Sprint(phases), func(r *v1alpha1.CanaryRun) bool {
		return slices.Contains(phases, r.Status.Phase)
	})
}

// ExclusionSighted: the run persisted its first sighting after the
// revocation, the last write of its setup.
func ExclusionSighted(r *v1alpha1.CanaryRun) bool {
	if r.Status.Phase != v1alpha1.PhaseAwaitingExclusion || len(r.Status.Surfaces) == 0 {
		return false
	}
	for _, m := range r.Status.Surfaces {
		if m.LastPositiveStart == nil {
			return false
		}
	}
	return true
}

// WaitRuns waits until n runs satisfy ok (described by what). It lists
// the runs once and then follows a watch, re-listing only when the watch
// ends: a LIST of 10,000 runs every few seconds would be a visible part of
// the API server's work in the very setup the benchmark times.
func WaitRuns(ctx context.Context, c client.WithWatch, n int, what string, ok func(*v1alpha1.CanaryRun) bool) error {
	w := runWaiter{ok: ok, n: n}
	for {
		done, err := w.follow(ctx, c)
		if err != nil || done {
			if ctx.Err() != nil {
				return fmt.Errorf("waiting for %d runs in %s: %w (by phase %v)", n, what, ctx.Err(), w.byPhase())
			}
			return err
		}
	}
}

// runWaiter is WaitRuns' view of every run, by name.
type runWaiter struct {
	ok   func(*v1alpha1.CanaryRun) bool
	n    int
	runs map[string]runState
	in   int
}

type runState struct {
	phase   v1alpha1.CanaryPhase
	ok      bool
	message string
}

// follow lists the runs and then applies watch events until n runs are ok
// (done), a run finished (an error: the setup did not hold) or the watch
// ends (neither: list again).
func (w *runWaiter) follow(ctx context.Context, c client.WithWatch) (bool, error) {
	var list v1alpha1.CanaryRunList
	// Every run in the cluster is the benchmark's.
	if err := c.List(ctx, &list); err != nil {
		return false, err
	}
	w.runs = make(map[string]runState, len(list.Items))
	w.in = 0
	for i := range list.Items {
		if err := w.set(&list.Items[i]); err != nil {
			return false, err
		}
	}
	if w.in >= w.n {
		return true, nil
	}
	watcher, err := c.Watch(ctx, &v1alpha1.CanaryRunList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
	if err != nil {
		return false, err
	}
	defer watcher.Stop()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-tick.C:
			w.report()
		case ev, open := <-watcher.ResultChan():
			if !open {
				return false, nil
			}
			r, isRun := ev.Object.(*v1alpha1.CanaryRun)
			switch {
			case !isRun:
				// An error event (a compacted resourceVersion): list again.
				return false, nil
			case ev.Type == watch.Deleted:
				w.remove(r.Name)
			default:
				if err := w.set(r); err != nil {
					return false, err
				}
			}
			if w.in >= w.n {
				return true, nil
			}
		}
	}
}

func (w *runWaiter) set(r *v1alpha1.CanaryRun) error {
	if r.Status.Phase == v1alpha1.PhaseSucceeded || r.Status.Phase == v1alpha1.PhaseFailed {
		return fmt.Errorf("run %s finished during setup: %s %s (%s)", r.Name, r.Status.Phase, r.Status.Verdict, r.Status.Message)
	}
	w.remove(r.Name)
	st := runState{phase: r.Status.Phase, ok: w.ok(r), message: r.Status.Message}
	w.runs[r.Name] = st
	if st.ok {
		w.in++
	}
	return nil
}

func (w *runWaiter) remove(name string) {
	if old, had := w.runs[name]; had && old.ok {
		w.in--
	}
	delete(w.runs, name)
}

func (w *runWaiter) byPhase() map[v1alpha1.CanaryPhase]int {
	by := map[v1alpha1.CanaryPhase]int{}
	for _, st := range w.runs {
		by[st.phase]++
	}
	return by
}

// report prints progress, with one waiting run's message, for a setup that
// stalls.
func (w *runWaiter) report() {
	waiting := ""
	for name, st := range w.runs {
		if !st.ok && st.message != "" {
			waiting = name + ": " + st.message
			break
		}
	}
	Step("  %d runs (%d ready), by phase %v; %s", len(w.runs), w.in, w.byPhase(), waiting)
}

// CountPhase counts the runs in phase.
func CountPhase(ctx context.Context, c client.Client, phase v1alpha1.CanaryPhase) (int, error) {
	var list v1alpha1.CanaryRunList
	if err := c.List(ctx, &list); err != nil {
		return 0, err
	}
	n := 0
	for _, r := range list.Items {
		if r.Status.Phase == phase {
			n++
		}
	}
	return n, nil
}

// Step logs one step of a benchmark on stderr, with the time.
func Step(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
