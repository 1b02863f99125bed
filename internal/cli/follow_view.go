package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/format"
)

// PlainView writes one line whenever what a run is doing changes: for logs
// and pipes, where a redrawn line would be noise.
type PlainView struct {
	W io.Writer
	// Now and Start give each line its offset from when following began.
	Now   func() time.Time
	Start time.Time
	last  string
}

// Update writes a line when the run appeared, changed phase or changed
// what it waits for.
func (v *PlainView) Update(p Progress) {
	state := stateLine(p)
	if state == v.last {
		return
	}
	v.last = state
	Fprintf(v.W, "[+%s] %s %s: %s\n", format.HumanDuration(v.Now().Sub(v.Start)), p.Kind, p.Run, state)
}

// Done writes the outcome.
func (v *PlainView) Done(p Progress) { WriteOutcome(v.W, p) }

// stateLine is what changed-detection compares: created or not, phase,
// and the reason of a wait. Counts and exposure change on every look and
// belong to the live view.
func stateLine(p Progress) string {
	if !p.Created {
		return "not created yet (" + p.Waiting + ")"
	}
	return "phase " + p.Phase
}

// LiveView redraws one status line on a terminal: the lifecycle with the
// current phase marked, the time since the run started, and the exposure
// of a revoked canary still visible.
type LiveView struct {
	W   io.Writer
	Now func() time.Time
}

type step struct {
	phase v1alpha1.CanaryPhase
	short string
}

// canarySteps are the lifecycle phases, with the short names the live view shows.
var canarySteps = []step{
	{v1alpha1.PhasePending, "pending"},
	{v1alpha1.PhasePlanting, "plant"},
	{v1alpha1.PhaseSharing, "share"},
	{v1alpha1.PhaseAwaitingVisibility, "visible?"},
	{v1alpha1.PhaseRevoking, "revoke"},
	{v1alpha1.PhaseAwaitingExclusion, "excluded?"},
	{v1alpha1.PhaseCleaningUp, "clean up"},
}

// Update redraws the line in place.
func (v *LiveView) Update(p Progress) {
	Fprintf(v.W, "\r\033[K%s", liveLine(p, v.Now()))
}

// Done ends the redrawn line and writes the outcome.
func (v *LiveView) Done(p Progress) {
	fmt.Fprint(v.W, "\r\033[K")
	WriteOutcome(v.W, p)
}

func liveLine(p Progress, now time.Time) string {
	if !p.Created {
		return fmt.Sprintf("%s %s: %s", p.Kind, p.Run, p.Waiting)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s  ", p.Run)
	if p.Kind == "CanaryRun" {
		b.WriteString(stepsLine(stepsFor(p), v1alpha1.CanaryPhase(p.Phase)))
	} else {
		b.WriteString("▶ " + strings.ToLower(p.Phase))
	}
	if p.StartTime != nil {
		// Whole seconds: a counter that ticks once per redraw.
		fmt.Fprintf(&b, "  %s", format.HumanDuration(now.Sub(*p.StartTime).Truncate(time.Second)))
	}
	if len(p.Exposure) > 0 {
		b.WriteString("  exposed: " + exposureText(p.Exposure))
	}
	if p.Sentinel != nil {
		b.WriteString("  " + sentinelText(p.Sentinel))
	} else if p.IsolationViolations > 0 {
		fmt.Fprintf(&b, "  CONTROL SIGHTINGS: %d", p.IsolationViolations)
	}
	return b.String()
}

// stepsLine marks finished phases ✓, the current one ▶ and later ones ·.
func stepsLine(steps []step, phase v1alpha1.CanaryPhase) string {
	current := -1
	for i, s := range steps {
		if s.phase == phase {
			current = i
		}
	}
	if phase == v1alpha1.PhaseSucceeded || phase == v1alpha1.PhaseFailed {
		current = len(steps)
	}
	parts := make([]string, 0, len(steps))
	for i, s := range steps {
		mark := "·"
		switch {
		case i < current:
			mark = "✓"
		case i == current:
			mark = "▶"
		}
		parts = append(parts, mark+s.short)
	}
	return strings.Join(parts, " ")
}

// WriteOutcome writes a finished run's verdict and measurements.
func WriteOutcome(w io.Writer, p Progress) {
	Fprintf(w, "%s %s: %s", p.Kind, p.Run, dash(p.Verdict))
	if p.Kind == "CanaryRun" {
		var parts []string
		for _, s := range p.Surfaces {
			parts = append(parts, s.Surface+" "+AgainstSLO(s.bounds, s.slo))
		}
		if len(parts) > 0 {
			Fprintf(w, "; time to exclusion %s", strings.Join(parts, ", "))
		}
		if p.TimeToVisibilitySeconds != nil {
			Fprintf(w, "; visible after %s", secondsText(p.TimeToVisibilitySeconds, "-"))
		}
	} else {
		Fprintf(w, "; executions %s, disclosures %s, probe errors %s; gates %s",
			countText(p.Executions), countText(p.Disclosures), countText(p.ProbeErrors),
			gatesText(&SuiteLastRun{RunKept: true, Gates: p.Gates}))
	}
	fmt.Fprintln(w)
	if p.Message != "" {
		Fprintf(w, "  %s\n", p.Message)
	}
}

func countText(n *int32) string {
	if n == nil {
		return "-"
	}
	return fmt.Sprint(*n)
}
