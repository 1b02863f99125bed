package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// ts parses an RFC 3339 UTC time for test tables.
func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func every(d time.Duration) v1alpha1.Schedule {
	return v1alpha1.Schedule{Every: &metav1.Duration{Duration: d}}
}

func cronSpec(expr string) v1alpha1.Schedule { return v1alpha1.Schedule{Cron: expr} }

func mustParse(t *testing.T, s v1alpha1.Schedule) Schedule {
	t.Helper()
	p, err := Parse(s)
	if err != nil {
		t.Fatalf("Parse(%+v): %v", s, err)
	}
	return p
}

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		// in is the schedule as written by the user.
		in v1alpha1.Schedule
		// wantErr is a substring of the InvalidError message, "" for valid.
		wantErr string
	}{
		{name: "standard five fields", in: cronSpec("*/5 * * * *")},
		{name: "descriptor", in: cronSpec("@hourly")},
		{name: "every descriptor", in: cronSpec("@every 15m")},
		{name: "every field", in: every(time.Minute)},
		{name: "surrounding spaces are ignored", in: cronSpec("  @daily ")},
		{name: "neither set", in: v1alpha1.Schedule{}, wantErr: "exactly one"},
		{name: "both set", in: v1alpha1.Schedule{Cron: "@hourly", Every: &metav1.Duration{Duration: time.Minute}}, wantErr: "exactly one"},
		{name: "six fields (seconds) rejected", in: cronSpec("0 */5 * * * *"), wantErr: "five fields"},
		{name: "garbage", in: cronSpec("every tuesday"), wantErr: "is not valid"},
		{name: "out of range minute", in: cronSpec("61 * * * *"), wantErr: "is not valid"},
		{name: "time zone prefix", in: cronSpec("CRON_TZ=Europe/Berlin 0 9 * * *"), wantErr: "UTC"},
		{name: "never fires", in: cronSpec("0 0 30 2 *"), wantErr: "never fires"},
		{name: "sub-second every field", in: every(500 * time.Millisecond), wantErr: "at least 1s"},
		{name: "sub-second @every", in: cronSpec("@every 500ms"), wantErr: "at least 1s"},
		{name: "bad @every duration", in: cronSpec("@every soon"), wantErr: "invalid duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.in)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var inv *InvalidError
			if !errors.As(err, &inv) {
				t.Fatalf("error = %v, want *InvalidError", err)
			}
			if !strings.Contains(inv.Message, tt.wantErr) {
				t.Errorf("message %q does not contain %q", inv.Message, tt.wantErr)
			}
		})
	}
}

