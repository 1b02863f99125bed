package measure

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// at is t0 plus seconds.
func at(s float64) time.Time { return t0.Add(secs(s)) }

// secs converts seconds to a duration at millisecond precision.
func secs(s float64) time.Duration { return time.Duration(math.Round(s*1000)) * time.Millisecond }

func dur(s float64) *metav1.Duration {
	return &metav1.Duration{Duration: secs(s)}
}

// probe is one probe observed from start to start+0.1s.
type probe struct {
	o     Outcome
	start float64
}

// rev: revocation requested at 10s, acknowledged at 11s.
var rev = Revocation{Requested: at(10), Acknowledged: at(11)}

func TestRecordAndBounds(t *testing.T) {
	tests := []struct {
		name string
		// probes are applied in order; each lasts 0.1s.
		probes []probe
		// confirmations needed for exclusion.
		confirmations int32
		// wantExcluded is whether exclusion is confirmed.
		wantExcluded bool
		// wantStreak is the negative streak after the probes.
		wantStreak int32
		// wantReappear counts positives that followed a negative.
		wantReappear int32
		// wantCounts are the probe counters.
		wantCounts v1alpha1.ProbeCounts
		// wantLower, wantUpper are the bounds in seconds (-1: no bounds).
		wantLower, wantUpper float64
	}{
		{
			name:          "positives then confirmed negatives",
			probes:        []probe{{Present, 12}, {Present, 13}, {Absent, 14}, {Absent, 15}},
			confirmations: 2,
			wantExcluded:  true, wantStreak: 2,
			wantCounts: v1alpha1.ProbeCounts{Positive: 2, Negative: 2},
			// lower = 13 - 11; upper = 14.1 - 10
			wantLower: 2, wantUpper: 4.1,
		},
		{
			name:          "no positive after revocation gives lower 0",
			probes:        []probe{{Absent, 12}, {Absent, 13}},
			confirmations: 2,
			wantExcluded:  true, wantStreak: 2,
			wantCounts: v1alpha1.ProbeCounts{Negative: 2},
			wantLower:  0, wantUpper: 2.1,
		},
		{
			name:          "positive before acknowledgement floors lower at 0",
			probes:        []probe{{Present, 10.5}, {Absent, 12}},
			confirmations: 1,
			wantExcluded:  true, wantStreak: 1,
			wantCounts: v1alpha1.ProbeCounts{Positive: 1, Negative: 1},
			wantLower:  0, wantUpper: 2.1,
		},
		{
			name:          "errors are never absences: only errors never exclude",
			probes:        []probe{{Present, 12}, {Error, 13}, {Error, 14}, {Error, 15}},
			confirmations: 2,
			wantExcluded:  false, wantStreak: 0,
			wantCounts: v1alpha1.ProbeCounts{Positive: 1, Errors: 3},
			wantLower:  -1, wantUpper: -1,
		},
		{
			name:          "an error between negatives does not count toward the streak",
			probes:        []probe{{Absent, 12}, {Error, 13}},
			confirmations: 2,
			wantExcluded:  false, wantStreak: 1,
			wantCounts: v1alpha1.ProbeCounts{Negative: 1, Errors: 1},
			wantLower:  -1, wantUpper: -1,
		},
		{
			name:          "an error between negatives does not reset the streak either",
			probes:        []probe{{Absent, 12}, {Error, 13}, {Absent, 14}},
			confirmations: 2,
			wantExcluded:  true, wantStreak: 2,
			wantCounts: v1alpha1.ProbeCounts{Negative: 2, Errors: 1},
			// the streak began at the first negative
			wantLower: 0, wantUpper: 2.1,
		},
		{
			name:          "a positive after a negative is a reappearance and resets the streak",
			probes:        []probe{{Present, 12}, {Absent, 13}, {Present, 14}, {Absent, 15}, {Absent, 16}},
			confirmations: 2,
			wantExcluded:  true, wantStreak: 2, wantReappear: 1,
			wantCounts: v1alpha1.ProbeCounts{Positive: 2, Negative: 3},
			// lower from the reappearance at 14; upper from the new streak at 15.1
			wantLower: 3, wantUpper: 5.1,
		},
		{
			name:          "a reappearance after confirmed exclusion undoes it",
			probes:        []probe{{Absent, 12}, {Absent, 13}, {Present, 14}},
			confirmations: 2,
			wantExcluded:  false, wantStreak: 0, wantReappear: 1,
			wantCounts: v1alpha1.ProbeCounts{Positive: 1, Negative: 2},
			wantLower:  -1, wantUpper: -1,
		},
		{
			name:          "negatives after confirmation keep the first streak's bounds",
			probes:        []probe{{Absent, 12}, {Absent, 13}, {Absent, 14}},
			confirmations: 2,
			wantExcluded:  true, wantStreak: 2,
			wantCounts: v1alpha1.ProbeCounts{Negative: 3},
			wantLower:  0, wantUpper: 2.1,
		},
		{
			name:          "confirmations below 1 behave as 1",
			probes:        []probe{{Absent, 12}},
			confirmations: 0,
			wantExcluded:  true, wantStreak: 1,
			wantCounts: v1alpha1.ProbeCounts{Negative: 1},
			wantLower:  0, wantUpper: 2.1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := v1alpha1.SurfaceMeasurement{Surface: v1alpha1.SurfaceSearch}
			for _, p := range tc.probes {
				Record(&m, p.o, at(p.start), at(p.start+0.1), tc.confirmations)
			}
			if m.Excluded != tc.wantExcluded || m.NegativeStreak != tc.wantStreak || m.Reappearances != tc.wantReappear {
				t.Errorf("excluded=%v streak=%d reappear=%d, want %v %d %d",
					m.Excluded, m.NegativeStreak, m.Reappearances, tc.wantExcluded, tc.wantStreak, tc.wantReappear)
			}
			if m.Probes != tc.wantCounts {
				t.Errorf("counts %+v, want %+v", m.Probes, tc.wantCounts)
			}
			checkBounds(t, Bounds(&m, rev), tc.wantLower, tc.wantUpper)
		})
	}
}

