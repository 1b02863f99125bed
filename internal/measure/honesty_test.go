package measure

import (
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

func anySLO(v1alpha1.Surface) time.Duration { return time.Hour }

// TestVerdictNeverClaimsWhatWasNotObserved: runs whose probes are easy to
// over-read (a restart, only errors, a clock stepped back) get only the
// verdict their observations support.
func TestVerdictNeverClaimsWhatWasNotObserved(t *testing.T) {
	answered := []v1alpha1.ControlProbeCounts{{Persona: "carol", Answered: 3}}
	tests := []struct {
		name string
		// build returns the finalized measurement of the one surface.
		build func() v1alpha1.SurfaceMeasurement
		// controls are the control personas' counts.
		controls []v1alpha1.ControlProbeCounts
		want     v1alpha1.Verdict
		// wantIn must appear in the message.
		wantIn string
	}{
		{
			// Negatives, then a restart (Resume), then only errors: the
			// streak is gone but the last valid reply was an absence.
			name: "negatives, restart, then only errors is inconclusive, not NotExcluded",
			build: func() v1alpha1.SurfaceMeasurement {
				m := v1alpha1.SurfaceMeasurement{Surface: v1alpha1.SurfaceSearch}
				Record(&m, Present, at(12), at(12.1), 3)
				Record(&m, Absent, at(13), at(13.1), 3)
				Resume(&m)
				Record(&m, Error, at(20), at(20.1), 3)
				Record(&m, Error, at(21), at(21.1), 3)
				return m
			},
			controls: answered,
			want:     v1alpha1.VerdictInconclusive, wantIn: "probe errors",
		},
		{
			// The sighting survives the restart (lastReply), but the errors
			// after it are no evidence that it was still served: what the
			// run saw ends at the sighting.
			name: "a sighting before a restart, then only errors, is Inconclusive, never NotExcluded",
			build: func() v1alpha1.SurfaceMeasurement {
				m := v1alpha1.SurfaceMeasurement{Surface: v1alpha1.SurfaceSearch}
				Record(&m, Absent, at(12), at(12.1), 3)
				Record(&m, Present, at(13), at(13.1), 3)
				Resume(&m)
				Record(&m, Error, at(20), at(20.1), 3)
				return m
			},
			controls: answered,
			want:     v1alpha1.VerdictInconclusive, wantIn: "only probe errors",
		},
		{
			name: "a sighting before a restart and after it is NotExcluded",
			build: func() v1alpha1.SurfaceMeasurement {
				m := v1alpha1.SurfaceMeasurement{Surface: v1alpha1.SurfaceSearch}
				Record(&m, Absent, at(12), at(12.1), 3)
				Record(&m, Present, at(13), at(13.1), 3)
				Resume(&m)
				Record(&m, Error, at(20), at(20.1), 3)
				Record(&m, Present, at(21), at(21.1), 3)
				return m
			},
			controls: answered,
			want:     v1alpha1.VerdictNotExcluded,
		},
		{
			// The wall clock stepped back: the confirmed streak's first
			// negative ends before the revocation was acknowledged. The
			// upper bound must not be clamped to 0 and read as SLOMet.
			name: "a clock stepped back is inconclusive, never SLOMet",
			build: func() v1alpha1.SurfaceMeasurement {
				m := v1alpha1.SurfaceMeasurement{Surface: v1alpha1.SurfaceSearch}
				Record(&m, Absent, at(5), at(5.1), 2)
				Record(&m, Absent, at(6), at(6.1), 2)
				return m
			},
			controls: answered,
			want:     v1alpha1.VerdictInconclusive, wantIn: "clock stepped back",
		},
		{
			name: "a control persona without a single valid reply makes the run inconclusive",
			build: func() v1alpha1.SurfaceMeasurement {
				m := v1alpha1.SurfaceMeasurement{Surface: v1alpha1.SurfaceSearch}
				Record(&m, Absent, at(12), at(12.1), 1)
				return m
			},
			controls: []v1alpha1.ControlProbeCounts{{Persona: "carol", Answered: 2}, {Persona: "mallory", Errors: 40}},
			want:     v1alpha1.VerdictInconclusive, wantIn: "mallory",
		},
		{
			name: "answered controls and a confirmed exclusion within the SLO is SLOMet",
			build: func() v1alpha1.SurfaceMeasurement {
				m := v1alpha1.SurfaceMeasurement{Surface: v1alpha1.SurfaceSearch}
				Record(&m, Absent, at(12), at(12.1), 1)
				return m
			},
			controls: answered,
			want:     v1alpha1.VerdictSLOMet,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.build()
			Finalize(&m, rev, time.Minute)
			got, msg := Verdict(RunOutcome{Surfaces: []v1alpha1.SurfaceMeasurement{m}, SLO: anySLO,
				Revocation: rev, Controls: tc.controls})
			if got != tc.want || !strings.Contains(msg, tc.wantIn) {
				t.Fatalf("verdict %s (%q), want %s containing %q", got, msg, tc.want, tc.wantIn)
			}
		})
	}
}

