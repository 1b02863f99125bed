package revocationcanary

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/controllers/shared"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// Table tests of the pure status rules in revocationcanary_controller.go.

var statusEpoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func at(offset time.Duration) *metav1.Time {
	t := metav1.NewTime(statusEpoch.Add(offset))
	return &t
}

func summaryOf(name string, v v1alpha1.Verdict, completed *metav1.Time) *v1alpha1.RunSummary {
	return &v1alpha1.RunSummary{Name: name, Verdict: v, CompletionTime: completed}
}

func TestNewerThan(t *testing.T) {
	for _, tc := range []struct {
		name string
		// runName, created and completed describe the candidate run;
		// completed nil means the run recorded no completion time.
		runName   string
		created   time.Duration
		completed *metav1.Time
		// summary is the canary's current lastRun; nil when none yet.
		summary *v1alpha1.RunSummary
		// want is whether the run replaces the summary.
		want bool
	}{
		{name: "no summary yet", runName: "r1", completed: at(0), summary: nil, want: true},
		{name: "later run replaces", runName: "r2", completed: at(time.Minute), summary: summaryOf("r1", v1alpha1.VerdictSLOMet, at(0)), want: true},
		{name: "run finished at the same instant replaces", runName: "r2", completed: at(0), summary: summaryOf("r1", v1alpha1.VerdictSLOMet, at(0)), want: true},
		{name: "older run never overwrites a newer summary", runName: "r0", completed: at(-time.Minute), summary: summaryOf("r1", v1alpha1.VerdictSLOMet, at(0)), want: false},
		{name: "same run refreshes even when older", runName: "r1", completed: at(-time.Minute), summary: summaryOf("r1", v1alpha1.VerdictSLOMet, at(0)), want: true},
		{name: "summary without completion time is replaced", runName: "r0", completed: at(-time.Hour), summary: summaryOf("r1", v1alpha1.VerdictSLOMet, nil), want: true},
		{name: "run without completion time falls back to creation: created later", runName: "r2", created: time.Minute, completed: nil, summary: summaryOf("r1", v1alpha1.VerdictSLOMet, at(0)), want: true},
		{name: "run without completion time falls back to creation: created earlier", runName: "r0", created: -time.Minute, completed: nil, summary: summaryOf("r1", v1alpha1.VerdictSLOMet, at(0)), want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := &v1alpha1.CanaryRun{
				ObjectMeta: metav1.ObjectMeta{Name: tc.runName, CreationTimestamp: *at(tc.created)},
				Status:     v1alpha1.CanaryRunStatus{CompletionTime: tc.completed},
			}
			if got := newerThan(run, tc.summary); got != tc.want {
				t.Errorf("newerThan = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSLOCondition(t *testing.T) {
	for _, tc := range []struct {
		name string
		// last is the canary's lastRun; nil before any run finished.
		last *v1alpha1.RunSummary
		// wantStatus, wantReason and wantMessage are the condition's.
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		{name: "no run finished", last: nil,
			wantStatus: metav1.ConditionUnknown, wantReason: "NoRunFinished", wantMessage: "no canary run has finished yet"},
		{name: "latest met its SLO", last: summaryOf("r1", v1alpha1.VerdictSLOMet, at(0)),
			wantStatus: metav1.ConditionTrue, wantReason: "SLOMet", wantMessage: "run r1 met its SLO"},
		{name: "latest breached", last: summaryOf("r2", v1alpha1.VerdictSLOBreached, at(0)),
			wantStatus: metav1.ConditionFalse, wantReason: "SLOBreached", wantMessage: "run r2 finished with verdict SLOBreached"},
		{name: "latest inconclusive is not met", last: summaryOf("r3", v1alpha1.VerdictInconclusive, at(0)),
			wantStatus: metav1.ConditionFalse, wantReason: "Inconclusive", wantMessage: "run r3 finished with verdict Inconclusive"},
		{name: "isolation violation", last: summaryOf("r4", v1alpha1.VerdictIsolationViolation, at(0)),
			wantStatus: metav1.ConditionFalse, wantReason: "IsolationViolation", wantMessage: "run r4 finished with verdict IsolationViolation"},
		// The API server rejects an empty reason.
		{name: "finished without a verdict", last: summaryOf("r5", "", at(0)),
			wantStatus: metav1.ConditionFalse, wantReason: "NoVerdict", wantMessage: "run r5 finished with verdict NoVerdict"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const generation = 7
			want := metav1.Condition{Type: "SLOMet", Status: tc.wantStatus, Reason: tc.wantReason,
				Message: tc.wantMessage, ObservedGeneration: generation}
			if got := sloCondition(tc.last, generation); got != want {
				t.Errorf("sloCondition =\n %+v\nwant\n %+v", got, want)
			}
		})
	}
}

// recordedEvent is one event as the reconciler emitted it.
type recordedEvent struct {
	eventType, reason, action, note string
}

// eventLog is an in-memory events.EventRecorder.
type eventLog struct{ events []recordedEvent }

func (l *eventLog) Eventf(_, _ runtime.Object, eventType, reason, action, note string, args ...interface{}) {
	l.events = append(l.events, recordedEvent{eventType, reason, action, fmt.Sprintf(note, args...)})
}

func TestVerdictEvent(t *testing.T) {
	met := func(name string) *v1alpha1.RunSummary { return summaryOf(name, v1alpha1.VerdictSLOMet, at(0)) }
	breached := func(name string) *v1alpha1.RunSummary { return summaryOf(name, v1alpha1.VerdictSLOBreached, at(0)) }
	none := func(name string) *v1alpha1.RunSummary { return summaryOf(name, "", at(0)) }
	for _, tc := range []struct {
		name string
		// previous is lastRun before this observation; nil for the first run.
		previous *v1alpha1.RunSummary
		// latest is the summary replacing it.
		latest *v1alpha1.RunSummary
		// want is the events emitted, none when the verdict did not change.
		want []recordedEvent
	}{
		{name: "first run met: nothing to report", previous: nil, latest: met("r1")},
		{name: "first run breached: warning", previous: nil, latest: breached("r1"),
			want: []recordedEvent{{"Warning", "SLOBreached", "RunFinished", "run r1 finished with verdict SLOBreached"}}},
		{name: "met again: no transition", previous: met("r1"), latest: met("r2")},
		{name: "breached again: no transition", previous: breached("r1"), latest: breached("r2")},
		{name: "met then breached: warning", previous: met("r1"), latest: breached("r2"),
			want: []recordedEvent{{"Warning", "SLOBreached", "RunFinished", "run r2 finished with verdict SLOBreached"}}},
		{name: "breached then met: recovered", previous: breached("r1"), latest: met("r2"),
			want: []recordedEvent{{"Normal", "Recovered", "RunFinished", "run r2 met the SLO again after SLOBreached"}}},
		{name: "met then no verdict: warning named NoVerdict", previous: met("r1"), latest: none("r2"),
			want: []recordedEvent{{"Warning", "NoVerdict", "RunFinished", "run r2 finished with verdict NoVerdict"}}},
		{name: "no verdict then met: recovered after NoVerdict", previous: none("r1"), latest: met("r2"),
			want: []recordedEvent{{"Normal", "Recovered", "RunFinished", "run r2 met the SLO again after NoVerdict"}}},
		// The same run's summary refreshed is not a new verdict.
		{name: "same run refreshed with another verdict: silent", previous: met("r1"), latest: breached("r1")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := &eventLog{}
			r := &RevocationCanaryReconciler{ParentReconciler: shared.ParentReconciler{Recorder: log}}
			r.verdictEvent(&v1alpha1.RevocationCanary{}, tc.previous, tc.latest)
			if !slices.Equal(log.events, tc.want) {
				t.Errorf("events %+v, want %+v", log.events, tc.want)
			}
		})
	}
}
