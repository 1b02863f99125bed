package probe

import (
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/measure"
)

// TestExclusionTransitions checks which exclusion probes ask the controller
// to persist at once: those that change what a restarted operator could not
// observe again. Everything else waits for the heartbeat, which is what
// keeps an active run's status writes off the probe clock.
func TestExclusionTransitions(t *testing.T) {
	P, A, E := measure.Present, measure.Absent, measure.Error
	cases := []struct {
		name string
		// outcomes are the persona's probes on Search, one per round.
		outcomes []measure.Outcome
		// want is, per round, whether the round is a transition.
		want []bool
	}{
		{"first sighting, then the same sighting again", []measure.Outcome{P, P, P}, []bool{true, false, false}},
		{"errors change nothing that was seen", []measure.Outcome{P, E, E, P}, []bool{true, false, false, false}},
		{"first negative, then the streak grows to confirmation", []measure.Outcome{P, A, A, A, A}, []bool{true, true, false, true, false}},
		{"a reappearance mid-streak", []measure.Outcome{P, A, P, P}, []bool{true, true, true, false}},
		{"absent from the first probe", []measure.Outcome{A, A, A}, []bool{true, false, true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := newState(Plan{Stage: StageExclusion, Confirmations: 3, Surfaces: []v1alpha1.Surface{v1alpha1.SurfaceSearch}})
			at := time.Unix(1_700_000_000, 0)
			for i, o := range tc.outcomes {
				r := result{surface: v1alpha1.SurfaceSearch, outcome: o, start: at, end: at.Add(10 * time.Millisecond)}
				if got := st.apply([]v1alpha1.Surface{v1alpha1.SurfaceSearch}, []result{r}).transition; got != tc.want[i] {
					t.Errorf("round %d (%s): transition %v, want %v", i, o, got, tc.want[i])
				}
				at = at.Add(time.Second)
			}
		})
	}
}
