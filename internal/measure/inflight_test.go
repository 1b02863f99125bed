package measure

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

func stream(o v1alpha1.InFlightOutcome, delivery time.Duration, bytes int64) v1alpha1.InFlightStream {
	s := v1alpha1.InFlightStream{Outcome: o, CanaryBytesAfterRequest: bytes}
	if o != v1alpha1.InFlightError && o != v1alpha1.InFlightEndedBeforeRevocation {
		s.PostRevocationDelivery = &metav1.Duration{Duration: delivery}
	}
	return s
}

func TestInFlightVerdict(t *testing.T) {
	for _, tc := range []struct {
		name    string
		streams []v1alpha1.InFlightStream
		slo     time.Duration
		want    v1alpha1.Verdict
	}{
		{"cut within the SLO", []v1alpha1.InFlightStream{stream(v1alpha1.InFlightCut, 300*time.Millisecond, 40)}, time.Second, v1alpha1.VerdictSLOMet},
		{"completed past the SLO", []v1alpha1.InFlightStream{stream(v1alpha1.InFlightCompleted, 3*time.Second, 700)}, time.Second, v1alpha1.VerdictSLOBreached},
		{"an SLO of 0 and any canary byte", []v1alpha1.InFlightStream{stream(v1alpha1.InFlightCut, 0, 5)}, 0, v1alpha1.VerdictSLOBreached},
		{"an SLO of 0 and nothing after", []v1alpha1.InFlightStream{stream(v1alpha1.InFlightReauthorized, 0, 0)}, 0, v1alpha1.VerdictSLOMet},
		{"a failed stream leaves it open", []v1alpha1.InFlightStream{stream(v1alpha1.InFlightCut, 0, 0), stream(v1alpha1.InFlightError, 0, 0)}, time.Second, v1alpha1.VerdictInconclusive},
		{"a breach stands beside a failure", []v1alpha1.InFlightStream{stream(v1alpha1.InFlightCompleted, 3*time.Second, 700), stream(v1alpha1.InFlightError, 0, 0)}, time.Second, v1alpha1.VerdictSLOBreached},
		{"nothing in flight measures nothing", []v1alpha1.InFlightStream{stream(v1alpha1.InFlightEndedBeforeRevocation, 0, 0)}, time.Second, v1alpha1.VerdictInconclusive},
		{"no streams measure nothing", nil, time.Second, v1alpha1.VerdictInconclusive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, msg := InFlightVerdict(&v1alpha1.InFlightMeasurement{Streams: tc.streams}, tc.slo)
			if got != tc.want {
				t.Fatalf("verdict %s (%s), want %s", got, msg, tc.want)
			}
		})
	}
}

// TestInFlightInRunVerdict: the run's verdict carries the in-flight result
// at a surface's rank: its breach turns SLOMet into SLOBreached, what it
// left open makes the run Inconclusive, and a control sighting outranks it.
func TestInFlightInRunVerdict(t *testing.T) {
	rev := Revocation{Requested: time.Unix(100, 0), Acknowledged: time.Unix(100, 0)}
	excluded := v1alpha1.SurfaceMeasurement{Surface: v1alpha1.SurfaceSearch, Excluded: true,
		Bounds: &v1alpha1.ExclusionBounds{Lower: &metav1.Duration{Duration: time.Second}, Upper: &metav1.Duration{Duration: 2 * time.Second}}}
	slo := func(v1alpha1.Surface) time.Duration { return time.Minute }
	outcome := func(streams ...v1alpha1.InFlightStream) RunOutcome {
		return RunOutcome{Surfaces: []v1alpha1.SurfaceMeasurement{excluded}, SLO: slo, Revocation: rev,
			InFlight: &v1alpha1.InFlightMeasurement{Streams: streams}}
	}
	if v, msg := Verdict(outcome(stream(v1alpha1.InFlightCompleted, 2*time.Minute, 900))); v != v1alpha1.VerdictSLOBreached {
		t.Errorf("breach: %s (%s)", v, msg)
	}
	if v, msg := Verdict(outcome(stream(v1alpha1.InFlightError, 0, 0))); v != v1alpha1.VerdictInconclusive {
		t.Errorf("failed stream: %s (%s)", v, msg)
	}
	if v, msg := Verdict(outcome(stream(v1alpha1.InFlightCut, time.Second, 10))); v != v1alpha1.VerdictSLOMet {
		t.Errorf("cut: %s (%s)", v, msg)
	}
	o := outcome(stream(v1alpha1.InFlightError, 0, 0))
	o.IsolationViolations = 1
	if v, _ := Verdict(o); v != v1alpha1.VerdictIsolationViolation {
		t.Errorf("violation: %s", v)
	}
}

func TestHumanDelivery(t *testing.T) {
	for _, tc := range []struct {
		d     *metav1.Duration
		bytes int64
		want  string
	}{
		{nil, 0, "?"}, {&metav1.Duration{}, 0, "none"}, {&metav1.Duration{Duration: 1234 * time.Microsecond}, 3, "2ms"},
		{&metav1.Duration{Duration: 2610 * time.Millisecond}, 700, "2.7s"},
	} {
		if got := HumanDelivery(tc.d, tc.bytes); got != tc.want {
			t.Errorf("HumanDelivery(%v, %d) = %q, want %q", tc.d, tc.bytes, got, tc.want)
		}
	}
}
