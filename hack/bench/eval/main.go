// Command eval benchmarks `ragcanary eval --format json` side by side with
// a plain-Python implementation of the same checks (baseline.py, embedded):
// it builds ragcanary, writes deterministic case and result files (v1 and
// v2, 200,000 and 1,000,000 cases by default) into a temporary directory,
// runs both tools on each several times, and prints the median wall time,
// CPU time and peak RSS of each, the speed and memory ratios, and whether
// issue 14's goals (≥ 5× the baseline's speed, no more peak memory) are met.
//
// It exits 1 when the tools disagree on a verdict (exit status, pass/fail,
// gate counts, recall or MRR), 2 when the setup failed, and 0 otherwise:
// a missed speed or memory goal is printed, not failed, so the table is
// always complete.
//
//	go run ./hack/bench/eval --cases 200000,1000000 --formats v1,v2 --runs 3
package main

import (
	_ "embed"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

//go:embed baseline.py
var baselineScript []byte

type options struct {
	sizes     []int
	formats   []string
	runs      int
	k         int
	python    string
	pythonGC  bool   // false runs the baseline with CPython's cyclic GC off
	ragcanary string // a prebuilt binary; empty builds ./cmd/ragcanary
	keep      string // write the files here and keep them
	genOnly   bool
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == measureFlag {
		os.Exit(measureChild(os.Args[2:]))
	}
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench eval: %v\n", err)
		os.Exit(2)
	}
	os.Exit(run(o))
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	sizes := fs.String("cases", "200000,1000000", "comma-separated case counts")
	formats := fs.String("formats", "v1,v2", "comma-separated file formats: v1, v2")
	fs.IntVar(&o.runs, "runs", 3, "runs of each tool per size and format; the median is reported")
	fs.IntVar(&o.k, "k", 10, "rank cutoff passed to both tools")
	fs.StringVar(&o.python, "python", "python3", "the Python interpreter")
	fs.BoolVar(&o.pythonGC, "python-gc", true, "leave CPython's cyclic garbage collector on, as a plain script does; false gives a tougher baseline")
	fs.StringVar(&o.ragcanary, "ragcanary", "", "use this ragcanary binary instead of building ./cmd/ragcanary")
	fs.StringVar(&o.keep, "keep", "", "write the generated files into this directory and keep them")
	fs.BoolVar(&o.genOnly, "generate-only", false, "only write the files (into --keep) and exit")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return o, fmt.Errorf("--cases: %q is not a positive count", s)
		}
		o.sizes = append(o.sizes, n)
	}
	for _, f := range strings.Split(*formats, ",") {
		f = strings.TrimSpace(f)
		if f != "v1" && f != "v2" {
			return o, fmt.Errorf("--formats: %q is not v1 or v2", f)
		}
		o.formats = append(o.formats, f)
	}
	if o.runs < 1 {
		return o, fmt.Errorf("--runs must be at least 1, got %d", o.runs)
	}
	if o.genOnly && o.keep == "" {
		return o, fmt.Errorf("--generate-only needs --keep DIR")
	}
	return o, nil
}

