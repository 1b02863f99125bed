package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

func sentinelRun(now time.Time) *v1alpha1.CanaryRun {
	run := &v1alpha1.CanaryRun{ObjectMeta: metav1.ObjectMeta{Namespace: "rag", Name: "hr-sentinel-1"}}
	run.Spec.Sentinel = &v1alpha1.Sentinel{Lifetime: metav1.Duration{Duration: 24 * time.Hour}}
	run.Status.Phase = v1alpha1.PhaseWatching
	run.Status.Sentinel = &v1alpha1.SentinelStatus{
		WatchUntil: &metav1.MicroTime{Time: now.Add(3*time.Hour + 500*time.Millisecond)}, TotalSightings: 5,
		Sightings: []v1alpha1.SentinelSighting{
			{Persona: "eve", Surface: v1alpha1.SurfaceSearch, Carriers: []string{"faq#1"}},
			// A carrier holding an escape sequence must not reach the terminal raw.
			{Persona: "mallory", Surface: v1alpha1.SurfaceAnswer, Carriers: []string{"digest-rc#0", "x\x1b[2J"}},
		},
	}
	return run
}

// TestSentinelStatusShowsTheWatch: status lists watched sentinels with the
// lifetime left, the sightings and the latest one's persona, surface and
// carriers; a fleet without sentinels has no such section.
func TestSentinelStatusShowsTheWatch(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f := &Fleet{Now: now, InFlight: []RunInFlight{runInFlight(sentinelRun(now), nil, now)}}
	var out bytes.Buffer
	if err := writeInFlightAndSentinels(&out, f, false); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"SENTINELS", "hr-sentinel-1", "lifetime left 3h", "5 SIGHTINGS", `last mallory on Answer via "digest-rc#0, x\x1b[2J"`} {
		if !strings.Contains(got, want) {
			t.Errorf("status output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "\x1b") {
		t.Error("a raw escape reached the terminal")
	}
	out.Reset()
	plain := &v1alpha1.CanaryRun{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}
	if err := writeInFlightAndSentinels(&out, &Fleet{Now: now, InFlight: []RunInFlight{runInFlight(plain, nil, now)}}, false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "SENTINELS") {
		t.Errorf("a fleet without sentinels shows a sentinel section:\n%s", out.String())
	}
}

// TestSentinelLiveLine: the live view marks the watch step and the
// sentinel's state; an Isolated sentinel is a good outcome.
func TestSentinelLiveLine(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	p := Progress{Kind: "CanaryRun", Run: "r", Created: true}
	observeCanaryRun(&p, sentinelRun(now), nil, now)
	got := liveLine(p, now)
	if !strings.Contains(got, "✓visible? ▶watch ·clean up") || strings.Contains(got, "revoke") || !strings.Contains(got, "lifetime left 3h; 5 SIGHTINGS") {
		t.Errorf("live line %q", got)
	}
	done := sentinelRun(now)
	done.Status.Phase, done.Status.Verdict = v1alpha1.PhaseSucceeded, v1alpha1.VerdictIsolated
	observeCanaryRun(&p, done, nil, now)
	if !p.OK {
		t.Error("an Isolated sentinel is not OK")
	}
}
