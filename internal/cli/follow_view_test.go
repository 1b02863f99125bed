package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestLiveViewRedrawsOneLine: on a terminal each look redraws the same line
// (carriage return, clear line) with the lifecycle marked and the exposure.
func TestLiveViewRedrawsOneLine(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	start := now.Add(-75*time.Second - 400*time.Millisecond)
	var out bytes.Buffer
	v := &LiveView{W: &out, Now: func() time.Time { return now }}
	v.Update(Progress{Kind: "CanaryRun", Run: "r", Created: true, Phase: "AwaitingExclusion", StartTime: &start,
		Exposure: []Exposure{{Surface: "Search", Seconds: 40, SLOSeconds: 30}}})
	got := out.String()
	want := "\r\033[Kr  ✓pending ✓plant ✓share ✓visible? ✓revoke ▶excluded? ·clean up  1m15s  exposed: Search 40s (over SLO 30s)"
	if got != want {
		t.Errorf("live line\n%q, want\n%q", got, want)
	}
	if got := stepsLine(canarySteps, "Succeeded"); got != "✓pending ✓plant ✓share ✓visible? ✓revoke ✓excluded? ✓clean up" {
		t.Errorf("a finished run's steps %q, want all done", got)
	}
	v.Done(Progress{Kind: "CanaryRun", Run: "r", Created: true, Done: true, Verdict: "SLOBreached"})
	if !strings.HasPrefix(out.String()[len(got):], "\r\033[KCanaryRun r: SLOBreached\n") {
		t.Errorf("done output %q", out.String()[len(got):])
	}
}

// TestPlainViewWritesChanges: piped output gets a line only when the state changes.
func TestPlainViewWritesChanges(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	v := &PlainView{W: &out, Now: func() time.Time { return now }, Start: now.Add(-2 * time.Second)}
	for _, phase := range []string{"Planting", "Planting", "Sharing", "Sharing"} {
		v.Update(Progress{Kind: "CanaryRun", Run: "r", Created: true, Phase: phase})
	}
	want := "[+2s] CanaryRun r: phase Planting\n[+2s] CanaryRun r: phase Sharing\n"
	if out.String() != want {
		t.Errorf("plain output %q, want %q", out.String(), want)
	}
}