// checkBounds compares b against seconds; -1 means "no bound".
func checkBounds(t *testing.T, b *v1alpha1.ExclusionBounds, lower, upper float64) {
	t.Helper()
	if lower < 0 && upper < 0 {
		if b != nil {
			t.Fatalf("bounds %+v, want none", b)
		}
		return
	}
	if b == nil {
		t.Fatalf("no bounds, want [%v, %v]", lower, upper)
	}
	check := func(name string, got *metav1.Duration, want float64) {
		if want < 0 {
			if got != nil {
				t.Errorf("%s = %s, want none", name, got.Duration)
			}
			return
		}
		if got == nil || *got != *dur(want) {
			t.Errorf("%s = %v, want %v", name, got, dur(want).Duration)
		}
	}
	check("lower", b.Lower, lower)
	check("upper", b.Upper, upper)
}

func TestResumeDropsUnconfirmedStreak(t *testing.T) {
	tests := []struct {
		name string
		// in is the measurement read back from status.
		in v1alpha1.SurfaceMeasurement
		// wantStreak and wantFirstNeg after Resume.
		wantStreak   int32
		wantFirstNeg bool
	}{
		{
			name:       "partial streak restarts after a restart",
			in:         v1alpha1.SurfaceMeasurement{NegativeStreak: 1, FirstNegativeEnd: &metav1.MicroTime{Time: at(12)}},
			wantStreak: 0, wantFirstNeg: false,
		},
		{
			name:       "confirmed exclusion survives",
			in:         v1alpha1.SurfaceMeasurement{NegativeStreak: 2, Excluded: true, FirstNegativeEnd: &metav1.MicroTime{Time: at(12)}},
			wantStreak: 2, wantFirstNeg: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.in
			Resume(&m)
			if m.NegativeStreak != tc.wantStreak || (m.FirstNegativeEnd != nil) != tc.wantFirstNeg {
				t.Errorf("streak=%d firstNeg=%v, want %d %v", m.NegativeStreak, m.FirstNegativeEnd, tc.wantStreak, tc.wantFirstNeg)
			}
		})
	}
}

func TestResumeOnlyWidensUpperBound(t *testing.T) {
	m := v1alpha1.SurfaceMeasurement{}
	Record(&m, Absent, at(12), at(12.1), 2)
	before := m.FirstNegativeEnd.Time
	Resume(&m)
	Record(&m, Absent, at(20), at(20.1), 2)
	Record(&m, Absent, at(21), at(21.1), 2)
	b := Bounds(&m, rev)
	if b == nil || b.Upper.Duration < before.Sub(rev.Requested) {
		t.Fatalf("upper %v narrower than before the restart", b)
	}
}

func TestFinalize(t *testing.T) {
	timeout := 30 * time.Second
	tests := []struct {
		name string
		// probes applied before the timeout.
		probes []probe
		// wantState is the classification.
		wantState State
		// wantLower, wantUpper in seconds (-1: unset).
		wantLower, wantUpper float64
	}{
		{
			name:      "still visible is right-censored at the timeout",
			probes:    []probe{{Present, 12}, {Present, 40}},
			wantState: StillVisible, wantLower: 30, wantUpper: -1,
		},
		{
			name:      "errors after a negative leave it undetermined",
			probes:    []probe{{Present, 12}, {Absent, 13}, {Error, 14}, {Error, 15}},
			wantState: Undetermined, wantLower: 1, wantUpper: -1,
		},
		{
			name:      "only errors is undetermined with lower 0",
			probes:    []probe{{Error, 12}},
			wantState: Undetermined, wantLower: 0, wantUpper: -1,
		},
		{
			name:      "confirmed exclusion keeps its interval",
			probes:    []probe{{Present, 12}, {Absent, 13}, {Absent, 14}},
			wantState: Excluded, wantLower: 1, wantUpper: 3.1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := v1alpha1.SurfaceMeasurement{Surface: v1alpha1.SurfaceSearch}
			for _, p := range tc.probes {
				Record(&m, p.o, at(p.start), at(p.start+0.1), 2)
			}
			if got := Classify(&m, rev); got != tc.wantState {
				t.Fatalf("state %d, want %d", got, tc.wantState)
			}
			Finalize(&m, rev, timeout)
			checkBounds(t, m.Bounds, tc.wantLower, tc.wantUpper)
		})
	}
}

