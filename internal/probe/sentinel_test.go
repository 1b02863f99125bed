package probe

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/measure"
	"github.com/ragcanary/ragcanary/internal/target"
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

// countingTarget counts searches per persona and shows the canary to none.
type countingTarget struct {
	fakeTarget
	byPersona sync.Map // driver.Token → *atomic.Int64
}

func (c *countingTarget) Search(ctx context.Context, p driver.Token, q string, k int) ([]driver.Hit, error) {
	n, _ := c.byPersona.LoadOrStore(p, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
	return c.fakeTarget.Search(ctx, p, q, k)
}

func (c *countingTarget) searchesBy(p driver.Token) int64 {
	n, ok := c.byPersona.Load(p)
	if !ok {
		return 0
	}
	return n.(*atomic.Int64).Load()
}

// TestEngineWatchProbesOnlyTheControls: while a sentinel is watched its
// owner is not probed, and a control's sighting is kept with its carrier.
func TestEngineWatchProbesOnlyTheControls(t *testing.T) {
	f := &countingTarget{fakeTarget: fakeTarget{visible: map[driver.Token]bool{}}}
	e := NewEngine(clock.RealClock{}, target.NewLimiters(clock.RealClock{}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = e.Start(ctx) }()
	key := types.NamespacedName{Namespace: "ns", Name: "sentinel"}
	p := newPlan(StageWatch, f)
	p.Schedule = Schedule{Adaptive: true, Precision: 0.1, MaxInterval: 20 * time.Millisecond}
	st := e.Ensure(key, p)
	testutil.EventuallyTrue(t, waitTimeout, "control probes", func() bool { return f.searchesBy(control) >= 3 })
	f.set(control, true)
	testutil.EventuallyTrue(t, waitTimeout, "a sighting", func() bool { return st.Snapshot().SightingTotal > 0 })
	final := e.Stop(key).Snapshot()
	if n := f.searchesBy(persona); n != 0 {
		t.Fatalf("the owner was probed %d times while watching", n)
	}
	got := final.Sightings[0]
	if got.Persona != "control" || got.Surface != v1alpha1.SurfaceSearch || !got.OwnDocument || !slices.Equal(got.Carriers, []string{"rc-1#0"}) {
		t.Fatalf("sighting %+v", got)
	}
	if final.IsolationViolations != final.SightingTotal {
		t.Fatalf("violations %d, sightings %d: every sighting is a violation", final.IsolationViolations, final.SightingTotal)
	}
}
