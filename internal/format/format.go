// Package format shows durations and interval-censored bounds to people. It
// is a leaf: the controllers' short status fields, the reports and the
// kubectl plugin all format through it, so kubectl get, a report and the
// plugin print the same text for the same value.
//
// Rounding only ever widens an interval: a lower bound is rounded down and
// an upper bound up, so the interval shown always contains the one measured.
package format

import (
	"fmt"
	"math"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// Rounding says which way a duration is rounded to its display precision.
type Rounding int

const (
	// Nearest rounds half away from zero, for a point value.
	Nearest Rounding = iota
	// Down never shows more than the value, for a lower bound.
	Down
	// Up never shows less than the value, for an upper bound.
	Up
)

// HumanDuration rounds d for people: 850ms, 1.2s, 4m10s, 2h3m.
func HumanDuration(d time.Duration) string { return Rounded(d, Nearest) }

// Interval shows an ExclusionBounds as Bounds does; nil shows "?".
func Interval(b *v1alpha1.ExclusionBounds) string {
	if b == nil {
		return Bounds(nil, nil)
	}
	return Bounds(optional(b.Lower), optional(b.Upper))
}

// Bounds shows interval-censored bounds: "1.2s–1.7s", ">30s" when only the
// lower bound is known (right-censored), "≤1.7s" when only the upper bound
// is, and "?" when nothing was established.
func Bounds(lower, upper *time.Duration) string {
	switch {
	case lower == nil && upper == nil:
		return "?"
	case upper == nil:
		return ">" + Rounded(*lower, Down)
	case lower == nil:
		return "≤" + Rounded(*upper, Up)
	}
	return Rounded(*lower, Down) + "–" + Rounded(*upper, Up)
}

func optional(d *metav1.Duration) *time.Duration {
	if d == nil {
		return nil
	}
	v := d.Duration
	return &v
}

// Rounded shows d at the precision of its magnitude, rounded the way r says.
func Rounded(d time.Duration, r Rounding) string {
	if d < 0 {
		// A negative duration rounds the other way so Down still means smaller.
		return "-" + Rounded(-d, r.flipped())
	}
	// Rounding may carry into the next unit (999.6ms → 1s, 59.96s → 1m0s),
	// so the rounded value picks the layout, rounded again at its precision.
	d = roundTo(roundTo(d, r), r)
	switch {
	case d == 0:
		return "0s"
	case d < time.Second:
		return fmt.Sprintf("%dms", d/time.Millisecond)
	case d < time.Minute:
		s := fmt.Sprintf("%.1f", d.Seconds())
		return strings.TrimSuffix(s, ".0") + "s"
	case d < time.Hour:
		return joinUnits(int64(d/time.Minute), "m", int64(d%time.Minute/time.Second), "s")
	}
	return joinUnits(int64(d/time.Hour), "h", int64(d%time.Hour/time.Minute), "m")
}

func (r Rounding) flipped() Rounding {
	switch r {
	case Down:
		return Up
	case Up:
		return Down
	}
	return r
}

// precision is the display step for a duration of magnitude d: people read
// a sub-second time in milliseconds, seconds to a tenth, minutes to the
// second and hours to the minute.
func precision(d time.Duration) time.Duration {
	switch {
	case d < time.Second:
		return time.Millisecond
	case d < time.Minute:
		return 100 * time.Millisecond
	case d < time.Hour:
		return time.Second
	}
	return time.Minute
}

// roundTo rounds d to the precision of its magnitude.
func roundTo(d time.Duration, r Rounding) time.Duration {
	step := precision(d)
	switch r {
	case Down:
		return d.Truncate(step)
	case Up:
		if t := d.Truncate(step); t != d {
			return t + step
		}
		return d
	}
	return time.Duration(math.Round(float64(d)/float64(step))) * step
}

// joinUnits writes "4m10s", or "4m" when the smaller unit is zero.
func joinUnits(big int64, bigUnit string, small int64, smallUnit string) string {
	if small == 0 {
		return fmt.Sprintf("%d%s", big, bigUnit)
	}
	return fmt.Sprintf("%d%s%d%s", big, bigUnit, small, smallUnit)
}
