// Package cli is the logic behind the kubectl-ragcanary plugin: what each
// command reads from the cluster and how it is shown to a person. The
// formatting here is also what the controllers write into the short status
// fields printer columns show, so kubectl get and the plugin agree.
package cli

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// rounding says which way a duration is rounded to its display precision.
// An interval is shown with its lower bound rounded down and its upper bound
// rounded up, so rounding only ever widens it.
type rounding int

const (
	roundNearest rounding = iota
	roundDown
	roundUp
)

// HumanDuration rounds d for people: 850ms, 1.2s, 4m10s, 2h3m.
func HumanDuration(d time.Duration) string { return humanDuration(d, roundNearest) }

// Interval shows interval-censored bounds: "1.2s–1.7s", ">30s" when only the
// lower bound is known (right-censored), "≤1.7s" when only the upper bound
// is, and "?" when nothing was established.
func Interval(b *v1alpha1.ExclusionBounds) string {
	if b == nil || (b.Lower == nil && b.Upper == nil) {
		return "?"
	}
	switch {
	case b.Upper == nil:
		return ">" + humanDuration(b.Lower.Duration, roundDown)
	case b.Lower == nil:
		return "≤" + humanDuration(b.Upper.Duration, roundUp)
	}
	return humanDuration(b.Lower.Duration, roundDown) + "–" + humanDuration(b.Upper.Duration, roundUp)
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

func humanDuration(d time.Duration, r rounding) string {
	if d < 0 {
		// A negative duration rounds the other way so "down" still means smaller.
		flip := map[rounding]rounding{roundNearest: roundNearest, roundDown: roundUp, roundUp: roundDown}
		return "-" + humanDuration(-d, flip[r])
	}
	d = roundTo(d, r)
	// Rounding may carry into the next unit (999.6ms → 1s, 59.96s → 1m0s),
	// so the rounded value picks the layout, rounded again at its precision.
	d = roundTo(d, r)
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

// roundTo rounds d to the precision of its magnitude.
func roundTo(d time.Duration, r rounding) time.Duration {
	step := precision(d)
	switch r {
	case roundDown:
		return d.Truncate(step)
	case roundUp:
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
