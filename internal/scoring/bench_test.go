package scoring

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/ragcanary/ragcanary/internal/testutil"
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

// BenchmarkEvaluateMillion scores one million case results per iteration.
// Inputs are built once, outside the timer; ns/op is one full evaluation,
// B/op and allocs/op what it allocates, peak-heap-MiB the largest live heap
// seen (the inputs themselves included).
func BenchmarkEvaluateMillion(b *testing.B) {
	cases, results := millionInputs(benchCases)
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	peak := testutil.StartPeakHeap()
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
	peak.Report(b)
	// After the loop: ResetTimer drops metrics reported before it.
	b.ReportMetric(float64(base.HeapAlloc)/(1<<20), "inputs-heap-MiB")
}
