package scoring

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/ragcanary/ragcanary/internal/dev/testutil"
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

// BenchmarkEvaluateAtInputCap decodes and scores a cases file of nearly
// MaxInputBytes and its results file (shaped like millionInputs, about 2
// million cases), as `ragcanary eval --format json` does: stream the cases
// into a Session, stream the results (each scored as it is decoded), finish
// and write the JSON report (to io.Discard). The files are written once,
// outside the timer. peak-heap-MiB is the bound the input cap buys.
func BenchmarkEvaluateAtInputCap(b *testing.B) {
	dir := b.TempDir()
	casesPath, resultsPath := filepath.Join(dir, "cases.json"), filepath.Join(dir, "results.json")
	n, err := writeUpTo(casesPath, resultsPath, MaxInputBytes)
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	peak := testutil.StartPeakHeap()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s, err := NewSession(Options{K: 10})
		if err != nil {
			b.Fatal(err)
		}
		if err := readInto(casesPath, s.ReadCases); err != nil {
			b.Fatal(err)
		}
		if err := readInto(resultsPath, s.ReadResults); err != nil {
			b.Fatal(err)
		}
		r, err := s.Finish(false)
		if err != nil || r.Summary.Overall.Answerable+r.Summary.Overall.RequiredBlock != n {
			b.Fatalf("scored %+v of %d cases: %v", r.Summary.Overall, n, err)
		}
		if err := s.WriteJSON(io.Discard, r); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	peak.Report(b)
	b.ReportMetric(float64(n), "cases")
	for _, p := range []string{casesPath, resultsPath} {
		if st, err := os.Stat(p); err == nil {
			b.ReportMetric(float64(st.Size())/(1<<20), filepath.Base(p)+"-MiB")
		}
	}
}

func readInto(path string, read func(io.Reader) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return read(f)
}

// writeUpTo writes cases and results shaped like millionInputs until the
// cases file would pass limit, and returns how many it wrote.
func writeUpTo(casesPath, resultsPath string, limit int64) (int, error) {
	cf, err := os.Create(casesPath)
	if err != nil {
		return 0, err
	}
	defer cf.Close()
	rf, err := os.Create(resultsPath)
	if err != nil {
		return 0, err
	}
	defer rf.Close()
	cw, rw := bufio.NewWriterSize(cf, 1<<20), bufio.NewWriterSize(rf, 1<<20)
	// A repeating block keeps millionInputs' mix without holding millions
	// of cases in memory while writing.
	const block = 10_000
	cases, results := millionInputs(block)
	written := int64(1) // the opening bracket
	cw.WriteByte('[')
	rw.WriteByte('[')
	n := 0
	for ; ; n++ {
		c, r := cases[n%block], results[n%block]
		c.ID, r.ID = fmt.Sprintf("case-%08d", n), fmt.Sprintf("case-%08d", n)
		cj, err := json.Marshal(c)
		if err != nil {
			return 0, err
		}
		rj, err := json.Marshal(r)
		if err != nil {
			return 0, err
		}
		// Room for this case, its separator and the closing bracket.
		if written+int64(len(cj))+2 > limit {
			break
		}
		if n > 0 {
			cw.WriteByte(',')
			rw.WriteByte(',')
			written++
		}
		cw.Write(cj)
		rw.Write(rj)
		written += int64(len(cj))
	}
	cw.WriteByte(']')
	rw.WriteByte(']')
	if err := cw.Flush(); err != nil {
		return 0, err
	}
	return n, rw.Flush()
}
