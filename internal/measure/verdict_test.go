package measure

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

func TestVerdict(t *testing.T) {
	excludedAt := func(s v1alpha1.Surface, lower, upper float64) v1alpha1.SurfaceMeasurement {
		return v1alpha1.SurfaceMeasurement{Surface: s, Excluded: true, NegativeStreak: 2,
			Bounds: &v1alpha1.ExclusionBounds{Lower: dur(lower), Upper: dur(upper)}}
	}
	visible := v1alpha1.SurfaceMeasurement{Surface: v1alpha1.SurfaceAnswer,
		Bounds: &v1alpha1.ExclusionBounds{Lower: dur(30)}}
	visible.LastPositiveStart = &metav1.MicroTime{Time: at(39)}
	undetermined := v1alpha1.SurfaceMeasurement{Surface: v1alpha1.SurfaceSearch, NegativeStreak: 1,
		Probes: v1alpha1.ProbeCounts{Negative: 1, Errors: 5}}
	// errorsOnly never saw anything after revocation: all probes failed.
	errorsOnly := v1alpha1.SurfaceMeasurement{Surface: v1alpha1.SurfaceSearch, Probes: v1alpha1.ProbeCounts{Errors: 9}}
	slo := func(v1alpha1.Surface) time.Duration { return 10 * time.Second }

	tests := []struct {
		name string
		// surfaces are the finalized measurements.
		surfaces []v1alpha1.SurfaceMeasurement
		// violations are control-persona sightings.
		violations int32
		// setupFailed marks a run that never measured.
		setupFailed bool
		want        v1alpha1.Verdict
	}{
		{name: "within SLO", surfaces: []v1alpha1.SurfaceMeasurement{excludedAt(v1alpha1.SurfaceSearch, 1, 9)},
			want: v1alpha1.VerdictSLOMet},
		{name: "upper equal to SLO is met", surfaces: []v1alpha1.SurfaceMeasurement{excludedAt(v1alpha1.SurfaceSearch, 1, 10)},
			want: v1alpha1.VerdictSLOMet},
		{name: "upper over SLO is breached", surfaces: []v1alpha1.SurfaceMeasurement{excludedAt(v1alpha1.SurfaceSearch, 1, 11)},
			want: v1alpha1.VerdictSLOBreached},
		{name: "lower over SLO is a certain breach", surfaces: []v1alpha1.SurfaceMeasurement{excludedAt(v1alpha1.SurfaceSearch, 12, 13)},
			want: v1alpha1.VerdictSLOBreached},
		{name: "any surface breaching breaches", surfaces: []v1alpha1.SurfaceMeasurement{
			excludedAt(v1alpha1.SurfaceSearch, 1, 2), excludedAt(v1alpha1.SurfaceAnswer, 1, 20)},
			want: v1alpha1.VerdictSLOBreached},
		{name: "errors that left the streak short are inconclusive, never met",
			surfaces: []v1alpha1.SurfaceMeasurement{undetermined}, want: v1alpha1.VerdictInconclusive},
		{name: "only errors after revocation is inconclusive",
			surfaces: []v1alpha1.SurfaceMeasurement{errorsOnly}, want: v1alpha1.VerdictInconclusive},
		{name: "no surfaces is inconclusive", want: v1alpha1.VerdictInconclusive},
		{name: "still visible outranks inconclusive",
			surfaces: []v1alpha1.SurfaceMeasurement{undetermined, visible}, want: v1alpha1.VerdictNotExcluded},
		{name: "setup failure outranks not excluded",
			surfaces: []v1alpha1.SurfaceMeasurement{visible}, setupFailed: true, want: v1alpha1.VerdictSetupFailed},
		{name: "isolation violation outranks everything",
			surfaces: []v1alpha1.SurfaceMeasurement{excludedAt(v1alpha1.SurfaceSearch, 1, 2)}, violations: 1, setupFailed: true,
			want: v1alpha1.VerdictIsolationViolation},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, msg := Verdict(RunOutcome{Surfaces: tc.surfaces, IsolationViolations: tc.violations, SetupFailed: tc.setupFailed, SLO: slo})
			if got != tc.want {
				t.Errorf("verdict %s (%s), want %s", got, msg, tc.want)
			}
			if msg == "" {
				t.Error("empty message")
			}
		})
	}
}

func TestAmend(t *testing.T) {
	for _, tc := range []struct {
		name       string
		verdict    v1alpha1.Verdict
		violations int32
		// want is the amended verdict; kept is whether the message stays.
		want v1alpha1.Verdict
		kept bool
	}{
		{"no violation keeps the verdict", v1alpha1.VerdictSLOMet, 0, v1alpha1.VerdictSLOMet, true},
		{"a violation outranks SLOMet", v1alpha1.VerdictSLOMet, 1, v1alpha1.VerdictIsolationViolation, false},
		{"a violation outranks SetupFailed", v1alpha1.VerdictSetupFailed, 2, v1alpha1.VerdictIsolationViolation, false},
		{"a violation outranks Inconclusive", v1alpha1.VerdictInconclusive, 1, v1alpha1.VerdictIsolationViolation, false},
		{"an isolation verdict keeps its message", v1alpha1.VerdictIsolationViolation, 3, v1alpha1.VerdictIsolationViolation, true},
	} {
		got, msg := Amend(tc.verdict, "decided", tc.violations)
		if got != tc.want || (msg == "decided") != tc.kept {
			t.Errorf("%s: %s %q, want %s (message kept: %v)", tc.name, got, msg, tc.want, tc.kept)
		}
	}
}
