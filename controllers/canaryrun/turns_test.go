package canaryrun

import (
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// turnCapped is a driver whose conversations hold at most turns turns.
type turnCapped struct {
	driver.Driver
	turns int
}

func (t turnCapped) MaxTurns() int { return t.turns }

// TestTurnsProblem: a run whose exclusion timeout at its probe interval
// could ask more turns of one conversation than the chat surface holds is
// refused, naming the figures and what to change; one that fits, or a
// target holding its conversations itself, is not.
func TestTurnsProblem(t *testing.T) {
	for _, tc := range []struct {
		name string
		// timeout and interval are the run's exclusion timeout and probe interval.
		timeout, interval time.Duration
		// d is the corpus's driver.
		d driver.Driver
		// want is a fragment of the refusal; "" when the run is accepted.
		want string
	}{
		{name: "issue 37's run against 16 turns", timeout: 20 * time.Second, interval: 500 * time.Millisecond,
			d: turnCapped{turns: 16}, want: "up to 50 turns in one conversation (exclusionTimeout 20s at probing.interval 500ms), more than the 16"},
		{name: "the defaults fit the default cap", timeout: 30 * time.Minute, interval: 5 * time.Second, d: turnCapped{turns: 1024}},
		{name: "a second a probe for 30m does not", timeout: 30 * time.Minute, interval: time.Second,
			d: turnCapped{turns: 1024}, want: "lengthen probing.interval or shorten exclusionTimeout"},
		{name: "exactly enough turns", timeout: 900 * time.Millisecond, interval: 100 * time.Millisecond, d: turnCapped{turns: 15}},
		{name: "one turn short", timeout: 900 * time.Millisecond, interval: 100 * time.Millisecond, d: turnCapped{turns: 14}, want: "more than the 14"},
		{name: "conversations held by the target", timeout: 30 * time.Minute, interval: 100 * time.Millisecond, d: turnCapped{turns: 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := &v1alpha1.CanaryRun{}
			run.Spec.Probing = v1alpha1.Probing{Interval: metav1.Duration{Duration: tc.interval},
				ExclusionTimeout: metav1.Duration{Duration: tc.timeout},
				Surfaces:         []v1alpha1.Surface{v1alpha1.SurfaceSearch, v1alpha1.SurfaceConversation}}
			got := turnsProblem(run, "target", tc.d)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("turnsProblem = %q, want %q", got, tc.want)
			}
		})
	}
}
