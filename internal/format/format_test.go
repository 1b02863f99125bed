package format

import (
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
)

func TestHumanDuration(t *testing.T) {
	for _, tc := range []struct {
		in   time.Duration
		want string
	}{
		{0, "0s"},
		{850 * time.Millisecond, "850ms"},
		{849600 * time.Microsecond, "850ms"},
		// Rounding carries into the next unit and takes its layout.
		{999600 * time.Microsecond, "1s"},
		{1234 * time.Millisecond, "1.2s"},
		{5916485 * time.Microsecond, "5.9s"},
		{30 * time.Second, "30s"},
		{59960 * time.Millisecond, "1m"},
		{250 * time.Second, "4m10s"},
		{250400 * time.Millisecond, "4m10s"},
		{2*time.Hour + 3*time.Minute + 20*time.Second, "2h3m"},
		{26 * time.Hour, "26h"},
		{-1500 * time.Millisecond, "-1.5s"},
	} {
		if got := HumanDuration(tc.in); got != tc.want {
			t.Errorf("HumanDuration(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestRounded: Down never shows more than the value and Up never less,
// negative values included.
func TestRounded(t *testing.T) {
	for _, tc := range []struct {
		in   time.Duration
		r    Rounding
		want string
	}{
		{1290 * time.Millisecond, Down, "1.2s"},
		{1210 * time.Millisecond, Up, "1.3s"},
		{1250 * time.Millisecond, Nearest, "1.3s"},
		// Up carries into minutes.
		{59950 * time.Millisecond, Up, "1m"},
		// A negative value rounds away from zero when rounded down.
		{-1210 * time.Millisecond, Down, "-1.3s"},
		{-1290 * time.Millisecond, Up, "-1.2s"},
	} {
		if got := Rounded(tc.in, tc.r); got != tc.want {
			t.Errorf("Rounded(%s, %d) = %q, want %q", tc.in, tc.r, got, tc.want)
		}
	}
}

// TestInterval: rounding only widens an interval, so the shown interval
// always contains the measured one.
func TestInterval(t *testing.T) {
	const none = -1
	for _, tc := range []struct {
		name string
		in   *v1alpha1.ExclusionBounds
		want string
	}{
		{"nil", nil, "?"},
		{"empty", objects.Bounds(none, none), "?"},
		{"both, rounded outwards", objects.Bounds(1290*time.Millisecond, 1610*time.Millisecond), "1.2s–1.7s"},
		{"exact at the step", objects.Bounds(1200*time.Millisecond, 1700*time.Millisecond), "1.2s–1.7s"},
		{"sub-second lower", objects.Bounds(850400*time.Microsecond, 1010*time.Millisecond), "850ms–1.1s"},
		{"upper carries into minutes", objects.Bounds(59*time.Second, 59950*time.Millisecond), "59s–1m"},
		{"right-censored", objects.Bounds(30*time.Minute, none), ">30m"},
		{"right-censored lower rounds down", objects.Bounds(30*time.Second+999*time.Millisecond, none), ">30.9s"},
		{"upper only", objects.Bounds(none, 1610*time.Millisecond), "≤1.7s"},
	} {
		if got := Interval(tc.in); got != tc.want {
			t.Errorf("%s: Interval = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestBounds: the duration form shows what Interval shows for the same bounds.
func TestBounds(t *testing.T) {
	lower, upper := 1290*time.Millisecond, 1610*time.Millisecond
	for _, tc := range []struct {
		name         string
		lower, upper *time.Duration
		want         string
	}{
		{"none", nil, nil, "?"},
		{"both", &lower, &upper, "1.2s–1.7s"},
		{"lower only", &lower, nil, ">1.2s"},
		{"upper only", nil, &upper, "≤1.7s"},
	} {
		if got := Bounds(tc.lower, tc.upper); got != tc.want {
			t.Errorf("%s: Bounds = %q, want %q", tc.name, got, tc.want)
		}
	}
}
