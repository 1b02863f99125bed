package probe

import (
	"fmt"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/measure"
)

func TestNextDue(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return start.Add(d) }
	adaptive := Schedule{Adaptive: true, Precision: 0.1, MaxInterval: 10 * time.Minute, Start: start}
	withDeadlines := func(ds ...time.Duration) Schedule {
		s := adaptive
		for _, d := range ds {
			s.Deadlines = append(s.Deadlines, at(d))
		}
		return s
	}
	tests := []struct {
		name string
		// schedule is the resolved spec; Start is always start.
		schedule Schedule
		// due is when the last round was due, as time since start.
		due time.Duration
		// outcome and streak summarise the last round.
		outcome measure.Outcome
		streak  int32
		// duration is the slowest probe of the last round.
		duration time.Duration
		// jitter is the random draw in [0, 1).
		jitter float64
		// want is the next due time, as time since start.
		want time.Duration
	}{
		{name: "fixed, middle of the jitter", schedule: Schedule{Start: start}, due: 100 * time.Second, outcome: measure.Present, jitter: 0.5, want: 101 * time.Second},
		{name: "fixed, shortest jitter", schedule: Schedule{Start: start}, due: 100 * time.Second, outcome: measure.Present, want: 100*time.Second + 900*time.Millisecond},
		{name: "fixed ignores deadlines", schedule: Schedule{Start: start, Deadlines: []time.Time{at(100*time.Second + 500*time.Millisecond)}}, due: 100 * time.Second, outcome: measure.Present, jitter: 0.5, want: 101 * time.Second},
		{name: "adaptive early: precision × elapsed below interval", schedule: adaptive, due: 3 * time.Second, outcome: measure.Present, want: 4 * time.Second},
		{name: "adaptive: precision × elapsed", schedule: adaptive, due: 100 * time.Second, outcome: measure.Present, want: 110 * time.Second},
		{name: "adaptive before the first sighting (visibility)", schedule: adaptive, due: 100 * time.Second, outcome: measure.Absent, want: 110 * time.Second},
		{name: "adaptive: the probe's own duration comes off the gap", schedule: adaptive, due: 100 * time.Second, outcome: measure.Present, duration: 2 * time.Second, want: 108 * time.Second},
		{name: "adaptive: capped at maxInterval", schedule: adaptive, due: 10 * time.Hour, outcome: measure.Present, want: 10*time.Hour + 10*time.Minute},
		{name: "adaptive: maxInterval below interval is interval", schedule: Schedule{Adaptive: true, Precision: 0.1, MaxInterval: time.Millisecond, Start: start}, due: time.Hour, outcome: measure.Present, jitter: 0.5, want: time.Hour + time.Second},
		{name: "adaptive: jitter only shortens the gap", schedule: adaptive, due: 100 * time.Second, outcome: measure.Present, jitter: 0.5, want: 109*time.Second + 500*time.Millisecond},
		{name: "adaptive: jitter never below interval", schedule: adaptive, due: 10 * time.Second, outcome: measure.Present, jitter: 0.99, want: 11 * time.Second},
		{name: "confirming a negative streak: interval spacing", schedule: adaptive, due: 100 * time.Second, outcome: measure.Absent, streak: 1, jitter: 0.5, want: 101 * time.Second},
		{name: "confirming, longer streak: interval spacing", schedule: adaptive, due: 100 * time.Second, outcome: measure.Absent, streak: 2, jitter: 0.5, want: 101 * time.Second},
		{name: "a failed probe is retried after interval", schedule: adaptive, due: 100 * time.Second, outcome: measure.Error, jitter: 0.5, want: 101 * time.Second},
		{name: "a positive after a negative: geometric again", schedule: adaptive, due: 200 * time.Second, outcome: measure.Present, streak: 0, want: 220 * time.Second},
		{name: "pulled back to end just before a deadline", schedule: withDeadlines(105*time.Second + 10*time.Millisecond), due: 100 * time.Second, outcome: measure.Present, want: 105 * time.Second},
		{name: "deadline lead is twice the probe duration", schedule: withDeadlines(106 * time.Second), due: 100 * time.Second, outcome: measure.Present, duration: time.Second, want: 106*time.Second - 2*time.Second - edgeMargin},
		{name: "just short of a deadline: one interval earlier, so the next lands on it", schedule: withDeadlines(110*time.Second + 500*time.Millisecond + edgeMargin), due: 100 * time.Second, outcome: measure.Present, want: 109*time.Second + 500*time.Millisecond},
		{name: "just short of a deadline, no room to shrink: stretched onto it", schedule: withDeadlines(16*time.Second + 800*time.Millisecond + edgeMargin), due: 15 * time.Second, outcome: measure.Present, want: 16*time.Second + 800*time.Millisecond},
		{name: "deadline closer than interval: missed, earliest round instead", schedule: withDeadlines(100*time.Second + 500*time.Millisecond), due: 100 * time.Second, outcome: measure.Present, want: 101 * time.Second},
		{name: "passed deadlines are ignored", schedule: withDeadlines(50 * time.Second), due: 100 * time.Second, outcome: measure.Present, want: 110 * time.Second},
		{name: "the nearest deadline counts, in any order", schedule: withDeadlines(300*time.Second, 104*time.Second+edgeMargin), due: 100 * time.Second, outcome: measure.Present, want: 104 * time.Second},
		{name: "a deadline far ahead changes nothing", schedule: withDeadlines(time.Hour), due: 100 * time.Second, outcome: measure.Present, want: 110 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := NextDue(ScheduleInput{Schedule: tc.schedule, Interval: time.Second, Due: at(tc.due),
				Outcome: tc.outcome, Streak: tc.streak, ProbeDuration: tc.duration, Jitter: tc.jitter})
			if want := at(tc.want); !got.Equal(want) {
				t.Fatalf("NextDue = +%s, want +%s", got.Sub(start), tc.want)
			}
		})
	}
}

