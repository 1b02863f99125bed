package probe

import (
	"slices"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/measure"
)

var sentinelTarget = Target{DocumentID: "rc-1", Handle: "rcanaryaaaa1111", Payload: "rcpayloadbbbb2222"}

func TestSearchEvidenceNamesTheCarriers(t *testing.T) {
	tests := []struct {
		name string
		// hits are the search reply.
		hits []driver.Hit
		// want is the outcome; carriers the IDs named.
		want     measure.Outcome
		carriers []string
	}{
		{name: "no hits", want: measure.Absent},
		{name: "own document", hits: []driver.Hit{{ChunkID: "rc-1#0", DocumentID: "rc-1"}}, want: measure.Present, carriers: []string{"rc-1#0"}},
		{name: "derived hit quoting the payload", hits: []driver.Hit{{ChunkID: "digest-rc#0", DocumentID: "digest-rc", Text: "rc: RCPAYLOAD bbbb-2222 ..."}},
			want: measure.Present, carriers: []string{"digest-rc#0"}},
		// A vector index returns neighbours for any query: an ID alone proves nothing.
		{name: "derived hit without text", hits: []driver.Hit{{ChunkID: "digest-rc#0", DocumentID: "digest-rc"}}, want: measure.Absent},
		{name: "derived hit whose text lacks the payload", hits: []driver.Hit{{DocumentID: "faq", Text: "rcanaryaaaa1111"}}, want: measure.Absent},
		{name: "only the carriers among other hits", hits: []driver.Hit{{DocumentID: "other", Text: "x"}, {DocumentID: "faq", Text: "rcpayloadbbbb2222"}},
			want: measure.Present, carriers: []string{"faq"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := SearchEvidence(tt.hits, sentinelTarget)
			if ev.Outcome != tt.want || !slices.Equal(ev.Carriers, tt.carriers) {
				t.Fatalf("got %v %v, want %v %v", ev.Outcome, ev.Carriers, tt.want, tt.carriers)
			}
			if SearchShows(tt.hits, sentinelTarget) != (tt.want == measure.Present) {
				t.Fatal("SearchShows disagrees with SearchEvidence")
			}
		})
	}
}

func TestAnswerEvidenceNamesTheCarriers(t *testing.T) {
	tests := []struct {
		name string
		// answer is the reply.
		answer   driver.Answer
		want     measure.Outcome
		carriers []string
	}{
		{name: "handle echoed", answer: driver.Answer{Text: `nothing about "rcanaryaaaa1111"`}, want: measure.Absent},
		{name: "payload quoted from a digest", answer: driver.Answer{Text: "rcpayloadbbbb2222 [digest-rc#0]", Citations: []string{"digest-rc#0"}},
			want: measure.Present, carriers: []string{"digest-rc#0"}},
		{name: "own document cited first", answer: driver.Answer{Text: "x", Citations: []string{"faq#1", "rc-1#0"}},
			want: measure.Present, carriers: []string{"rc-1#0", "faq#1"}},
		{name: "payload quoted citing nothing", answer: driver.Answer{Text: "RCPAYLOAD-bbbb2222"}, want: measure.Present},
		{name: "citations without the payload", answer: driver.Answer{Text: "other", Citations: []string{"faq#1"}}, want: measure.Absent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := AnswerEvidence(tt.answer, sentinelTarget)
			if ev.Outcome != tt.want || !slices.Equal(ev.Carriers, tt.carriers) {
				t.Fatalf("got %v %v, want %v %v", ev.Outcome, ev.Carriers, tt.want, tt.carriers)
			}
		})
	}
}

// TestKeepSightingBoundsAndRedacts: sightings are kept up to the API's
// bound while the total counts on, carriers are bounded, an ID holding a
// secret is redacted and the sentinel's own document is flagged.
func TestKeepSightingBoundsAndRedacts(t *testing.T) {
	s := newState(Plan{Stage: StageWatch, Target: sentinelTarget, Surfaces: []v1alpha1.Surface{v1alpha1.SurfaceSearch},
		Controls: []Control{{Name: "mallory"}}})
	end := time.Unix(100, 0)
	for range v1alpha1.MaxSentinelSightings + 3 {
		s.apply(nil, []result{{surface: v1alpha1.SurfaceSearch, control: "mallory", outcome: measure.Present, end: end,
			carriers: []string{"a", "b", "c", "leak-RCPAYLOADbbbb2222", "rc-1#0", "f"}}})
	}
	snap := s.Snapshot()
	if snap.SightingTotal != v1alpha1.MaxSentinelSightings+3 || len(snap.Sightings) != v1alpha1.MaxSentinelSightings {
		t.Fatalf("total %d kept %d", snap.SightingTotal, len(snap.Sightings))
	}
	got := snap.Sightings[0]
	if !got.OwnDocument || len(got.Carriers) != v1alpha1.MaxSightingCarriers || got.Carriers[3] != redactedCarrier || !got.Time.Time.Equal(end) {
		t.Fatalf("sighting %+v", got)
	}
	// Probe errors are never sightings.
	s.apply(nil, []result{{surface: v1alpha1.SurfaceSearch, control: "mallory", outcome: measure.Error}})
	if s.Snapshot().SightingTotal != snap.SightingTotal {
		t.Fatal("a probe error was counted as a sighting")
	}
}