// TestBoundsNeverShrinkOnAClockStep: a stepped-back clock yields no bound
// rather than a clamped zero upper bound.
func TestBoundsNeverShrinkOnAClockStep(t *testing.T) {
	m := v1alpha1.SurfaceMeasurement{Surface: v1alpha1.SurfaceSearch}
	Record(&m, Absent, at(5), at(5.1), 1)
	if b := Bounds(&m, rev); b != nil {
		t.Fatalf("bounds %v from timestamps before the acknowledgement; want none", b)
	}
}

// TestLiveExposureCountsOnlyWhatWasSeen: the gauge says how long a revoked
// token has been seen, never how long probes failed.
func TestLiveExposureCountsOnlyWhatWasSeen(t *testing.T) {
	ack, now := at(11), at(41)
	tests := []struct {
		name   string
		probes []probe
		want   time.Duration
	}{
		{"still seen", []probe{{Present, 20}}, 30 * time.Second},
		{"seen, then a valid absence", []probe{{Present, 20}, {Absent, 21}}, 9 * time.Second},
		{"only errors since the revocation", []probe{{Error, 20}, {Error, 21}}, 0},
		{"errors after a sighting", []probe{{Present, 20}, {Error, 21}}, 30 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := v1alpha1.SurfaceMeasurement{Surface: v1alpha1.SurfaceSearch}
			for _, p := range tc.probes {
				Record(&m, p.o, at(p.start), at(p.start+0.1), 3)
			}
			if got := LiveExposure(&m, ack, now); got != tc.want {
				t.Fatalf("exposure %s, want %s", got, tc.want)
			}
		})
	}
}

// TestControlsAreCountedPerSurface: a control persona answered on search
// but never on the answer surface did not test isolation there.
func TestControlsAreCountedPerSurface(t *testing.T) {
	m := v1alpha1.SurfaceMeasurement{Surface: v1alpha1.SurfaceSearch}
	Record(&m, Absent, at(12), at(12.1), 1)
	a := v1alpha1.SurfaceMeasurement{Surface: v1alpha1.SurfaceAnswer}
	Record(&a, Absent, at(12), at(12.1), 1)
	ms := []v1alpha1.SurfaceMeasurement{m, a}
	for i := range ms {
		Finalize(&ms[i], rev, time.Minute)
	}
	got, msg := Verdict(RunOutcome{Surfaces: ms, SLO: anySLO, Revocation: rev, Controls: []v1alpha1.ControlProbeCounts{
		{Persona: "carol", Surface: v1alpha1.SurfaceSearch, Answered: 4},
		{Persona: "carol", Surface: v1alpha1.SurfaceAnswer, Errors: 4},
	}})
	if got != v1alpha1.VerdictInconclusive || !strings.Contains(msg, "carol (Answer)") {
		t.Fatalf("verdict %s (%q), want Inconclusive naming carol (Answer)", got, msg)
	}
}
