package benchkit

import (
	"math"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// LagMetric is the probe scheduling lag histogram's name.
const LagMetric = "ragcanary_probe_scheduling_lag_seconds"

// LagBuckets is a cumulative histogram summed over every series.
type LagBuckets struct {
	Bounds []float64
	Counts []uint64 // cumulative, per bound; the last bound is +Inf
	Sum    float64
}

// Add adds one series' histogram. Every series must have the same buckets.
func (b *LagBuckets) Add(h *dto.Histogram) {
	if h == nil {
		return
	}
	if b.Bounds == nil {
		for _, bk := range h.GetBucket() {
			b.Bounds = append(b.Bounds, bk.GetUpperBound())
		}
		b.Bounds = append(b.Bounds, math.Inf(1))
		b.Counts = make([]uint64, len(b.Bounds))
	}
	for i, bk := range h.GetBucket() {
		b.Counts[i] += bk.GetCumulativeCount()
	}
	b.Counts[len(b.Counts)-1] += h.GetSampleCount()
	b.Sum += h.GetSampleSum()
}

// AddFamilies adds every histogram of the lag family among families.
func (b *LagBuckets) AddFamilies(families []*dto.MetricFamily) {
	for _, fam := range families {
		if fam.GetName() != LagMetric {
			continue
		}
		for _, m := range fam.GetMetric() {
			b.Add(m.GetHistogram())
		}
	}
}

// Minus is the observations between an earlier snapshot and this one.
func (b LagBuckets) Minus(earlier LagBuckets) LagBuckets {
	out := LagBuckets{Bounds: b.Bounds, Counts: make([]uint64, len(b.Counts)), Sum: b.Sum - earlier.Sum}
	for i := range b.Counts {
		out.Counts[i] = b.Counts[i]
		if i < len(earlier.Counts) {
			out.Counts[i] -= earlier.Counts[i]
		}
	}
	return out
}

// Total is the number of observations.
func (b LagBuckets) Total() uint64 {
	if len(b.Counts) == 0 {
		return 0
	}
	return b.Counts[len(b.Counts)-1]
}

// Quantile returns the bounds of the bucket holding quantile q: the true
// value is above lower and at most upper. NaN when nothing was observed.
func (b LagBuckets) Quantile(q float64) (lower, upper float64) {
	n := b.Total()
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	rank := uint64(math.Ceil(q * float64(n)))
	for i, c := range b.Counts {
		if c >= rank {
			if i > 0 {
				lower = b.Bounds[i-1]
			}
			return lower, b.Bounds[i]
		}
	}
	return b.Bounds[len(b.Bounds)-2], math.Inf(1)
}

// FmtSec formats seconds; "n/a" for NaN (nothing observed).
func FmtSec(s float64) string {
	if math.IsNaN(s) {
		return "n/a"
	}
	if math.IsInf(s, 1) {
		return "+Inf"
	}
	return time.Duration(s * float64(time.Second)).Round(100 * time.Microsecond).String()
}