func TestLiveExposure(t *testing.T) {
	tests := []struct {
		name string
		// excluded is whether the surface confirmed exclusion.
		excluded bool
		// ack is the acknowledgement time (zero: not yet revoked).
		ack time.Time
		// want exposure at 40s.
		want time.Duration
	}{
		{name: "visible since acknowledgement", ack: at(11), want: 29 * time.Second},
		{name: "zero after exclusion", excluded: true, ack: at(11), want: 0},
		{name: "zero before revocation", want: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The last valid reply saw the token (see also
			// TestLiveExposureCountsOnlyWhatWasSeen).
			m := v1alpha1.SurfaceMeasurement{Excluded: tc.excluded, LastReply: replyPresent}
			if got := LiveExposure(&m, tc.ack, at(40)); got != tc.want {
				t.Errorf("exposure %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMicroRoundingWidens(t *testing.T) {
	tests := []struct {
		name string
		// in is the captured time.
		in time.Time
		// wantFloor and wantCeil are the rounded times.
		wantFloor, wantCeil time.Time
	}{
		{name: "whole microsecond unchanged", in: t0.Add(5 * time.Microsecond),
			wantFloor: t0.Add(5 * time.Microsecond), wantCeil: t0.Add(5 * time.Microsecond)},
		{name: "one nanosecond past", in: t0.Add(5*time.Microsecond + 1),
			wantFloor: t0.Add(5 * time.Microsecond), wantCeil: t0.Add(6 * time.Microsecond)},
		{name: "one nanosecond short", in: t0.Add(6*time.Microsecond - 1),
			wantFloor: t0.Add(5 * time.Microsecond), wantCeil: t0.Add(6 * time.Microsecond)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := FloorMicro(tc.in).Time; !got.Equal(tc.wantFloor) {
				t.Errorf("FloorMicro = %s, want %s", got, tc.wantFloor)
			}
			if got := CeilMicro(tc.in).Time; !got.Equal(tc.wantCeil) {
				t.Errorf("CeilMicro = %s, want %s", got, tc.wantCeil)
			}
		})
	}
}

// TestBoundsSurviveStatusRoundTrip: probe times with nanoseconds and a
// monotonic clock reading give exactly the same bounds after the
// measurement and the revocation times went through status JSON, as an
// operator restart rebuilds them, and the bounds are never narrower than
// the unrounded times would give.
func TestBoundsSurviveStatusRoundTrip(t *testing.T) {
	base := time.Now() // has a monotonic reading, like the probe clock's times
	at := func(s float64, ns time.Duration) time.Time { return base.Add(secs(s) + ns) }
	type persisted struct {
		Requested    *metav1.MicroTime           `json:"requested"`
		Acknowledged *metav1.MicroTime           `json:"acknowledged"`
		Surface      v1alpha1.SurfaceMeasurement `json:"surface"`
	}
	live := persisted{Requested: FloorMicro(at(0, 123)), Acknowledged: CeilMicro(at(0.05, 456))}
	Record(&live.Surface, Present, at(1, 789), at(1.1, 1), 2)
	Record(&live.Surface, Absent, at(1.2, 999), at(1.3, 7), 2)
	Record(&live.Surface, Absent, at(1.4, 3), at(1.5, 5), 2)
	liveRev := Revocation{Requested: live.Requested.Time, Acknowledged: live.Acknowledged.Time}
	liveBounds := Bounds(&live.Surface, liveRev)
	if liveBounds == nil {
		t.Fatal("exclusion not confirmed")
	}

	raw, err := json.Marshal(live)
	if err != nil {
		t.Fatal(err)
	}
	var back persisted
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	Resume(&back.Surface)
	backBounds := Bounds(&back.Surface, Revocation{Requested: back.Requested.Time, Acknowledged: back.Acknowledged.Time})
	if backBounds == nil || *backBounds.Lower != *liveBounds.Lower || *backBounds.Upper != *liveBounds.Upper {
		t.Fatalf("bounds from status %+v differ from live bounds %+v", backBounds, liveBounds)
	}

	exactLower := at(1, 789).Sub(at(0.05, 456))
	exactUpper := at(1.3, 7).Sub(at(0, 123))
	if liveBounds.Lower.Duration > exactLower || liveBounds.Upper.Duration < exactUpper {
		t.Errorf("bounds [%s, %s] narrower than the unrounded [%s, %s]",
			liveBounds.Lower.Duration, liveBounds.Upper.Duration, exactLower, exactUpper)
	}
	if liveBounds.Lower.Duration%time.Microsecond != 0 || liveBounds.Upper.Duration%time.Microsecond != 0 {
		t.Errorf("bounds [%s, %s] are not whole microseconds", liveBounds.Lower.Duration, liveBounds.Upper.Duration)
	}
}
