package controllers

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func bounds(lower, upper time.Duration) *v1alpha1.ExclusionBounds {
	return &v1alpha1.ExclusionBounds{Lower: dur(lower), Upper: dur(upper)}
}

// measurementText is the short status fields setMeasurementText writes.
type measurementText struct {
	visible, search, answer, conversation, content string
}

func textOf(st *v1alpha1.CanaryRunStatus) measurementText {
	return measurementText{st.VisibleAfter, exclusionText(st, v1alpha1.SurfaceSearch), exclusionText(st, v1alpha1.SurfaceAnswer),
		exclusionText(st, v1alpha1.SurfaceConversation), st.ContentFreshness}
}

// exclusionText is a surface's interval text, "" when it has no entry.
func exclusionText(st *v1alpha1.CanaryRunStatus, s v1alpha1.Surface) string {
	if m := st.Surface(s); m != nil {
		return m.Exclusion
	}
	return ""
}

// TestSetMeasurementText: the rounded fields printer columns show say no
// more than the exact status does. Every expected string is worked out by
// hand from the bounds: lower bounds round down, upper bounds up.
func TestSetMeasurementText(t *testing.T) {
	for _, tc := range []struct {
		name string
		// in is the status as the verdict left it, text fields possibly stale.
		in v1alpha1.CanaryRunStatus
		// want is every text field afterwards; "" means no claim.
		want measurementText
	}{{
		name: "three surfaces excluded: intervals rounded outwards",
		in: v1alpha1.CanaryRunStatus{TimeToVisibility: dur(5916485 * time.Microsecond), Surfaces: []v1alpha1.SurfaceMeasurement{
			{Surface: v1alpha1.SurfaceSearch, Bounds: bounds(1234*time.Millisecond, 1666*time.Millisecond)},
			{Surface: v1alpha1.SurfaceAnswer, Bounds: bounds(61*time.Second, 250500*time.Millisecond)},
			{Surface: v1alpha1.SurfaceConversation, Bounds: bounds(850400*time.Microsecond, 1010*time.Millisecond)},
		}},
		want: measurementText{visible: "5.9s", search: "1.2s–1.7s", answer: "1m1s–4m11s", conversation: "850ms–1.1s"},
	}, {
		name: "answer surface not probed: no claim about it",
		in: v1alpha1.CanaryRunStatus{Surfaces: []v1alpha1.SurfaceMeasurement{
			{Surface: v1alpha1.SurfaceSearch, Bounds: &v1alpha1.ExclusionBounds{Lower: dur(30 * time.Minute)}},
		}},
		want: measurementText{search: ">30m"},
	}, {
		name: "probed but nothing established",
		in: v1alpha1.CanaryRunStatus{Surfaces: []v1alpha1.SurfaceMeasurement{
			{Surface: v1alpha1.SurfaceSearch}, {Surface: v1alpha1.SurfaceAnswer}, {Surface: v1alpha1.SurfaceConversation},
		}},
		want: measurementText{search: "?", answer: "?", conversation: "?"},
	}, {
		// Freshness is the later of old content gone and new content seen,
		// over every surface: the lower bound 3.3s is the answer surface's
		// old content, the upper bound 3.62s the search surface's new one.
		name: "content freshness: the later of every surface's old and new content",
		in: v1alpha1.CanaryRunStatus{Surfaces: []v1alpha1.SurfaceMeasurement{
			{Surface: v1alpha1.SurfaceSearch, Bounds: bounds(1234*time.Millisecond, 1666*time.Millisecond),
				NewContent: &v1alpha1.ContentMeasurement{Visible: true, Bounds: bounds(2050*time.Millisecond, 3620*time.Millisecond)}},
			{Surface: v1alpha1.SurfaceAnswer, Bounds: bounds(3300*time.Millisecond, 3410*time.Millisecond),
				NewContent: &v1alpha1.ContentMeasurement{Visible: true, Bounds: bounds(900*time.Millisecond, 1200*time.Millisecond)}},
		}},
		want: measurementText{search: "1.2s–1.7s", answer: "3.3s–3.5s", content: "3.3s–3.7s"},
	}, {
		name: "content freshness right-censored: new content never seen",
		in: v1alpha1.CanaryRunStatus{Surfaces: []v1alpha1.SurfaceMeasurement{
			{Surface: v1alpha1.SurfaceSearch, Bounds: bounds(time.Second, 1500*time.Millisecond),
				NewContent: &v1alpha1.ContentMeasurement{Bounds: &v1alpha1.ExclusionBounds{Lower: dur(20 * time.Second)}}},
		}},
		want: measurementText{search: "1s–1.5s", content: ">20s"},
	}, {
		name: "content run that established nothing",
		in: v1alpha1.CanaryRunStatus{Surfaces: []v1alpha1.SurfaceMeasurement{
			{Surface: v1alpha1.SurfaceSearch, NewContent: &v1alpha1.ContentMeasurement{}},
		}},
		want: measurementText{search: "?", content: "?"},
	}, {
		name: "stale text from an earlier write is cleared",
		in:   v1alpha1.CanaryRunStatus{VisibleAfter: "1s", ContentFreshness: "1s–2s"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.in
			setMeasurementText(&st)
			if got := textOf(&st); got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// parseShown reads an interval as printed ("1.2s–1.7s") back into its two
// durations; it is the test's own reading, not the formatter's.
func parseShown(t *testing.T, field, s string) (lower, upper time.Duration) {
	t.Helper()
	lo, hi, ok := strings.Cut(s, "–")
	if !ok {
		t.Fatalf("%s %q is not a closed interval", field, s)
	}
	var err error
	if lower, err = time.ParseDuration(lo); err != nil {
		t.Fatalf("%s %q: %v", field, s, err)
	}
	if upper, err = time.ParseDuration(hi); err != nil {
		t.Fatalf("%s %q: %v", field, s, err)
	}
	return lower, upper
}

// displayStep is the precision people read a duration under a minute at,
// which every bound of a run with a 20s exclusion timeout is: milliseconds
// under a second, else tenths of a second.
func displayStep(d time.Duration) time.Duration {
	if d < time.Second {
		return time.Millisecond
	}
	return 100 * time.Millisecond
}

// assertWidened: the shown interval contains the measured one and widens
// each bound by less than one display step.
func assertWidened(t *testing.T, field, shown string, b *v1alpha1.ExclusionBounds) {
	t.Helper()
	if b == nil || b.Lower == nil || b.Upper == nil {
		t.Fatalf("%s: bounds %+v not closed", field, b)
	}
	lo, hi := parseShown(t, field, shown)
	if d := b.Lower.Duration - lo; d < 0 || d >= displayStep(b.Lower.Duration) {
		t.Errorf("%s %q: shown lower %s is not within one step below the measured %s", field, shown, lo, b.Lower.Duration)
	}
	if d := hi - b.Upper.Duration; d < 0 || d >= displayStep(b.Upper.Duration) {
		t.Errorf("%s %q: shown upper %s is not within one step above the measured %s", field, shown, hi, b.Upper.Duration)
	}
}

// TestCanaryRunWritesMeasurementText: a real run stores the rounded
// intervals of its measured bounds, which the printer columns show. The
// bounds come from the wall clock, so the text is checked against them by
// reading it back, not by formatting them again.
func TestCanaryRunWritesMeasurementText(t *testing.T) {
	tg := startCRTarget(t, ragtarget.Config{}, 500*time.Millisecond, false)
	ns := crFixture(t, tg)
	got := crWaitDone(t, crRun(t, ns, 20*time.Second, v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer))
	if got.Status.Verdict != v1alpha1.VerdictSLOMet {
		t.Fatalf("verdict %s (%s), want SLOMet", got.Status.Verdict, got.Status.Message)
	}
	search, answer := crSurface(t, got, v1alpha1.SurfaceSearch), crSurface(t, got, v1alpha1.SurfaceAnswer)
	assertWidened(t, "Search exclusion", search.Exclusion, search.Bounds)
	assertWidened(t, "Answer exclusion", answer.Exclusion, answer.Bounds)
	// The SLO each surface was judged by is kept with the verdict.
	for _, m := range []v1alpha1.SurfaceMeasurement{search, answer} {
		if m.SLO == nil || m.SLO.Duration <= 0 || m.SLOSource == "" {
			t.Errorf("%s: slo %v from %q, want the judged SLO and its source", m.Surface, m.SLO, m.SLOSource)
		}
	}
	if exclusionText(&got.Status, v1alpha1.SurfaceConversation) != "" || got.Status.ContentFreshness != "" {
		t.Errorf("conversationExclusion %q contentFreshness %q, want both empty: neither was measured",
			exclusionText(&got.Status, v1alpha1.SurfaceConversation), got.Status.ContentFreshness)
	}
	if got.Status.TimeToVisibility == nil {
		t.Fatalf("no timeToVisibility")
	}
	shown, err := time.ParseDuration(got.Status.VisibleAfter)
	if err != nil {
		t.Fatalf("visibleAfter %q: %v", got.Status.VisibleAfter, err)
	}
	// A point value rounds to the nearest step.
	ttv := got.Status.TimeToVisibility.Duration
	if d := shown - ttv; d < -displayStep(ttv)/2 || d > displayStep(ttv)/2 {
		t.Errorf("visibleAfter %q is more than half a step from %s", got.Status.VisibleAfter, ttv)
	}
}

// TestSummariseCarriesMeasurementText: the canary's lastRun shows the same
// rounded intervals as its run, recomputed from the bounds.
func TestSummariseCarriesMeasurementText(t *testing.T) {
	run := &v1alpha1.CanaryRun{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Status: v1alpha1.CanaryRunStatus{
		Verdict: v1alpha1.VerdictSLOBreached, TimeToVisibility: dur(850 * time.Millisecond),
		Surfaces: []v1alpha1.SurfaceMeasurement{
			{Surface: v1alpha1.SurfaceSearch, Bounds: &v1alpha1.ExclusionBounds{Lower: dur(40 * time.Second), Upper: dur(41 * time.Second)}},
		}}}
	s := summarise(run)
	if s.VisibleAfter != "850ms" || s.Surface(v1alpha1.SurfaceSearch) == nil || s.Surface(v1alpha1.SurfaceSearch).Exclusion != "40s–41s" ||
		s.Surface(v1alpha1.SurfaceAnswer) != nil {
		t.Errorf("summary text %q %+v", s.VisibleAfter, s.Surfaces)
	}
}
