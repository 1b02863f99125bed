package schedule

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// maxMissedWalk bounds the forward walk over missed cron times. An operator
// that was down for a week under a minutely schedule has missed ~10k times;
// counting them one by one on every reconcile is wasted work, so past this
// bound the most recent time is found by a backwards window search instead.
const maxMissedWalk = 1000

// maxWindowWalk bounds the walk inside one search window, so that no
// schedule shape can make a reconcile spin.
const maxWindowWalk = 100_000

// Schedule is a parsed, validated v1alpha1.Schedule. The zero value is not
// usable; build one with Parse.
type Schedule struct {
	// expr is the expression as written, for logs and messages.
	expr string
	// cron is set for cron expressions other than @every.
	cron cron.Schedule
	// every is set for fixed intervals ("every" or "@every"); times are
	// anchor + k*every, so the phase follows the last scheduled time.
	every time.Duration
}

// InvalidError is a schedule the user must fix. Its message says what is
// wrong and how to write it, and is safe to put in a condition.
type InvalidError struct {
	Message string
}

func (e *InvalidError) Error() string { return e.Message }

func invalid(format string, args ...any) error {
	return &InvalidError{Message: fmt.Sprintf(format, args...)}
}

// cronHelp is appended to cron parse errors so the condition tells the user
// what a valid expression looks like.
const cronHelp = "use five fields (minute hour day-of-month month day-of-week), " +
	"a descriptor such as @hourly or @daily, or @every with a duration such as @every 15m"

// Parse validates s. Any returned error is an *InvalidError. The API server
// already enforces "exactly one of cron or every" with CEL; Parse checks it
// again because a reconciler must never trust that an object passed
// validation of an older CRD version.
func Parse(s v1alpha1.Schedule) (Schedule, error) {
	hasCron, hasEvery := strings.TrimSpace(s.Cron) != "", s.Every != nil
	switch {
	case hasCron == hasEvery:
		return Schedule{}, invalid("set exactly one of schedule.cron or schedule.every")
	case hasEvery:
		return parseEvery(s.Every.Duration, fmt.Sprintf("every %s", s.Every.Duration))
	default:
		return parseCron(strings.TrimSpace(s.Cron))
	}
}

// parseEvery builds a fixed-interval schedule. Sub-second parts are dropped
// because scheduled times are persisted with second precision.
func parseEvery(d time.Duration, expr string) (Schedule, error) {
	if d < time.Second {
		return Schedule{}, invalid("schedule interval %s is too short: use at least 1s", d)
	}
	return Schedule{expr: expr, every: d.Truncate(time.Second)}, nil
}

func parseCron(expr string) (Schedule, error) {
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return Schedule{}, invalid("schedule.cron %q has a time zone prefix: remove it, schedules are evaluated in UTC", expr)
	}
	if rest, ok := strings.CutPrefix(expr, "@every "); ok {
		// robfig silently rounds sub-second intervals up to 1s; reject them
		// like the every field does, so both spellings mean the same.
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil {
			return Schedule{}, invalid("schedule.cron %q has an invalid duration: %v; %s", expr, err, cronHelp)
		}
		return parseEvery(d, expr)
	}
	parsed, err := cron.ParseStandard(expr)
	if err != nil {
		return Schedule{}, invalid("schedule.cron %q is not valid: %v; %s", expr, err, cronHelp)
	}
	if spec, ok := parsed.(*cron.SpecSchedule); ok {
		// Without a TZ prefix robfig evaluates in the location of the time
		// passed in; pin UTC so the result never depends on the caller.
		spec.Location = time.UTC
	}
	s := Schedule{expr: expr, cron: parsed}
	// A syntactically valid expression can still never match (February 30);
	// robfig then returns the zero time, which must not become a hot loop.
	if parsed.Next(time.Unix(0, 0).UTC()).IsZero() {
		return Schedule{}, invalid("schedule.cron %q never fires: check the day-of-month and month fields", expr)
	}
	return s, nil
}

// String returns the expression as written.
func (s Schedule) String() string { return s.expr }

// Next returns the first scheduled time strictly after both since and
// after. since is the last scheduled time (or the parent's creation time);
// fixed intervals count from it. Zero means the schedule never fires again.
func (s Schedule) Next(since, after time.Time) time.Time {
	since, after = wholeSecondUTC(since), after.UTC()
	if s.every > 0 {
		if after.Before(since) {
			return since.Add(s.every)
		}
		k := after.Sub(since)/s.every + 1
		return since.Add(k * s.every)
	}
	if after.Before(since) {
		// A clock behind the creation time must not schedule before it.
		after = since
	}
	return s.cron.Next(after)
}

// Missed describes the scheduled times in (since, now].
type Missed struct {
	// Time is the most recent scheduled time in (since, now]; zero when no
	// time has come since. It is the only one that may still run: like
	// CronJob, older missed times are never run as a burst.
	Time time.Time
	// Skipped counts older scheduled times in (since, now] that will not
	// run. When Truncated it is a lower bound.
	Skipped int
	// Truncated is true when more times were missed than the bounded
	// search counts.
	Truncated bool
}

// MostRecent finds the most recent scheduled time in (since, now].
func (s Schedule) MostRecent(since, now time.Time) Missed {
	since, now = wholeSecondUTC(since), now.UTC()
	if !now.After(since) {
		return Missed{}
	}
	if s.every > 0 {
		k := int(now.Sub(since) / s.every)
		if k == 0 {
			return Missed{}
		}
		return Missed{Time: since.Add(time.Duration(k) * s.every), Skipped: k - 1}
	}
	return s.mostRecentCron(since, now)
}

func (s Schedule) mostRecentCron(since, now time.Time) Missed {
	t := s.cron.Next(since)
	if t.IsZero() || t.After(now) {
		return Missed{}
	}
	for skipped := 0; skipped < maxMissedWalk; skipped++ {
		n := s.cron.Next(t)
		if n.IsZero() || n.After(now) {
			return Missed{Time: t, Skipped: skipped}
		}
		t = n
	}
	return Missed{Time: s.latestBefore(t, now), Skipped: maxMissedWalk, Truncated: true}
}

// latestBefore finds the last cron time ≤ now, given that floor is a cron
// time ≤ now. It searches windows ending at now that double in length, so
// the work depends on the gap before now, not on how long ago floor was.
func (s Schedule) latestBefore(floor, now time.Time) time.Time {
	for window := time.Minute; ; window *= 2 {
		from := now.Add(-window)
		if !from.After(floor) {
			if last := s.lastIn(floor, now); !last.IsZero() {
				return last
			}
			return floor
		}
		if last := s.lastIn(from, now); !last.IsZero() {
			return last
		}
	}
}

// lastIn returns the last cron time in (from, now], or zero.
func (s Schedule) lastIn(from, now time.Time) time.Time {
	var last time.Time
	t := s.cron.Next(from)
	for i := 0; i < maxWindowWalk && !t.IsZero() && !t.After(now); i++ {
		last, t = t, s.cron.Next(t)
	}
	return last
}

// Period is the gap between scheduled time t and the one after it. It caps
// jitter so a delayed run never slides past its successor, and tells
// alerting how often a canary should complete.
func (s Schedule) Period(t time.Time) time.Duration {
	if s.every > 0 {
		return s.every
	}
	n := s.cron.Next(t)
	if n.IsZero() {
		return 0
	}
	return n.Sub(t)
}

// wholeSecondUTC drops sub-second parts: scheduled times round-trip through
// status with second precision.
func wholeSecondUTC(t time.Time) time.Time {
	return t.UTC().Truncate(time.Second)
}
