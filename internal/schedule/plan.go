package schedule

import (
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// MinRequeue is the shortest delay Decide returns. A due time that is "now"
// or a moment in the past still waits this long, so a reconciler can never
// spin on a zero or negative delay.
const MinRequeue = time.Second

// Input is what Decide needs from a scheduling object and its runs.
type Input struct {
	// Parent is the object's name; run names derive from it.
	Parent string
	// Key identifies the object for jitter; use its UID so a recreated
	// object with the same name gets a fresh spread.
	Key string
	// Schedule is nil when the object has no schedule (an EvalSuite that
	// runs only on request); then only run-now creates runs.
	Schedule *Schedule
	// MaxJitter bounds the delay added to each scheduled time.
	MaxJitter time.Duration
	// Created is the object's creation time: the start of the schedule
	// before any run was scheduled.
	Created time.Time
	// LastScheduled is the scheduled time of the newest scheduled run, zero
	// when none was ever scheduled.
	LastScheduled time.Time
	// Now is the current time.
	Now time.Time
	// Suspended stops every new run, scheduled or run-now. A time that
	// falls due while suspended runs once on resume, like a missed time.
	Suspended bool
	// Policy is the concurrency policy; empty means Forbid.
	Policy v1alpha1.ConcurrencyPolicy
	// Active is the number of runs not yet finished.
	Active int
	// MaxActive caps Active whatever the policy allows: at the cap a due
	// run waits as under Forbid. Zero means no cap.
	MaxActive int
	// RunNowAnnotation is the run-now annotation value, empty when absent.
	RunNowAnnotation string
	// LastRunNowToken is status.lastRunNowToken.
	LastRunNowToken string
}

// Run is a run to create.
type Run struct {
	// Name is the deterministic run name.
	Name string
	// Scheduled is the scheduled time this run consumes; record it as the
	// last schedule time once the run exists. Zero for a pure run-now.
	Scheduled time.Time
	// RunNowToken is the token this run consumes; record it as the last
	// run-now token once the run exists. Empty for a scheduled run.
	RunNowToken string
}

// Blocked says why a due run was not created.
type Blocked string

const (
	// NotBlocked: nothing was due, or the due run is in Plan.Create.
	NotBlocked Blocked = ""
	// BlockedSuspended: the object is suspended.
	BlockedSuspended Blocked = "Suspended"
	// BlockedActive: the concurrency policy is Forbid and a run is active.
	BlockedActive Blocked = "Active"
	// BlockedTooManyActive: the policy allows overlap, but Input.MaxActive
	// runs are active already.
	BlockedTooManyActive Blocked = "TooManyActive"
)

// Plan is the decision for one reconcile.
type Plan struct {
	// Create is the run to create now, nil when none.
	Create *Run
	// ReplaceActive asks to delete the active runs before creating.
	ReplaceActive bool
	// Blocked says why a due run was held back.
	Blocked Blocked
	// Missed is the missed-time search for the schedule.
	Missed Missed
	// NextTime is when the next run is due (scheduled time plus jitter),
	// assuming Create is created. Zero when no run is expected: suspended,
	// or no schedule.
	NextTime time.Time
	// RequeueAfter is how long until the reconciler should look again;
	// zero when only a change to the object can make a run due. Never
	// negative, and at least MinRequeue when set.
	RequeueAfter time.Duration
}

// Decide computes what to create now and when to look again. At most one
// run is created per call: a run-now is preferred, and when a scheduled time
// is due at the same moment the run-now consumes it too, so asking for a
// run never causes two back to back.
func Decide(in Input) Plan {
	now := in.Now.UTC()
	scheduled, next, missed := dueScheduled(in, now)
	due := dueRun(in, scheduled)
	if due != nil && !due.Scheduled.IsZero() {
		// The due time is consumed: the next one comes after it.
		next = in.nextDue(due.Scheduled, now)
	}
	p := Plan{Missed: missed, NextTime: next}
	switch {
	case in.Suspended:
		// Nothing runs while suspended, so nothing is due next; resuming
		// is a spec change that brings the object back.
		p.NextTime = time.Time{}
		if due != nil {
			p.Blocked = BlockedSuspended
		}
	case due != nil:
		p.apply(in.concurrency(), due)
	}
	p.RequeueAfter = requeueAfter(p.NextTime, now)
	return p
}

// concurrency is the policy's action, bounded by the active-run cap.
func (in Input) concurrency() Action {
	action := Concurrency(in.Policy, in.Active)
	if action == ActionCreate && in.MaxActive > 0 && in.Active >= in.MaxActive {
		return actionWaitCapped
	}
	return action
}

// actionWaitCapped is ActionWait because of the active-run cap, not Forbid.
const actionWaitCapped Action = "WaitCapped"

// apply records the concurrency decision for a due run. A run held back by
// Forbid stays due (its time is not consumed) and starts as soon as the
// active runs finish, which re-triggers the reconciler; NextTime still
// bounds the wait.
func (p *Plan) apply(action Action, due *Run) {
	switch action {
	case ActionWait:
		p.Blocked = BlockedActive
	case actionWaitCapped:
		p.Blocked = BlockedTooManyActive
	case ActionReplace:
		p.Create, p.ReplaceActive = due, true
	default:
		p.Create = due
	}
}

// dueScheduled returns the scheduled time that is due now (zero if none),
// the next due time otherwise, and the missed-time search.
func dueScheduled(in Input, now time.Time) (scheduled, next time.Time, missed Missed) {
	if in.Schedule == nil {
		return time.Time{}, time.Time{}, Missed{}
	}
	since := in.since()
	missed = in.Schedule.MostRecent(since, now)
	if !missed.Time.IsZero() {
		at := missed.Time.Add(in.jitter(missed.Time))
		if !now.Before(at) {
			return missed.Time, time.Time{}, missed
		}
		// Scheduled but still inside its jitter delay.
		return time.Time{}, at, missed
	}
	return time.Time{}, in.nextDue(since, now), missed
}

// dueRun picks the run to create: a pending run-now first, else the due
// scheduled time.
func dueRun(in Input, scheduled time.Time) *Run {
	if token, pending := PendingRunNow(in.RunNowAnnotation, in.LastRunNowToken); pending {
		return &Run{Name: RunNowName(in.Parent, token), Scheduled: scheduled, RunNowToken: token}
	}
	if !scheduled.IsZero() {
		return &Run{Name: RunName(in.Parent, scheduled), Scheduled: scheduled}
	}
	return nil
}

// nextDue is the first scheduled time after now counted from since, plus
// its jitter; zero when the schedule never fires again.
func (in Input) nextDue(since, now time.Time) time.Time {
	if in.Schedule == nil {
		return time.Time{}
	}
	n := in.Schedule.Next(since, now)
	if n.IsZero() {
		return n
	}
	return n.Add(in.jitter(n))
}

// since is where the schedule counts from: the last scheduled time, or the
// creation time before the first run.
func (in Input) since() time.Time {
	if !in.LastScheduled.IsZero() {
		return in.LastScheduled
	}
	return in.Created
}

// jitter for scheduled time t, capped below the gap to the following time so
// a delayed run never slides past its successor.
func (in Input) jitter(t time.Time) time.Duration {
	limit := in.MaxJitter
	if p := in.Schedule.Period(t); p > 0 && p < limit {
		limit = p
	}
	return Jitter(in.Key, t, limit)
}

// requeueAfter is the delay until next, at least MinRequeue; zero for no
// next time.
func requeueAfter(next, now time.Time) time.Duration {
	if next.IsZero() {
		return 0
	}
	return max(next.Sub(now), MinRequeue)
}
