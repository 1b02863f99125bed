package scoring

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// benchCases is the size of the offline benchmark: one million case results.
const benchCases = 1_000_000

// millionInputs builds benchCases cases and results shaped like a real
// export: 20 personas; 10 allowed and 3 relevant IDs per case; one case in
// five a required block; results with 10 retrieved IDs (one repeat), some
// abstentions and an occasional forbidden ID.
func millionInputs(n int) ([]Case, []Result) {
	cases := make([]Case, n)
	results := make([]Result, n)
	for i := range n {
		id := fmt.Sprintf("case-%07d", i)
		allowed := make([]string, 10)
		for j := range allowed {
			allowed[j] = fmt.Sprintf("doc-%d-%d", i%5000, j)
		}
		c := Case{ID: id, Persona: fmt.Sprintf("persona-%02d", i%20), Question: "q",
			RelevantIDs: allowed[:3], AllowedIDs: allowed}
		r := Result{ID: id, CitedIDs: []string{allowed[0]}}
		r.RetrievedIDs = append(r.RetrievedIDs, allowed[1], allowed[0], allowed[0])
		r.RetrievedIDs = append(r.RetrievedIDs, allowed[3:10]...)
		switch {
		case i%5 == 0:
			c.RelevantIDs, c.MustAbstain = []string{}, true
			r.CitedIDs, r.Abstained = []string{}, true
		case i%97 == 0:
			r.RetrievedIDs = append(r.RetrievedIDs, "secret-doc")
		case i%13 == 0:
			r.CitedIDs, r.Abstained = []string{}, true
		}
		cases[i], results[i] = c, r
	}
	return cases, results
}

// peakHeap samples the live heap while a benchmark runs and reports the
// highest value seen. ReadMemStats stops the world, so it samples every
// 20 ms: enough to see the peak of a run lasting seconds.
type peakHeap struct {
	peak atomic.Uint64
	stop chan struct{}
	wg   sync.WaitGroup
}

func startPeakHeap() *peakHeap {
	p := &peakHeap{stop: make(chan struct{})}
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

func (p *peakHeap) sample() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	for {
		old := p.peak.Load()
		if ms.HeapAlloc <= old || p.peak.CompareAndSwap(old, ms.HeapAlloc) {
			return
		}
	}
}

// report stops sampling and reports the peak heap in MiB, inputs included.
func (p *peakHeap) report(b *testing.B) {
	close(p.stop)
	p.wg.Wait()
	p.sample()
	b.ReportMetric(float64(p.peak.Load())/(1<<20), "peak-heap-MiB")
}

// BenchmarkEvaluateMillion scores one million case results per iteration.
// Inputs are built once, outside the timer; ns/op is one full evaluation,
// B/op and allocs/op what it allocates, peak-heap-MiB the largest live heap
// seen (the inputs themselves included).
func BenchmarkEvaluateMillion(b *testing.B) {
	cases, results := millionInputs(benchCases)
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	peak := startPeakHeap()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r, err := Evaluate(cases, results, Options{K: 10})
		if err != nil {
			b.Fatal(err)
		}
		if len(r.Cases) != benchCases || r.Passed {
			b.Fatalf("scored %d cases, passed=%v; the leaking results must fail", len(r.Cases), r.Passed)
		}
	}
	b.StopTimer()
	peak.report(b)
	// After the loop: ResetTimer drops metrics reported before it.
	b.ReportMetric(float64(base.HeapAlloc)/(1<<20), "inputs-heap-MiB")
}
