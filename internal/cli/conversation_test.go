package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// TestFollowShowsConversation: following a run that probes Search and
// Conversation shows the conversation's live exposure while it is still
// visible there, and its interval against the SLO in the outcome.
func TestFollowShowsConversation(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	d := func(x time.Duration) *metav1.Duration { return &metav1.Duration{Duration: x} }
	S, C := v1alpha1.SurfaceSearch, v1alpha1.SurfaceConversation
	corpus := &v1alpha1.Corpus{Spec: v1alpha1.CorpusSpec{Freshness: v1alpha1.Freshness{ExclusionSLO: d(30 * time.Second)}}}
	run := &v1alpha1.CanaryRun{
		ObjectMeta: metav1.ObjectMeta{Name: "r"},
		Spec:       v1alpha1.CanaryRunSpec{CanarySpec: v1alpha1.CanarySpec{Probing: v1alpha1.Probing{Surfaces: []v1alpha1.Surface{S, C}}}},
		Status: v1alpha1.CanaryRunStatus{
			Phase: v1alpha1.PhaseAwaitingExclusion, StartTime: &metav1.Time{Time: now.Add(-time.Minute)},
			RevokeAcknowledgedTime: &metav1.MicroTime{Time: now.Add(-40 * time.Second)},
			Surfaces: []v1alpha1.SurfaceMeasurement{
				{Surface: S, Excluded: true, NegativeStreak: 3},
				{Surface: C, LastPositiveStart: &metav1.MicroTime{Time: now.Add(-time.Second)}},
			},
		},
	}
	p := Progress{Kind: "CanaryRun", Run: "r", Created: true}
	observeCanaryRun(&p, run, corpus, now)
	if len(p.Exposure) != 1 || p.Exposure[0].Surface != "Conversation" || p.Exposure[0].Seconds != 40 || p.Exposure[0].SLOSeconds != 30 {
		t.Errorf("exposure %+v, want Conversation only, 40s against 30s", p.Exposure)
	}
	if got := liveLine(p, now); !strings.HasSuffix(got, "exposed: Conversation 40s (over SLO 30s)") {
		t.Errorf("live line %q, want the conversation's exposure over its SLO", got)
	}

	run.Status.Phase, run.Status.Verdict = v1alpha1.PhaseSucceeded, v1alpha1.VerdictSLOBreached
	run.Status.CompletionTime = &metav1.Time{Time: now}
	run.Status.Surfaces[0].Bounds = &v1alpha1.ExclusionBounds{Lower: d(time.Second), Upper: d(2 * time.Second)}
	run.Status.Surfaces[1].Bounds = &v1alpha1.ExclusionBounds{Lower: d(39 * time.Second), Upper: d(41 * time.Second)}
	p = Progress{Kind: "CanaryRun", Run: "r", Created: true}
	observeCanaryRun(&p, run, corpus, now)
	var out bytes.Buffer
	WriteOutcome(&out, p)
	want := "CanaryRun r: SLOBreached; time to exclusion Search 1s–2s ≤ 30s, Conversation 39s–41s > 30s\n"
	if out.String() != want {
		t.Errorf("outcome %q, want %q", out.String(), want)
	}
}

// TestUnprobedConversationIsAbsent: a search-only canary's summary shows no
// conversation; one that probes it without a measurement shows it unknown
// ("?"), never as 0.
func TestUnprobedConversationIsAbsent(t *testing.T) {
	d := func(x time.Duration) *metav1.Duration { return &metav1.Duration{Duration: x} }
	last := &v1alpha1.RunSummary{Name: "r", Surfaces: []v1alpha1.SurfaceSummary{{Surface: v1alpha1.SurfaceSearch,
		Bounds: &v1alpha1.ExclusionBounds{Lower: d(time.Second), Upper: d(2 * time.Second)}}}}
	searchOnly := &v1alpha1.CanarySpec{Probing: v1alpha1.Probing{Surfaces: []v1alpha1.Surface{v1alpha1.SurfaceSearch}}}
	got := summarySurfaces(searchOnly, nil, last)
	if len(got) != 1 || got[0].Surface != "Search" {
		t.Errorf("search-only surfaces %+v, want Search alone", got)
	}
	if text := surfaceText(got, v1alpha1.SurfaceConversation); text != "-" {
		t.Errorf("search-only conversation column %q, want -", text)
	}
	both := &v1alpha1.CanarySpec{Probing: v1alpha1.Probing{Surfaces: []v1alpha1.Surface{v1alpha1.SurfaceSearch, v1alpha1.SurfaceConversation}}}
	got = summarySurfaces(both, nil, last)
	if len(got) != 2 || got[1].Surface != "Conversation" || got[1].LowerSeconds != nil || got[1].UpperSeconds != nil {
		t.Fatalf("surfaces %+v, want Conversation probed with no bounds", got)
	}
	if text := surfaceText(got, v1alpha1.SurfaceConversation); text != "? vs 5m" {
		t.Errorf("unmeasured conversation column %q, want \"? vs 5m\" (the default SLO)", text)
	}
}
