package report

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/internal/format"
)

// What people read: durations rounded (an interval only ever widened by
// the rounding), timestamps to the millisecond, ratios with their counts.
// The exact values are in the JSON format.

const none = "—"

func humanSeconds(s *Seconds) string {
	if s == nil {
		return none
	}
	return format.HumanDuration(s.Duration())
}

func humanInterval(lower, upper *Seconds) string {
	return format.Bounds(optionalDuration(lower), optionalDuration(upper))
}

func optionalDuration(s *Seconds) *time.Duration {
	if s == nil {
		return nil
	}
	d := s.Duration()
	return &d
}

func humanOffset(s *Seconds) string {
	if s == nil {
		return none
	}
	if s.Duration() >= 0 {
		return "+" + format.HumanDuration(s.Duration())
	}
	return format.HumanDuration(s.Duration())
}

func humanTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000 UTC") }

func humanTimePtr(t *time.Time) string {
	if t == nil {
		return none
	}
	return humanTime(*t)
}

// humanRatio shows numerator/denominator and the value, or says the metric
// is undefined: a zero denominator is never shown as 0 or 1.
func humanRatio(r Ratio) string {
	if r.Value == nil {
		return fmt.Sprintf("%s/%d undefined", numeratorOr0(r.Numerator), r.Denominator)
	}
	return fmt.Sprintf("%s/%d = %s", r.Numerator, r.Denominator, *r.Value)
}

func numeratorOr0(n string) string {
	if n == "" {
		return "0"
	}
	return n
}

func humanCount[T int32 | int64 | int](p *T) string {
	if p == nil {
		return none
	}
	return fmt.Sprint(*p)
}

func humanFloat(p *float64) string {
	if p == nil {
		return "undefined"
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.4f", *p), "0"), ".")
}

// againstText says in words what the bounds establish about the SLO.
func againstText(s SurfaceEvidence) string {
	slo := format.HumanDuration(s.SLO.Duration())
	switch s.AgainstSLO {
	case WithinSLO:
		return "within SLO (upper ≤ " + slo + ")"
	case UpperAboveSLO:
		return "upper bound above SLO " + slo
	case CertainBreach:
		return "certain breach (lower > " + slo + ")"
	}
	return "not established"
}

func verdictText(v string) string {
	if v == "" {
		return "undecided"
	}
	return v
}

func passedText(p *bool) string {
	switch {
	case p == nil:
		return "undecided"
	case *p:
		return "Passed"
	}
	return "Failed"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orNone(s string) string {
	if s == "" {
		return none
	}
	return s
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return none
	}
	return strings.Join(s, ", ")
}

// referencedNote says how far a referenced object's spec can be trusted to
// be the one the run used.
func referencedNote[S any](kind string, r Referenced[S]) string {
	switch {
	case r.Name == "":
		return kind + " unknown (the object naming it was not found)"
	case !r.Found:
		return kind + " " + r.Name + " was not found when this report was made"
	case r.ChangedSinceRun:
		return fmt.Sprintf("%s %s as read now (generation %d); it was written at %s, after the run was created, so it may differ from what the run used",
			kind, r.Name, r.Generation, humanTimePtr(r.LastWritten))
	}
	return fmt.Sprintf("%s %s as read now (generation %d); not written since the run was created", kind, r.Name, r.Generation)
}

func durationPtr(d *metav1.Duration) string {
	if d == nil {
		return none
	}
	return format.HumanDuration(d.Duration)
}

func durationVal(d metav1.Duration) string {
	if d.Duration == 0 {
		return none
	}
	return format.HumanDuration(d.Duration)
}