// TestAdaptiveBracketsEveryLag runs the schedule against simulated lags,
// with probes that take no time, through the real measurement rules: the
// bound always contains the lag, is at most max(precision × lag, interval)
// wide, and the SLO verdict is the one the true lag deserves, however close
// to the SLO the lag falls.
func TestAdaptiveBracketsEveryLag(t *testing.T) {
	const (
		interval      = time.Second
		precision     = 0.1
		confirmations = 3
		slo           = 5 * time.Minute
	)
	requested := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	lags := []time.Duration{0, 700 * time.Millisecond, 10 * time.Second, 2 * time.Minute,
		slo - 20*time.Millisecond, slo - edgeMargin + time.Millisecond, slo + time.Millisecond, 20 * time.Minute, 24 * time.Hour}
	for _, lag := range lags {
		t.Run(fmt.Sprint(lag), func(t *testing.T) {
			s := Schedule{Adaptive: true, Precision: precision, MaxInterval: time.Hour, Start: requested,
				Deadlines: []time.Time{requested.Add(slo), requested.Add(48 * time.Hour)}}
			m := v1alpha1.SurfaceMeasurement{Surface: v1alpha1.SurfaceSearch}
			due, probes := requested, 0
			for !m.Excluded {
				o := measure.Absent
				if due.Sub(requested) < lag {
					o = measure.Present
				}
				measure.Record(&m, o, due, due, confirmations)
				probes++
				if probes > 10000 {
					t.Fatal("no exclusion after 10,000 probes")
				}
				due = NextDue(ScheduleInput{Schedule: s, Interval: interval, Due: due, Outcome: o, Streak: m.NegativeStreak})
			}
			b := measure.Bounds(&m, measure.Revocation{Requested: requested, Acknowledged: requested})
			lower, upper := b.Lower.Duration, b.Upper.Duration
			if lag < lower || lag > upper {
				t.Fatalf("bounds [%s, %s] miss the lag %s", lower, upper, lag)
			}
			if width, limit := upper-lower, max(time.Duration(precision*float64(lag)), interval); width > limit {
				t.Fatalf("width %s above %s for lag %s", width, limit, lag)
			}
			breached := upper > slo || lower > slo
			if want := lag > slo-edgeMargin; breached != want {
				t.Fatalf("bounds [%s, %s] judge the SLO breached=%v, the lag %s deserves %v", lower, upper, breached, lag, want)
			}
			t.Logf("lag %s: %d probes, bounds [%s, %s]", lag, probes, lower, upper)
		})
	}
}

func TestParsePrecision(t *testing.T) {
	for in, want := range map[string]float64{"": DefaultPrecision, "10%": 0.1, "2.5%": 0.025, "100%": 1} {
		if got, err := ParsePrecision(in); err != nil || got != want {
			t.Errorf("ParsePrecision(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"10", "0%", "-1%", "101%", "ten%", "%"} {
		if _, err := ParsePrecision(in); err == nil {
			t.Errorf("ParsePrecision(%q) accepted", in)
		}
	}
}
