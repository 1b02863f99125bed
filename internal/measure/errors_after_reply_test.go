package measure

import (
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// TestErrorsAfterASightingAreNoPresence: a probe error is never evidence
// that the token is still served. Time after the last valid reply is
// unknown, so a surface whose last valid reply saw the token but whose
// later probes all failed is undetermined: its lower bound stops at that
// last sighting and the run is Inconclusive saying why, never NotExcluded
// with the timeout as its lower bound.
func TestErrorsAfterASightingAreNoPresence(t *testing.T) {
	timeout := 20 * time.Second
	// sightingsThenErrors is issue 37's conversation, scaled: follow-ups
	// every 0.5s see the canary until the conversation's turns run out
	// 7.5s after the acknowledgement, then every follow-up is refused.
	var sightingsThenErrors []probe
	for s := 11.0; s <= 31; s += 0.5 {
		o := Present
		if s > 18.5 {
			o = Error
		}
		sightingsThenErrors = append(sightingsThenErrors, probe{o, s})
	}
	tests := []struct {
		name string
		// probes applied before the timeout.
		probes []probe
		// wantState is the classification at the timeout.
		wantState State
		// wantLower, wantUpper in seconds after the acknowledgement
		// (lower) and the request (upper); -1: unset.
		wantLower, wantUpper float64
		// wantVerdict and wantMessage (a fragment) are the run's verdict
		// with this surface alone.
		wantVerdict v1alpha1.Verdict
		wantMessage string
	}{
		{
			name:      "errors after the last sighting until the timeout",
			probes:    sightingsThenErrors,
			wantState: Undetermined, wantLower: 7.5, wantUpper: -1,
			wantVerdict: v1alpha1.VerdictInconclusive, wantMessage: "only probe errors",
		},
		{
			name:      "one error after a sighting, at the timeout",
			probes:    []probe{{Present, 12}, {Present, 29}, {Error, 30.5}},
			wantState: Undetermined, wantLower: 18, wantUpper: -1,
			wantVerdict: v1alpha1.VerdictInconclusive, wantMessage: "only probe errors",
		},
		{
			name:      "a sighting after errors is still visible at the timeout",
			probes:    []probe{{Present, 12}, {Error, 20}, {Present, 30.5}},
			wantState: StillVisible, wantLower: 20, wantUpper: -1,
			wantVerdict: v1alpha1.VerdictNotExcluded, wantMessage: "still served",
		},
		{
			name:      "errors between a sighting and a confirmed exclusion",
			probes:    []probe{{Present, 12}, {Error, 13}, {Absent, 14}, {Absent, 15}},
			wantState: Excluded, wantLower: 1, wantUpper: 4.1,
			wantVerdict: v1alpha1.VerdictSLOMet, wantMessage: "confirmed",
		},
		{
			name:      "errors after a negative stay undetermined",
			probes:    []probe{{Present, 12}, {Absent, 13}, {Error, 14}},
			wantState: Undetermined, wantLower: 1, wantUpper: -1,
			wantVerdict: v1alpha1.VerdictInconclusive, wantMessage: "probe errors",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := v1alpha1.SurfaceMeasurement{Surface: v1alpha1.SurfaceConversation}
			for _, p := range tc.probes {
				Record(&m, p.o, at(p.start), at(p.start+0.1), 2)
			}
			if got := Classify(&m, rev); got != tc.wantState {
				t.Errorf("state %d, want %d", got, tc.wantState)
			}
			Finalize(&m, rev, timeout)
			checkBounds(t, m.Bounds, tc.wantLower, tc.wantUpper)
			verdict, msg := Verdict(RunOutcome{Surfaces: []v1alpha1.SurfaceMeasurement{m}, Revocation: rev,
				SLO: func(v1alpha1.Surface) time.Duration { return time.Minute }})
			if verdict != tc.wantVerdict || !strings.Contains(msg, tc.wantMessage) {
				t.Errorf("verdict %s (%s), want %s saying %q", verdict, msg, tc.wantVerdict, tc.wantMessage)
			}
		})
	}
}
