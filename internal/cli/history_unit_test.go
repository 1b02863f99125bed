package cli

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func durs(ds ...time.Duration) []*metav1.Duration {
	out := make([]*metav1.Duration, len(ds))
	for i, d := range ds {
		if d >= 0 {
			out[i] = &metav1.Duration{Duration: d}
		}
	}
	return out
}

func TestSparkline(t *testing.T) {
	const none = -1
	for _, tc := range []struct {
		name string
		in   []*metav1.Duration
		want string
	}{
		{"empty", nil, ""},
		{"scale from zero to the largest", durs(1*time.Second, 2*time.Second, 4*time.Second, 8*time.Second), "▁▂▄█"},
		{"tiny values still show", durs(time.Millisecond, time.Hour), "▁█"},
		{"missing values are dots, not zero", durs(2*time.Second, none, 2*time.Second), "█·█"},
		{"all zero", durs(0, 0), "▁▁"},
	} {
		if got := Sparkline(tc.in); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestSpread: nearest-rank percentiles over the values a run established;
// a run without one is counted as missing, never as a number.
func TestSpread(t *testing.T) {
	const none = -1
	var in []time.Duration
	for i := 1; i <= 20; i++ {
		in = append(in, time.Duration(i)*time.Second)
	}
	in = append(in, none)
	sp := spread(durs(in...))
	if sp.N != 20 || sp.Missing != 1 || sp.p50 != 10*time.Second || sp.p95 != 19*time.Second || sp.max != 20*time.Second {
		t.Errorf("spread n %d missing %d p50 %s p95 %s max %s, want 20 1 10s 19s 20s", sp.N, sp.Missing, sp.p50, sp.p95, sp.max)
	}
	if sp := spread(durs(none, none)); sp.N != 0 || sp.Missing != 2 || sp.P50Seconds != nil || sp.MaxSeconds != nil {
		t.Errorf("no values: %+v, want nothing computed", sp)
	}
	if sp := spread(durs(3 * time.Second)); sp.p50 != 3*time.Second || sp.p95 != 3*time.Second {
		t.Errorf("one value: p50 %s p95 %s", sp.p50, sp.p95)
	}
}