// run returns the process exit status: 0, 1 on a disagreement, 2 on a
// setup failure.
func run(o options) int {
	work, err := os.MkdirTemp("", "ragcanary-bench-eval-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(work)
	dataDir := work
	if o.keep != "" {
		if err := os.MkdirAll(o.keep, 0o755); err != nil {
			return fail(err)
		}
		dataDir = o.keep
	}
	if o.genOnly {
		return generateOnly(o, dataDir)
	}
	tools, err := prepareTools(o, work)
	if err != nil {
		return fail(err)
	}
	floor, err := rssFloor(work)
	if err != nil {
		return fail(err)
	}
	var rows []row
	for _, n := range o.sizes {
		for _, format := range o.formats {
			r, err := measureOne(o, tools, dataDir, n, format)
			if err != nil {
				return fail(err)
			}
			rows = append(rows, r)
			fmt.Fprintf(os.Stderr, "%d %s: ragcanary %s, python %s\n", n, format, r.ragcanary.wall, r.python.wall)
		}
	}
	printTable(os.Stdout, rows, floor)
	for _, r := range rows {
		if r.disagree != "" {
			return 1
		}
	}
	return 0
}

// rssFloor is the peak RSS measured for a command that does nothing: what
// the measuring wrapper itself adds to every figure.
func rssFloor(work string) (int64, error) {
	s, _, err := runMeasured([]string{"true"}, filepath.Join(work, "floor.out"))
	return s.maxRSS, err
}

func fail(err error) int {
	fmt.Fprintf(os.Stderr, "bench eval: %v\n", err)
	return 2
}

func generateOnly(o options, dir string) int {
	for _, n := range o.sizes {
		for _, format := range o.formats {
			g, err := generate(dir, n, format)
			if err != nil {
				return fail(err)
			}
			fmt.Printf("%s %s (%.1f MiB together)\n", g.cases, g.results, float64(g.bytes)/(1<<20))
		}
	}
	return 0
}

// toolset is the two commands under test, each without its file arguments.
type toolset struct {
	ragcanary, baseline []string
	python, script      string
}

// prepareTools builds ragcanary (unless given) and writes the embedded
// baseline next to it.
func prepareTools(o options, work string) (toolset, error) {
	py, err := exec.LookPath(o.python)
	if err != nil {
		return toolset{}, fmt.Errorf("%s not found (make bench-eval installs python3): %w", o.python, err)
	}
	script := filepath.Join(work, "baseline.py")
	if err := os.WriteFile(script, baselineScript, 0o644); err != nil {
		return toolset{}, err
	}
	bin := o.ragcanary
	if bin == "" {
		bin = filepath.Join(work, "ragcanary")
		build := exec.Command("go", "build", "-o", bin, "./cmd/ragcanary")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return toolset{}, fmt.Errorf("building ragcanary (run from the repository root): %w", err)
		}
	}
	k := strconv.Itoa(o.k)
	return toolset{
		ragcanary: []string{bin, "eval", "--format", "json", "--k", k},
		baseline:  baselineCommand(py, script, o.pythonGC, k),
		python:    py,
		script:    script,
	}, nil
}

// baselineCommand runs the script as is, or with the cyclic GC disabled
// first: on these files it costs CPython about half its time, since
// json.load builds millions of containers that trigger collections.
func baselineCommand(py, script string, gc bool, k string) []string {
	if gc {
		return []string{py, script, "--k", k}
	}
	const boot = "import gc, runpy, sys; gc.disable(); sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
	return []string{py, "-c", boot, script, "--k", k}
}

// row is one size and format: both tools' medians and whether they agree.
type row struct {
	cases           int
	format          string
	inputBytes      int64
	ragcanary       medians
	python          medians
	ragcanaryResult verdict
	pythonResult    verdict
	disagree        string
}

// measureOne generates the files, runs the tools alternately (so load from
// elsewhere on the machine falls on both), and compares their verdicts on
// every run. The files are removed afterwards unless kept.
func measureOne(o options, t toolset, dir string, n int, format string) (row, error) {
	g, err := generate(dir, n, format)
	if err != nil {
		return row{}, err
	}
	if o.keep == "" {
		defer os.Remove(g.cases)
		defer os.Remove(g.results)
	}
	r := row{cases: n, format: format, inputBytes: g.bytes}
	rcOut, pyOut := filepath.Join(dir, "ragcanary-report.json"), filepath.Join(dir, "baseline-summary.json")
	defer os.Remove(rcOut)
	defer os.Remove(pyOut)
	var rcSamples, pySamples []sample
	for i := range o.runs {
		rc, rcErr, err := runMeasured(slices.Concat(t.ragcanary, []string{g.cases, g.results}), rcOut)
		if err != nil {
			return r, err
		}
		py, pyErr, err := runMeasured(slices.Concat(t.baseline, []string{g.cases, g.results}), pyOut)
		if err != nil {
			return r, err
		}
		rcSamples, pySamples = append(rcSamples, rc), append(pySamples, py)
		if r.ragcanaryResult, err = readRagcanary(rcOut, rc.exit); err != nil {
			return r, err
		}
		if r.pythonResult, err = readBaseline(pyOut, py.exit); err != nil {
			return r, err
		}
		if d := disagreement(r.ragcanaryResult, r.pythonResult); d != "" {
			r.disagree = fmt.Sprintf("run %d: %s", i+1, d)
			fmt.Fprintf(os.Stderr, "%d %s run %d: the tools disagree: %s\n  ragcanary stderr: %s\n  baseline stderr: %s\n",
				n, format, i+1, d, firstLine(rcErr), firstLine(pyErr))
			break
		}
	}
	r.ragcanary, r.python = medianOf(rcSamples), medianOf(pySamples)
	return r, nil
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
