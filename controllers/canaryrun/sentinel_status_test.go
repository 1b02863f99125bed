package canaryrun

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

func TestSentinelVerdict(t *testing.T) {
	answered := []v1alpha1.ControlProbeCounts{
		{Persona: "mallory", Surface: v1alpha1.SurfaceSearch, Answered: 40, Errors: 2},
		{Persona: "mallory", Surface: v1alpha1.SurfaceAnswer, Answered: 38},
	}
	sighting := v1alpha1.SentinelSighting{Persona: "mallory", Surface: v1alpha1.SurfaceAnswer, Carriers: []string{"digest-rc#0"}}
	tests := []struct {
		name string
		// st is the sentinel status at the end of the lifetime.
		st *v1alpha1.SentinelStatus
		// violations is status.isolationViolations.
		violations int32
		// controls are the control personas' counts per surface.
		controls []v1alpha1.ControlProbeCounts
		want     v1alpha1.Verdict
		// msg are substrings of the message.
		msg []string
	}{
		{name: "clean lifetime with valid replies", st: &v1alpha1.SentinelStatus{}, controls: answered,
			want: v1alpha1.VerdictIsolated, msg: []string{"in 1h", "mallory on Search: 40 valid replies, 2 errors", "mallory on Answer: 38"}},
		{name: "a sighting", st: &v1alpha1.SentinelStatus{TotalSightings: 3, Sightings: []v1alpha1.SentinelSighting{sighting}}, violations: 3, controls: answered,
			want: v1alpha1.VerdictIsolationViolation, msg: []string{"3 probe(s)", "mallory", "Answer", "digest-rc#0"}},
		// A sighting outranks probes that failed.
		{name: "a sighting while other probes failed", st: &v1alpha1.SentinelStatus{TotalSightings: 1, Sightings: []v1alpha1.SentinelSighting{sighting}},
			controls: []v1alpha1.ControlProbeCounts{{Persona: "eve", Surface: v1alpha1.SurfaceSearch, Errors: 9}}, want: v1alpha1.VerdictIsolationViolation},
		// A violation counted without kept evidence still decides.
		{name: "violations without a kept sighting", violations: 1, controls: answered, want: v1alpha1.VerdictIsolationViolation},
		{name: "the own document", st: &v1alpha1.SentinelStatus{TotalSightings: 1, Sightings: []v1alpha1.SentinelSighting{{Persona: "eve", Surface: v1alpha1.SurfaceSearch, OwnDocument: true, Carriers: []string{"rc-1#0"}}}},
			want: v1alpha1.VerdictIsolationViolation, msg: []string{"access-list bug"}},
		{name: "a control that never got a valid reply", st: &v1alpha1.SentinelStatus{},
			controls: append([]v1alpha1.ControlProbeCounts{{Persona: "eve", Surface: v1alpha1.SurfaceAnswer, Errors: 12}}, answered...),
			want:     v1alpha1.VerdictInconclusive, msg: []string{"eve (Answer)"}},
		{name: "no status at all", controls: answered[:1], want: v1alpha1.VerdictIsolated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, msg := sentinelVerdict(tt.st, tt.violations, tt.controls, time.Hour)
			if got != tt.want {
				t.Fatalf("verdict %s (%s), want %s", got, msg, tt.want)
			}
			for _, m := range tt.msg {
				if !strings.Contains(msg, m) {
					t.Errorf("message %q does not contain %q", msg, m)
				}
			}
		})
	}
}

func TestWatchScheduleIsAdaptiveToTheLifetimeEnd(t *testing.T) {
	start := time.Unix(1000, 0)
	run := &v1alpha1.CanaryRun{}
	run.Spec.Sentinel = &v1alpha1.Sentinel{}
	run.Spec.Probing.Schedule = v1alpha1.ScheduleFixed
	run.Status.VisibleTime = &metav1.MicroTime{Time: start}
	startWatch(run)
	s := watchSchedule(run)
	if !s.Adaptive || !s.Start.Equal(start) || len(s.Deadlines) != 1 || !s.Deadlines[0].Equal(start.Add(DefaultSentinelLifetime)) || s.MaxInterval != 10*time.Minute {
		t.Fatalf("schedule %+v, want adaptive from visibility to the lifetime's end, capped at maxInterval", s)
	}
	if startWatch(run) {
		t.Fatal("a second startWatch moved the persisted window")
	}
}
