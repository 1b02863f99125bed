package canaryrun

import (
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
)

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
		in: v1alpha1.CanaryRunStatus{TimeToVisibility: objects.DurationPtr(5916485 * time.Microsecond), Surfaces: []v1alpha1.SurfaceMeasurement{
			{Surface: v1alpha1.SurfaceSearch, Bounds: objects.Bounds(1234*time.Millisecond, 1666*time.Millisecond)},
			{Surface: v1alpha1.SurfaceAnswer, Bounds: objects.Bounds(61*time.Second, 250500*time.Millisecond)},
			{Surface: v1alpha1.SurfaceConversation, Bounds: objects.Bounds(850400*time.Microsecond, 1010*time.Millisecond)},
		}},
		want: measurementText{visible: "5.9s", search: "1.2s–1.7s", answer: "1m1s–4m11s", conversation: "850ms–1.1s"},
	}, {
		name: "answer surface not probed: no claim about it",
		in: v1alpha1.CanaryRunStatus{Surfaces: []v1alpha1.SurfaceMeasurement{
			{Surface: v1alpha1.SurfaceSearch, Bounds: objects.Bounds(30*time.Minute, -1)},
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
			{Surface: v1alpha1.SurfaceSearch, Bounds: objects.Bounds(1234*time.Millisecond, 1666*time.Millisecond),
				NewContent: &v1alpha1.ContentMeasurement{Visible: true, Bounds: objects.Bounds(2050*time.Millisecond, 3620*time.Millisecond)}},
			{Surface: v1alpha1.SurfaceAnswer, Bounds: objects.Bounds(3300*time.Millisecond, 3410*time.Millisecond),
				NewContent: &v1alpha1.ContentMeasurement{Visible: true, Bounds: objects.Bounds(900*time.Millisecond, 1200*time.Millisecond)}},
		}},
		want: measurementText{search: "1.2s–1.7s", answer: "3.3s–3.5s", content: "3.3s–3.7s"},
	}, {
		name: "content freshness right-censored: new content never seen",
		in: v1alpha1.CanaryRunStatus{Surfaces: []v1alpha1.SurfaceMeasurement{
			{Surface: v1alpha1.SurfaceSearch, Bounds: objects.Bounds(time.Second, 1500*time.Millisecond),
				NewContent: &v1alpha1.ContentMeasurement{Bounds: objects.Bounds(20*time.Second, -1)}},
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