func TestNext(t *testing.T) {
	tests := []struct {
		name string
		// in is the schedule.
		in v1alpha1.Schedule
		// since is the last scheduled time (the anchor of fixed intervals).
		since time.Time
		// after is the time the next run must come strictly after.
		after time.Time
		// want is the expected next scheduled time.
		want time.Time
	}{
		{name: "cron next quarter hour", in: cronSpec("*/15 * * * *"),
			since: ts("2026-01-01T00:00:00Z"), after: ts("2026-01-01T10:07:30Z"), want: ts("2026-01-01T10:15:00Z")},
		{name: "cron strictly after an exact match", in: cronSpec("@hourly"),
			since: ts("2026-01-01T00:00:00Z"), after: ts("2026-01-01T10:00:00Z"), want: ts("2026-01-01T11:00:00Z")},
		{name: "cron is UTC whatever the input zone", in: cronSpec("0 9 * * *"),
			since: ts("2026-01-01T00:00:00Z"), after: ts("2026-01-01T10:00:00Z").In(time.FixedZone("X", 5*3600)), want: ts("2026-01-02T09:00:00Z")},
		{name: "every counts from since", in: every(10 * time.Minute),
			since: ts("2026-01-01T00:03:00Z"), after: ts("2026-01-01T00:27:00Z"), want: ts("2026-01-01T00:33:00Z")},
		{name: "every before since is since+every", in: every(time.Minute),
			since: ts("2026-01-01T00:03:00Z"), after: ts("2026-01-01T00:00:00Z"), want: ts("2026-01-01T00:04:00Z")},
		{name: "@every is a fixed interval from since", in: cronSpec("@every 90s"),
			since: ts("2026-01-01T00:00:07Z"), after: ts("2026-01-01T00:01:40Z"), want: ts("2026-01-01T00:03:07Z")},
		{name: "sub-second since is truncated", in: every(time.Minute),
			since: ts("2026-01-01T00:00:00Z").Add(400 * time.Millisecond), after: ts("2026-01-01T00:00:10Z"), want: ts("2026-01-01T00:01:00Z")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustParse(t, tt.in).Next(tt.since, tt.after)
			if !got.Equal(tt.want) {
				t.Errorf("Next = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestMostRecent(t *testing.T) {
	tests := []struct {
		name string
		// in is the schedule.
		in v1alpha1.Schedule
		// since is the last scheduled time or the creation time.
		since time.Time
		// now is the current time.
		now time.Time
		// want is the expected result: the one time that may still run and
		// how many older ones are skipped.
		want Missed
	}{
		{name: "nothing due yet", in: cronSpec("@hourly"),
			since: ts("2026-01-01T10:00:00Z"), now: ts("2026-01-01T10:59:59Z"), want: Missed{}},
		{name: "exactly due", in: cronSpec("@hourly"),
			since: ts("2026-01-01T10:00:00Z"), now: ts("2026-01-01T11:00:00Z"), want: Missed{Time: ts("2026-01-01T11:00:00Z")}},
		{name: "since itself is not due again", in: cronSpec("@hourly"),
			since: ts("2026-01-01T11:00:00Z"), now: ts("2026-01-01T11:00:00Z"), want: Missed{}},
		{name: "three missed: run only the latest", in: cronSpec("@hourly"),
			since: ts("2026-01-01T10:00:00Z"), now: ts("2026-01-01T13:30:00Z"), want: Missed{Time: ts("2026-01-01T13:00:00Z"), Skipped: 2}},
		{name: "every: latest of the missed intervals", in: every(15 * time.Minute),
			since: ts("2026-01-01T10:05:00Z"), now: ts("2026-01-01T11:00:00Z"), want: Missed{Time: ts("2026-01-01T10:50:00Z"), Skipped: 2}},
		{name: "every: nothing before one interval", in: every(15 * time.Minute),
			since: ts("2026-01-01T10:05:00Z"), now: ts("2026-01-01T10:19:59Z"), want: Missed{}},
		{name: "every: weeks down is arithmetic, exact count", in: every(time.Minute),
			since: ts("2026-01-01T00:00:00Z"), now: ts("2026-01-15T00:00:30Z"), want: Missed{Time: ts("2026-01-15T00:00:00Z"), Skipped: 14*24*60 - 1}},
		{name: "cron: weeks down is a bounded search, still the latest", in: cronSpec("* * * * *"),
			since: ts("2026-01-01T00:00:00Z"), now: ts("2026-01-15T00:00:30Z"), want: Missed{Time: ts("2026-01-15T00:00:00Z"), Skipped: maxMissedWalk, Truncated: true}},
		{name: "cron: irregular schedule after long downtime", in: cronSpec("*/5 9-17 * * 1-5"),
			since: ts("2026-01-01T00:00:00Z"), now: ts("2026-03-08T12:00:00Z"), // a Sunday
			want: Missed{Time: ts("2026-03-06T17:55:00Z"), Skipped: maxMissedWalk, Truncated: true}},
		{name: "now before since (clock behind creation)", in: cronSpec("@hourly"),
			since: ts("2026-06-01T00:00:00Z"), now: ts("2026-01-01T00:00:00Z"), want: Missed{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustParse(t, tt.in).MostRecent(tt.since, tt.now)
			if !got.Time.Equal(tt.want.Time) || got.Skipped != tt.want.Skipped || got.Truncated != tt.want.Truncated {
				t.Errorf("MostRecent = %+v, want %+v", got, tt.want)
			}
		})
	}
}
