package schedule

import (
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

func TestDecide(t *testing.T) {
	hourly := mustParse(t, cronSpec("@hourly"))
	tenMin := mustParse(t, every(10*time.Minute))
	created := ts("2026-01-01T09:30:00Z")
	const key = "3b0e7c3e-uid"
	// jit is the jitter the plan must apply to the 10:00 run with a 5m window.
	jit := Jitter(key, ts("2026-01-01T10:00:00Z"), 5*time.Minute)
	if jit == 0 {
		t.Fatal("test key gives zero jitter at 10:00; pick another so the jitter cases mean something")
	}
	jitNext := Jitter(key, ts("2026-01-01T11:00:00Z"), 5*time.Minute)

	tests := []struct {
		name string
		// in is the decision input; Parent is always "c", Key and Created as above.
		in Input
		// wantCreate is the expected run name, "" for none.
		wantCreate string
		// wantScheduled is the scheduled time the run consumes (zero for none).
		wantScheduled time.Time
		// wantToken is the run-now token the run consumes.
		wantToken string
		// wantReplace is whether active runs are deleted first.
		wantReplace bool
		// wantBlocked says why a due run was held back.
		wantBlocked Blocked
		// wantNext is the next due time (zero for none).
		wantNext time.Time
		// wantRequeue is the expected requeue delay (zero for none).
		wantRequeue time.Duration
	}{
		{name: "before the first time: wait for it",
			in:       Input{Schedule: &hourly, Now: ts("2026-01-01T09:45:00Z")},
			wantNext: ts("2026-01-01T10:00:00Z"), wantRequeue: 15 * time.Minute},
		{name: "first time due: create it, next is the following hour",
			in:         Input{Schedule: &hourly, Now: ts("2026-01-01T10:00:05Z")},
			wantCreate: "c-1767261600", wantScheduled: ts("2026-01-01T10:00:00Z"),
			wantNext: ts("2026-01-01T11:00:00Z"), wantRequeue: time.Hour - 5*time.Second},
		{name: "already ran this hour: nothing until next",
			in:       Input{Schedule: &hourly, LastScheduled: ts("2026-01-01T10:00:00Z"), Now: ts("2026-01-01T10:20:00Z")},
			wantNext: ts("2026-01-01T11:00:00Z"), wantRequeue: 40 * time.Minute},
		{name: "missed hours: one catch-up run for the latest only",
			in:         Input{Schedule: &hourly, LastScheduled: ts("2026-01-01T10:00:00Z"), Now: ts("2026-01-01T14:10:00Z")},
			wantCreate: "c-1767276000", wantScheduled: ts("2026-01-01T14:00:00Z"),
			wantNext: ts("2026-01-01T15:00:00Z"), wantRequeue: 50 * time.Minute},
		{name: "every counts from creation",
			in:         Input{Schedule: &tenMin, Now: ts("2026-01-01T09:40:00Z")},
			wantCreate: "c-1767260400", wantScheduled: ts("2026-01-01T09:40:00Z"),
			wantNext: ts("2026-01-01T09:50:00Z"), wantRequeue: 10 * time.Minute},
		{name: "jitter pending: not yet, come back at the jittered time",
			in:       Input{Schedule: &hourly, MaxJitter: 5 * time.Minute, LastScheduled: ts("2026-01-01T09:00:00Z"), Now: ts("2026-01-01T10:00:00Z")},
			wantNext: ts("2026-01-01T10:00:00Z").Add(jit), wantRequeue: max(jit, MinRequeue)},
		{name: "jitter elapsed: create, named by the scheduled (unjittered) time",
			in:         Input{Schedule: &hourly, MaxJitter: 5 * time.Minute, LastScheduled: ts("2026-01-01T09:00:00Z"), Now: ts("2026-01-01T10:00:00Z").Add(jit)},
			wantCreate: "c-1767261600", wantScheduled: ts("2026-01-01T10:00:00Z"),
			wantNext: ts("2026-01-01T11:00:00Z").Add(jitNext), wantRequeue: time.Hour + jitNext - jit},
		{name: "jitter is capped below the interval",
			in:          Input{Schedule: &tenMin, MaxJitter: time.Hour, LastScheduled: ts("2026-01-01T09:50:00Z"), Now: ts("2026-01-01T09:55:00Z")},
			wantNext:    ts("2026-01-01T10:00:00Z").Add(Jitter(key, ts("2026-01-01T10:00:00Z"), 10*time.Minute)),
			wantRequeue: 5*time.Minute + Jitter(key, ts("2026-01-01T10:00:00Z"), 10*time.Minute)},
		{name: "suspended: due run held, no next, no requeue",
			in:          Input{Schedule: &hourly, Suspended: true, Now: ts("2026-01-01T10:00:05Z")},
			wantBlocked: BlockedSuspended},
		{name: "suspended also holds run-now",
			in:          Input{Schedule: &hourly, Suspended: true, RunNowAnnotation: "go", Now: ts("2026-01-01T09:45:00Z")},
			wantBlocked: BlockedSuspended},
		{name: "forbid with an active run: wait, time stays due",
			in:          Input{Schedule: &hourly, Policy: v1alpha1.ForbidConcurrent, Active: 1, Now: ts("2026-01-01T10:00:05Z")},
			wantBlocked: BlockedActive, wantNext: ts("2026-01-01T11:00:00Z"), wantRequeue: time.Hour - 5*time.Second},
		{name: "allow with an active run: create",
			in:         Input{Schedule: &hourly, Policy: v1alpha1.AllowConcurrent, Active: 1, Now: ts("2026-01-01T10:00:05Z")},
			wantCreate: "c-1767261600", wantScheduled: ts("2026-01-01T10:00:00Z"),
			wantNext: ts("2026-01-01T11:00:00Z"), wantRequeue: time.Hour - 5*time.Second},
		{name: "allow below the cap: create",
			in:         Input{Schedule: &hourly, Policy: v1alpha1.AllowConcurrent, Active: 4, MaxActive: 5, Now: ts("2026-01-01T10:00:05Z")},
			wantCreate: "c-1767261600", wantScheduled: ts("2026-01-01T10:00:00Z"),
			wantNext: ts("2026-01-01T11:00:00Z"), wantRequeue: time.Hour - 5*time.Second},
		{name: "allow at the cap: wait as under forbid, time stays due",
			in:          Input{Schedule: &hourly, Policy: v1alpha1.AllowConcurrent, Active: 5, MaxActive: 5, Now: ts("2026-01-01T10:00:05Z")},
			wantBlocked: BlockedTooManyActive, wantNext: ts("2026-01-01T11:00:00Z"), wantRequeue: time.Hour - 5*time.Second},
		{name: "allow above the cap (runs created by hand): still waits",
			in:          Input{Schedule: &hourly, Policy: v1alpha1.AllowConcurrent, Active: 7, MaxActive: 5, RunNowAnnotation: "t1", Now: ts("2026-01-01T09:45:00Z")},
			wantBlocked: BlockedTooManyActive, wantNext: ts("2026-01-01T10:00:00Z"), wantRequeue: 15 * time.Minute},
		{name: "forbid at the cap keeps its own reason",
			in:          Input{Schedule: &hourly, Policy: v1alpha1.ForbidConcurrent, Active: 5, MaxActive: 5, Now: ts("2026-01-01T10:00:05Z")},
			wantBlocked: BlockedActive, wantNext: ts("2026-01-01T11:00:00Z"), wantRequeue: time.Hour - 5*time.Second},
		{name: "replace at the cap: the active runs go, so create",
			in:         Input{Schedule: &hourly, Policy: v1alpha1.ReplaceConcurrent, Active: 5, MaxActive: 5, Now: ts("2026-01-01T10:00:05Z")},
			wantCreate: "c-1767261600", wantScheduled: ts("2026-01-01T10:00:00Z"), wantReplace: true,
			wantNext: ts("2026-01-01T11:00:00Z"), wantRequeue: time.Hour - 5*time.Second},
		{name: "replace with an active run: delete then create",
			in:         Input{Schedule: &hourly, Policy: v1alpha1.ReplaceConcurrent, Active: 1, Now: ts("2026-01-01T10:00:05Z")},
			wantCreate: "c-1767261600", wantScheduled: ts("2026-01-01T10:00:00Z"), wantReplace: true,
			wantNext: ts("2026-01-01T11:00:00Z"), wantRequeue: time.Hour - 5*time.Second},
		{name: "run-now between scheduled times: scheduled time untouched",
			in:         Input{Schedule: &hourly, RunNowAnnotation: "t1", Now: ts("2026-01-01T09:45:00Z")},
			wantCreate: "c-now-" + ShortHash("t1"), wantToken: "t1",
			wantNext: ts("2026-01-01T10:00:00Z"), wantRequeue: 15 * time.Minute},
		{name: "run-now when a time is due too: one run consumes both",
			in:         Input{Schedule: &hourly, RunNowAnnotation: "t1", Now: ts("2026-01-01T10:00:05Z")},
			wantCreate: "c-now-" + ShortHash("t1"), wantToken: "t1", wantScheduled: ts("2026-01-01T10:00:00Z"),
			wantNext: ts("2026-01-01T11:00:00Z"), wantRequeue: time.Hour - 5*time.Second},
		{name: "run-now token already acted on",
			in:       Input{Schedule: &hourly, RunNowAnnotation: "t1", LastRunNowToken: "t1", Now: ts("2026-01-01T09:45:00Z")},
			wantNext: ts("2026-01-01T10:00:00Z"), wantRequeue: 15 * time.Minute},
		{name: "run-now under forbid with an active run waits",
			in:          Input{Schedule: &hourly, RunNowAnnotation: "t1", Active: 1, Now: ts("2026-01-01T09:45:00Z")},
			wantBlocked: BlockedActive, wantNext: ts("2026-01-01T10:00:00Z"), wantRequeue: 15 * time.Minute},
		{name: "no schedule (suite on request): run-now only",
			in:         Input{RunNowAnnotation: "t1", Now: ts("2026-01-01T09:45:00Z")},
			wantCreate: "c-now-" + ShortHash("t1"), wantToken: "t1"},
		{name: "no schedule, nothing asked: no requeue",
			in: Input{Now: ts("2026-01-01T09:45:00Z")}},
		{name: "next due a moment away: requeue is floored, never ≤ 0",
			in:       Input{Schedule: &hourly, LastScheduled: ts("2026-01-01T09:00:00Z"), Now: ts("2026-01-01T09:59:59.9Z")},
			wantNext: ts("2026-01-01T10:00:00Z"), wantRequeue: MinRequeue},
		{name: "clock behind creation: first time after creation",
			in:       Input{Schedule: &hourly, Now: ts("2025-12-31T00:00:00Z")},
			wantNext: ts("2026-01-01T10:00:00Z"), wantRequeue: 34 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.Parent, in.Key, in.Created = "c", key, created
			p := Decide(in)
			gotName, gotScheduled, gotToken := "", time.Time{}, ""
			if p.Create != nil {
				gotName, gotScheduled, gotToken = p.Create.Name, p.Create.Scheduled, p.Create.RunNowToken
			}
			if gotName != tt.wantCreate || !gotScheduled.Equal(tt.wantScheduled) || gotToken != tt.wantToken {
				t.Errorf("Create = (%q, %s, %q), want (%q, %s, %q)", gotName, gotScheduled, gotToken, tt.wantCreate, tt.wantScheduled, tt.wantToken)
			}
			if p.ReplaceActive != tt.wantReplace || p.Blocked != tt.wantBlocked {
				t.Errorf("ReplaceActive, Blocked = %v, %q, want %v, %q", p.ReplaceActive, p.Blocked, tt.wantReplace, tt.wantBlocked)
			}
			if !p.NextTime.Equal(tt.wantNext) {
				t.Errorf("NextTime = %s, want %s", p.NextTime, tt.wantNext)
			}
			if p.RequeueAfter != tt.wantRequeue {
				t.Errorf("RequeueAfter = %s, want %s", p.RequeueAfter, tt.wantRequeue)
			}
			if p.RequeueAfter < 0 || (p.RequeueAfter > 0 && p.RequeueAfter < MinRequeue) {
				t.Errorf("RequeueAfter = %s, must be 0 or ≥ %s", p.RequeueAfter, MinRequeue)
			}
		})
	}
}

// TestDecideReplay: deciding twice from the same input (a retried
// reconcile) names the same run, and after recording it the same moment
// creates nothing more.
func TestDecideReplay(t *testing.T) {
	s := mustParse(t, cronSpec("*/5 * * * *"))
	in := Input{Parent: "c", Key: "uid", Schedule: &s, MaxJitter: 2 * time.Minute,
		Created: ts("2026-01-01T00:00:00Z"), Now: ts("2026-01-01T00:59:00Z")}
	first, again := Decide(in), Decide(in)
	if first.Create == nil || again.Create == nil || first.Create.Name != again.Create.Name {
		t.Fatalf("replayed decision differs or creates nothing: %+v vs %+v", first.Create, again.Create)
	}
	in.LastScheduled = first.Create.Scheduled
	if after := Decide(in); after.Create != nil {
		t.Errorf("after recording %s the same moment creates %q", first.Create.Scheduled, after.Create.Name)
	}
}
