package benchkit

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// WaitPhase waits until n runs are in one of phases. A run that finished
// fails the wait: the setup did not hold.
func WaitPhase(ctx context.Context, c client.Client, n int, phases ...v1alpha1.CanaryPhase) error {
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

// WaitRuns polls until n runs satisfy ok (described by what).
func WaitRuns(ctx context.Context, c client.Client, n int, what string, ok func(*v1alpha1.CanaryRun) bool) error {
	// Each poll lists every run: poll less often the more there are, so
	// the benchmark's own reads stay a small part of the API server's work.
	t := time.NewTicker(max(2*time.Second, time.Duration(n)*time.Millisecond))
	defer t.Stop()
	last := time.Now()
	for {
		var list v1alpha1.CanaryRunList
		// Every run in the cluster is the benchmark's.
		if err := c.List(ctx, &list); err != nil {
			return err
		}
		byPhase := map[v1alpha1.CanaryPhase]int{}
		in := 0
		// waiting is one waiting run's message, for a setup that stalls.
		waiting := ""
		for _, r := range list.Items {
			byPhase[r.Status.Phase]++
			if waiting == "" && r.Status.Message != "" {
				waiting = r.Name + ": " + r.Status.Message
			}
			if ok(&r) {
				in++
			}
			if r.Status.Phase == v1alpha1.PhaseSucceeded || r.Status.Phase == v1alpha1.PhaseFailed {
				return fmt.Errorf("run %s finished during setup: %s %s (%s)", r.Name, r.Status.Phase, r.Status.Verdict, r.Status.Message)
			}
		}
		if in >= n {
			return nil
		}
		if time.Since(last) >= 10*time.Second {
			Step("  %d runs, by phase %v; %s", len(list.Items), byPhase, waiting)
			last = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d runs in %s: %w (by phase %v)", n, what, ctx.Err(), byPhase)
		case <-t.C:
		}
	}
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
