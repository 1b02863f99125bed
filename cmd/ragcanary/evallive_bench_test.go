package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/ragcanary/ragcanary/internal/dev/testutil"
)

// BenchmarkEvalCLIMillion runs `ragcanary eval CASES RESULTS --format json`
// end to end on one million cases: open and strictly decode both files,
// score, and encode the JSON report (to io.Discard). The files, ~0.3 GB and
// ~0.25 GB, are written once outside the timer.
func BenchmarkEvalCLIMillion(b *testing.B) {
	const n = 1_000_000
	dir := b.TempDir()
	casesPath, resultsPath := filepath.Join(dir, "cases.json"), filepath.Join(dir, "results.json")
	if err := writeMillion(casesPath, resultsPath, n); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	peak := testutil.StartPeakHeap()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if code := dispatch([]string{"eval", casesPath, resultsPath, "--format", "json"}, io.Discard, io.Discard); code != exitFailed {
			b.Fatalf("exit %d, want 1 (the results leak)", code)
		}
	}
	b.StopTimer()
	peak.Report(b)
	for _, p := range []string{casesPath, resultsPath} {
		if st, err := os.Stat(p); err == nil {
			b.ReportMetric(float64(st.Size())/(1<<20), filepath.Base(p)+"-MiB")
		}
	}
}

// writeMillion writes n cases and results like internal/scoring's
// benchmark: 20 personas, 10 allowed and 3 relevant IDs, one case in five
// a required block, 10 retrieved IDs with one repeat, an occasional leak.
func writeMillion(casesPath, resultsPath string, n int) error {
	cf, err := os.Create(casesPath)
	if err != nil {
		return err
	}
	defer cf.Close()
	rf, err := os.Create(resultsPath)
	if err != nil {
		return err
	}
	defer rf.Close()
	cw, rw := bufio.NewWriterSize(cf, 1<<20), bufio.NewWriterSize(rf, 1<<20)
	fmt.Fprint(cw, "[")
	fmt.Fprint(rw, "[")
	for i := range n {
		sep := ","
		if i == 0 {
			sep = ""
		}
		d := func(j int) string { return fmt.Sprintf(`"doc-%d-%d"`, i%5000, j) }
		allowed := d(0)
		for j := 1; j < 10; j++ {
			allowed += "," + d(j)
		}
		relevant, must, cited, abstained := d(0)+","+d(1)+","+d(2), false, d(0), false
		retrieved := d(1) + "," + d(0) + "," + d(0)
		for j := 3; j < 10; j++ {
			retrieved += "," + d(j)
		}
		switch {
		case i%5 == 0:
			relevant, must, cited, abstained = "", true, "", true
		case i%97 == 0:
			retrieved += `,"secret-doc"`
		case i%13 == 0:
			cited, abstained = "", true
		}
		fmt.Fprintf(cw, `%s{"id":"case-%07d","persona":"persona-%02d","question":"q","relevant_ids":[%s],"allowed_ids":[%s],"must_abstain":%v}`,
			sep, i, i%20, relevant, allowed, must)
		fmt.Fprintf(rw, `%s{"id":"case-%07d","retrieved_ids":[%s],"cited_ids":[%s],"abstained":%v}`, sep, i, retrieved, cited, abstained)
	}
	fmt.Fprint(cw, "]")
	fmt.Fprint(rw, "]")
	if err := cw.Flush(); err != nil {
		return err
	}
	return rw.Flush()
}
