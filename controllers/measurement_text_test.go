package controllers

import (
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/controllers/revocationcanary"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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
	t.Parallel()
	tg := startCRTarget(t, ragtarget.Config{}, 500*time.Millisecond, false)
	ns := crFixture(t, tg.URL)
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
	if conv := got.Status.Surface(v1alpha1.SurfaceConversation); (conv != nil && conv.Exclusion != "") || got.Status.ContentFreshness != "" {
		t.Errorf("conversation measurement %+v contentFreshness %q, want no text for either: neither was measured",
			conv, got.Status.ContentFreshness)
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
	t.Parallel()
	run := &v1alpha1.CanaryRun{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Status: v1alpha1.CanaryRunStatus{
		Verdict: v1alpha1.VerdictSLOBreached, TimeToVisibility: objects.DurationPtr(850 * time.Millisecond),
		Surfaces: []v1alpha1.SurfaceMeasurement{
			{Surface: v1alpha1.SurfaceSearch, Bounds: objects.Bounds(40*time.Second, 41*time.Second)},
		}}}
	s := revocationcanary.Summarise(run)
	if s.VisibleAfter != "850ms" || s.Surface(v1alpha1.SurfaceSearch) == nil || s.Surface(v1alpha1.SurfaceSearch).Exclusion != "40s–41s" ||
		s.Surface(v1alpha1.SurfaceAnswer) != nil {
		t.Errorf("summary text %q %+v", s.VisibleAfter, s.Surfaces)
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
