package controllers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/cli"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

// TestSetMeasurementText: the rounded fields printer columns show say no
// more than the exact status does.
func TestSetMeasurementText(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   v1alpha1.CanaryRunStatus
		// want visibleAfter, searchExclusion, answerExclusion.
		visible, search, answer string
	}{{
		name: "both surfaces excluded: intervals rounded outwards",
		in: v1alpha1.CanaryRunStatus{TimeToVisibility: dur(5916485 * time.Microsecond), Surfaces: []v1alpha1.SurfaceMeasurement{
			{Surface: v1alpha1.SurfaceSearch, Bounds: &v1alpha1.ExclusionBounds{Lower: dur(1234 * time.Millisecond), Upper: dur(1666 * time.Millisecond)}},
			{Surface: v1alpha1.SurfaceAnswer, Bounds: &v1alpha1.ExclusionBounds{Lower: dur(61 * time.Second), Upper: dur(250500 * time.Millisecond)}},
		}},
		visible: "5.9s", search: "1.2s–1.7s", answer: "1m1s–4m11s",
	}, {
		name: "answer surface not probed: no claim about it",
		in: v1alpha1.CanaryRunStatus{Surfaces: []v1alpha1.SurfaceMeasurement{
			{Surface: v1alpha1.SurfaceSearch, Bounds: &v1alpha1.ExclusionBounds{Lower: dur(30 * time.Minute)}},
		}},
		visible: "", search: ">30m", answer: "",
	}, {
		name: "probed but nothing established",
		in: v1alpha1.CanaryRunStatus{Surfaces: []v1alpha1.SurfaceMeasurement{
			{Surface: v1alpha1.SurfaceSearch}, {Surface: v1alpha1.SurfaceAnswer},
		}},
		search: "?", answer: "?",
	}, {
		name: "stale text from an earlier write is cleared",
		in:   v1alpha1.CanaryRunStatus{VisibleAfter: "1s", SearchExclusion: "1s–2s", AnswerExclusion: "1s–2s"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.in
			setMeasurementText(&st)
			if st.VisibleAfter != tc.visible || st.SearchExclusion != tc.search || st.AnswerExclusion != tc.answer {
				t.Errorf("got visible %q search %q answer %q, want %q %q %q",
					st.VisibleAfter, st.SearchExclusion, st.AnswerExclusion, tc.visible, tc.search, tc.answer)
			}
		})
	}
}

// TestCanaryRunWritesMeasurementText: a real run stores the rounded
// intervals of its measured bounds, which the printer columns show.
func TestCanaryRunWritesMeasurementText(t *testing.T) {
	tg := startCRTarget(t, ragtarget.Config{}, 500*time.Millisecond, false)
	ns := crFixture(t, tg)
	got := crWaitDone(t, crRun(t, ns, 20*time.Second, v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer))
	if got.Status.Verdict != v1alpha1.VerdictSLOMet {
		t.Fatalf("verdict %s (%s), want SLOMet", got.Status.Verdict, got.Status.Message)
	}
	search, answer := crSurface(t, got, v1alpha1.SurfaceSearch), crSurface(t, got, v1alpha1.SurfaceAnswer)
	if want := cli.Interval(search.Bounds); got.Status.SearchExclusion != want || want == "?" {
		t.Errorf("searchExclusion %q, want %q from bounds %+v", got.Status.SearchExclusion, want, search.Bounds)
	}
	if want := cli.Interval(answer.Bounds); got.Status.AnswerExclusion != want || want == "?" {
		t.Errorf("answerExclusion %q, want %q from bounds %+v", got.Status.AnswerExclusion, want, answer.Bounds)
	}
	if want := cli.HumanDuration(got.Status.TimeToVisibility.Duration); got.Status.VisibleAfter != want {
		t.Errorf("visibleAfter %q, want %q", got.Status.VisibleAfter, want)
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
	if s.VisibleAfter != "850ms" || s.SearchExclusion != "40s–41s" || s.AnswerExclusion != "" {
		t.Errorf("summary text %q %q %q", s.VisibleAfter, s.SearchExclusion, s.AnswerExclusion)
	}
}
