package testutil

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// PeakHeap samples the live heap while a benchmark runs and reports the
// highest value seen. ReadMemStats stops the world, so it samples every
// 20 ms: enough to catch the peak of a run lasting seconds.
type PeakHeap struct {
	peak atomic.Uint64
	stop chan struct{}
	wg   sync.WaitGroup
}

// StartPeakHeap starts sampling.
func StartPeakHeap() *PeakHeap {
	p := &PeakHeap{stop: make(chan struct{})}
	p.sample()
	p.wg.Go(func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.sample()
			}
		}
	})
	return p
}

func (p *PeakHeap) sample() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	for {
		old := p.peak.Load()
		if ms.HeapAlloc <= old || p.peak.CompareAndSwap(old, ms.HeapAlloc) {
			return
		}
	}
}

// Report stops sampling and reports the peak heap in MiB as peak-heap-MiB.
func (p *PeakHeap) Report(b *testing.B) {
	close(p.stop)
	p.wg.Wait()
	p.sample()
	b.ReportMetric(float64(p.peak.Load())/(1<<20), "peak-heap-MiB")
}
