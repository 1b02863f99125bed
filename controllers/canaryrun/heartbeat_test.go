package canaryrun

import (
	"fmt"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestPersistNow is the rule deciding which probe results are written at
// once and which wait for the heartbeat.
func TestPersistNow(t *testing.T) {
	at := func(s int) *metav1.MicroTime { return &metav1.MicroTime{Time: time.Unix(1_700_000_000+int64(s), 0)} }
	visible := v1alpha1.SurfaceMeasurement{Surface: v1alpha1.SurfaceSearch, LastReply: "Present", LastPositiveStart: at(1),
		Probes: v1alpha1.ProbeCounts{Positive: 1}}
	with := func(edit func(*v1alpha1.SurfaceMeasurement)) []v1alpha1.SurfaceMeasurement {
		m := *visible.DeepCopy()
		edit(&m)
		return []v1alpha1.SurfaceMeasurement{m}
	}
	never := []v1alpha1.SurfaceMeasurement{{Surface: v1alpha1.SurfaceSearch}}
	cases := []struct {
		name string
		// persisted is what status holds; visible when nil.
		persisted []v1alpha1.SurfaceMeasurement
		// cur is the probe loop's measurement.
		cur  []v1alpha1.SurfaceMeasurement
		want bool
	}{
		{"nothing changed", nil, with(func(*v1alpha1.SurfaceMeasurement) {}), false},
		{"counters only", nil, with(func(m *v1alpha1.SurfaceMeasurement) { m.Probes.Positive, m.Probes.Errors = 9, 3 }), false},
		{"a later sighting of a token still visible", nil, with(func(m *v1alpha1.SurfaceMeasurement) { m.LastPositiveStart = at(40) }), false},
		{"first negative of a streak", nil, with(func(m *v1alpha1.SurfaceMeasurement) {
			m.LastReply, m.NegativeStreak, m.FirstNegativeEnd = "Absent", 1, at(41)
		}), true},
		{"exclusion confirmed", nil, with(func(m *v1alpha1.SurfaceMeasurement) { m.Excluded = true }), true},
		{"a reappearance", nil, with(func(m *v1alpha1.SurfaceMeasurement) { m.Reappearances = 1 }), true},
		{"first sighting after the revocation", never, with(func(m *v1alpha1.SurfaceMeasurement) {}), true},
		{"a surface status does not hold yet", nil, append(with(func(*v1alpha1.SurfaceMeasurement) {}),
			v1alpha1.SurfaceMeasurement{Surface: v1alpha1.SurfaceAnswer}), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			persisted := tc.persisted
			if persisted == nil {
				persisted = []v1alpha1.SurfaceMeasurement{visible}
			}
			if got := persistNow(persisted, tc.cur); got != tc.want {
				t.Errorf("persistNow = %v, want %v", got, tc.want)
			}
		})
	}
}

// A run's checkpoints fall on its own slots: never sooner than half an
// interval after the last write, never later than one and a half, exactly
// one per interval once nothing else writes, and a fleet's slots spread
// over the interval rather than bunching where the runs were created.
func TestCheckpointSlots(t *testing.T) {
	const interval = 20 * time.Minute
	start := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	phase := 7*time.Minute + 3*time.Second
	for _, last := range []time.Time{start, start.Add(6*time.Minute + 59*time.Second), start.Add(7*time.Minute + 3*time.Second), start.Add(17 * time.Minute)} {
		next := nextCheckpoint(last, interval, phase)
		if d := next.Sub(last); d < interval/2 || d > interval*3/2 {
			t.Errorf("after a write at %s the next checkpoint is %s later, want within [%s, %s]", last, d, interval/2, interval*3/2)
		}
		if off := mod(next.UnixNano()-int64(phase), int64(interval)); off != 0 {
			t.Errorf("checkpoint %s is %s off the run's slots", next, time.Duration(off))
		}
	}
	at := nextCheckpoint(start, interval, phase)
	for range 5 {
		next := nextCheckpoint(at, interval, phase)
		if d := next.Sub(at); d != interval {
			t.Errorf("steady state: checkpoints %s apart, want %s", d, interval)
		}
		at = next
	}

	// 10,000 runs created within one minute: their first checkpoints fill
	// every tenth of the interval with about a tenth of the fleet.
	var tenths [10]int
	for i := range 10000 {
		uid := types.UID(fmt.Sprintf("run-%d", i))
		created := start.Add(time.Duration(i) * 6 * time.Millisecond)
		next := nextCheckpoint(created, interval, checkpointPhase(uid, interval))
		tenths[int(mod(next.UnixNano(), int64(interval))*10/int64(interval))]++
	}
	for i, n := range tenths {
		if n < 800 || n > 1200 {
			t.Errorf("tenth %d of the interval holds %d of 10,000 first checkpoints, want about 1,000: %v", i, n, tenths)
		}
	}
}
