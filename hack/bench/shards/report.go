package main

import (
	"fmt"
	"io"
	"math"
	goruntime "runtime"
	"strings"
	"time"

	"github.com/ragcanary/ragcanary/hack/bench/internal/benchkit"
)

// Goals: issue 23 item 4, and the lag goal of the single-manager benchmark.
const (
	// goalMemorySpread: each replica's RSS within 40 % of total/N.
	goalMemorySpread = 0.40
	goalLagP99       = 250 * time.Millisecond
)

type report struct {
	o options
	// single is mode B (one replica); sharded is mode A. Either may be nil.
	single, sharded *modeResult
}

func mark(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

// total is the memory the per-replica goal divides: mode B's RSS at the
// same canary count when it ran, else the sum over the replicas.
func (r *report) total() (int64, string) {
	if r.single != nil && len(r.single.steady.replicas) == 1 {
		return r.single.steady.replicas[0].maxRSS, "the single replica's max RSS at the same canary count"
	}
	var sum int64
	for _, f := range r.sharded.steady.replicas {
		sum += f.maxRSS
	}
	return sum, "the sum of the replicas' max RSS (mode B not run)"
}

// print writes the report and returns whether every goal was met.
func (r *report) print(w io.Writer) bool {
	o := r.o
	controls := 0
	if o.controls {
		controls = 1
	}
	fmt.Fprintf(w, "\nragcanary shard benchmark: %d canaries over %d corpora and %d ragtarget(s), probe interval %s, %d control persona(s), status checkpoint %s, shard lease %s, %d CPUs\n",
		o.canaries, o.corpora, o.targets, o.interval, controls, o.checkpoint, o.shardLease, goruntime.NumCPU())
	var cols []column
	if r.single != nil {
		cols = append(cols, r.single.columns("B")...)
	}
	if r.sharded != nil {
		cols = append(cols, r.sharded.columns("A")...)
	}
	ok := true
	printTable(w, cols)
	if r.sharded != nil {
		ok = r.printGoals(w) && ok
		if f := r.sharded.failover; f != nil {
			ok = f.print(w, o) && ok
		}
	} else if r.single != nil {
		ok = printLagGoal(w, r.single.steady.replicas)
	}
	if ok {
		fmt.Fprintf(w, "\nall goals met\n")
	} else {
		fmt.Fprintf(w, "\nat least one goal MISSED\n")
	}
	return ok
}

// column is one column of the side-by-side table.
type column struct {
	head  string
	cells map[string]string
}

var rows = []string{"setup", "window", "canaries owned", "max RSS", "CPU", "p99 probe scheduling lag", "probes in window",
	"kube-apiserver CPU", "API writes", "API requests", "machine CPU busy"}

// columns are the mode's replicas, then the mode as a whole.
func (m *modeResult) columns(mode string) []column {
	p := m.steady
	secs := p.window.Seconds()
	var cols []column
	var sumRSS int64
	var sumCPU time.Duration
	var all benchkit.LagBuckets
	owned := 0
	for _, f := range p.replicas {
		lo, hi := f.lag.Quantile(0.99)
		head := fmt.Sprintf("%s %s", mode, f.name)
		if f.leader && len(p.replicas) > 1 {
			head += " (leader)"
		}
		cols = append(cols, column{head: head, cells: map[string]string{
			"canaries owned":           fmt.Sprint(f.owned),
			"max RSS":                  fmt.Sprintf("%.1f MiB", benchkit.MiB(f.maxRSS)),
			"CPU":                      fmt.Sprintf("%.0f%% of a core", 100*f.cpu.Seconds()/secs),
			"p99 probe scheduling lag": lagCell(lo, hi),
			"probes in window":         fmt.Sprint(f.lag.Total()),
		}})
		sumRSS += f.maxRSS
		sumCPU += f.cpu
		owned += f.owned
		all = addBuckets(all, f.lag)
	}
	lo, hi := all.Quantile(0.99)
	sum := " (sum)"
	if len(p.replicas) == 1 {
		sum = ""
	}
	apiRequests := 0.0
	for verb, v := range p.apiAfter.ByVerb {
		apiRequests += v - p.apiBefore.ByVerb[verb]
	}
	whole := column{head: fmt.Sprintf("%s: %d replica(s)", mode, m.replicas), cells: map[string]string{
		"setup":                    m.setup.Round(time.Second).String(),
		"window":                   p.window.Round(time.Second).String() + windowNote(m),
		"canaries owned":           fmt.Sprintf("%d (+%d unowned)", owned, p.unowned),
		"max RSS":                  fmt.Sprintf("%.1f MiB%s", benchkit.MiB(sumRSS), sum),
		"CPU":                      fmt.Sprintf("%.0f%% of a core%s", 100*sumCPU.Seconds()/secs, sum),
		"p99 probe scheduling lag": lagCell(lo, hi),
		"probes in window":         fmt.Sprintf("%d (%.1f/s)", all.Total(), float64(all.Total())/secs),
		"kube-apiserver CPU":       fmt.Sprintf("%.0f%% of a core", 100*p.apiCPU.Seconds()/secs),
		"API writes":               fmt.Sprintf("%.2f /s", benchkit.Writes(p.apiBefore, p.apiAfter)/secs),
		"API requests":             fmt.Sprintf("%.2f /s", apiRequests/secs),
		"machine CPU busy":         fmt.Sprintf("%.0f%% of %d CPUs", 100*p.machineBusy, goruntime.NumCPU()),
	}}
	if len(cols) == 1 {
		return []column{whole}
	}
	return append(cols, whole)
}

func windowNote(m *modeResult) string {
	if m.failover != nil {
		return " (until the kill)"
	}
	return ""
}

// addBuckets sums two histograms of the same buckets.
func addBuckets(a, b benchkit.LagBuckets) benchkit.LagBuckets {
	if a.Bounds == nil {
		return benchkit.LagBuckets{Bounds: b.Bounds, Counts: append([]uint64(nil), b.Counts...), Sum: b.Sum}
	}
	if b.Bounds == nil {
		return a
	}
	for i := range a.Counts {
		a.Counts[i] += b.Counts[i]
	}
	a.Sum += b.Sum
	return a
}

func lagCell(lo, hi float64) string {
	if math.IsNaN(hi) {
		return "n/a (no probes)"
	}
	return fmt.Sprintf("%s–%s", benchkit.FmtSec(lo), benchkit.FmtSec(hi))
}

func printTable(w io.Writer, cols []column) {
	const first = 26
	widths := make([]int, len(cols))
	for i, c := range cols {
		widths[i] = len([]rune(c.head))
		for _, v := range c.cells {
			widths[i] = max(widths[i], len([]rune(v)))
		}
	}
	line := func(label string, cell func(int) string) {
		fmt.Fprintf(w, "%-*s", first, label)
		for i := range cols {
			v := cell(i)
			fmt.Fprintf(w, "  %s%s", v, strings.Repeat(" ", widths[i]-len([]rune(v))))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	line("figure", func(i int) string { return cols[i].head })
	line(strings.Repeat("-", first), func(i int) string { return strings.Repeat("-", widths[i]) })
	for _, row := range rows {
		line(row, func(i int) string { return cols[i].cells[row] })
	}
}

// printGoals prints mode A's memory and lag goals.
func (r *report) printGoals(w io.Writer) bool {
	total, what := r.total()
	n := len(r.sharded.steady.replicas)
	share := float64(total) / float64(n)
	fmt.Fprintf(w, "\ngoals (until the kill)                                      measured              goal                      \n")
	ok := true
	for _, f := range r.sharded.steady.replicas {
		dev := (float64(f.maxRSS) - share) / share
		met := math.Abs(dev) <= goalMemorySpread
		ok = ok && met
		fmt.Fprintf(w, "  %-58s %-21s %-25s %s\n", fmt.Sprintf("%s max RSS vs total/%d = %.1f MiB", f.name, n, benchkit.MiB(int64(share))),
			fmt.Sprintf("%.1f MiB (%+.0f%%)", benchkit.MiB(f.maxRSS), 100*dev), fmt.Sprintf("within ±%.0f%%", 100*goalMemorySpread), mark(met))
	}
	fmt.Fprintf(w, "  (total = %s: %.1f MiB)\n", what, benchkit.MiB(total))
	return printLagGoal(w, r.sharded.steady.replicas) && ok
}

func printLagGoal(w io.Writer, replicas []replicaFigures) bool {
	ok := true
	for _, f := range replicas {
		lo, hi := f.lag.Quantile(0.99)
		met := !math.IsNaN(hi) && hi <= goalLagP99.Seconds()
		ok = ok && met
		fmt.Fprintf(w, "  %-58s %-21s %-25s %s\n", f.name+" p99 probe scheduling lag", lagCell(lo, hi), "≤ "+goalLagP99.String(), mark(met))
	}
	return ok
}

// print writes the hand-over's figures and returns whether its goals were met.
func (f *failoverResult) print(w io.Writer, o options) bool {
	role := "a follower"
	if f.wasLeader {
		role = "the leader (running the sharder)"
	}
	fmt.Fprintf(w, "\nafter SIGKILL of %s, %s, owning %d canaries, for the remaining %s of the window:\n",
		f.victim, role, len(f.owned), f.phase.window.Round(time.Second))
	fmt.Fprintf(w, "  searches recorded by the targets in the whole window: %d (%d not attributable to a canary and replica)\n", f.searches, f.unassigned)
	rp := f.reprobe
	fmt.Fprintf(w, "  %-58s %s\n", "its canaries probed again by another replica", fmt.Sprintf("%d of %d", len(rp.sinceKill), rp.canaries))
	fmt.Fprintf(w, "  %-58s %s\n", "time from the kill to the next probe: p50 / p99 / max", fmt.Sprintf("%s / %s / %s", fmtDur(quantile(rp.sinceKill, 0.5)), fmtDur(quantile(rp.sinceKill, 0.99)), fmtDur(quantile(rp.sinceKill, 1))))
	fmt.Fprintf(w, "  %-58s %s\n", "gap between its last probe and the next: p99 / max", fmt.Sprintf("%s / %s", fmtDur(quantile(rp.gap, 0.99)), fmtDur(quantile(rp.gap, 1))))
	for _, fig := range f.phase.replicas {
		lo, hi := fig.lag.Quantile(0.99)
		fmt.Fprintf(w, "  %-58s %s\n", fig.name+": owned at end / max RSS / CPU / p99 lag",
			fmt.Sprintf("%d / %.1f MiB / %.0f%% of a core / %s", fig.owned, benchkit.MiB(fig.maxRSS), 100*fig.cpu.Seconds()/f.phase.window.Seconds(), lagCell(lo, hi)))
	}
	ph := f.phase
	fmt.Fprintf(w, "  %-58s %s\n", "kube-apiserver CPU / API writes / machine busy", fmt.Sprintf("%.0f%% of a core / %.1f /s / %.0f%% of %d CPUs",
		100*ph.apiCPU.Seconds()/ph.window.Seconds(), benchkit.Writes(ph.apiBefore, ph.apiAfter)/ph.window.Seconds(), 100*ph.machineBusy, goruntime.NumCPU()))
	fmt.Fprintf(w, "  %-58s %s\n", "canaries without an owner at the end", fmt.Sprint(f.phase.unowned))
	fmt.Fprintf(w, "  %-58s %d before, %d after; %d new for a new slot\n", "runs (listed at the kill and after the window)", f.runs.before, f.runs.after, len(f.runs.added))
	b := f.bounds
	grew := fmt.Sprintf("%d of %d", b.grew, b.runs)
	if b.grew == 0 && o.checkpoint >= f.phase.window {
		grew += fmt.Sprintf(" (not observable: no status checkpoint within %s with --checkpoint %s)", f.phase.window.Round(time.Second), o.checkpoint)
	}
	fmt.Fprintf(w, "  %-58s %s\n", "moved runs whose persisted lower bound grew since the kill", grew)

	fmt.Fprintf(w, "\nhand-over goals                                             measured              goal\n")
	goals := []struct {
		name     string
		got      int
		examples []string
	}{
		{"canaries never probed again in the window", len(rp.never), rp.never},
		{"canaries probed by two replicas at once (interleaved)", len(f.doubles), doubleExamples(f.doubles)},
		{"runs lost (gone, or replaced under a new UID)", len(f.runs.lost), f.runs.lost},
		{"runs duplicated (a second run for the same slot)", len(f.runs.duplicated), f.runs.duplicated},
		{"moved runs that left AwaitingExclusion", len(b.notAwaiting), b.notAwaiting},
		{"moved runs with an upper bound (the target never excluded)", len(b.withUpper), b.withUpper},
		{"moved runs whose lower bound exceeds the known lag", len(b.beyondLag), b.beyondLag},
		{"moved runs whose lower bound shrank", len(b.shrank), b.shrank},
		{"moved runs gone or without a lower bound", len(b.missing), b.missing},
	}
	ok := true
	for _, g := range goals {
		ok = ok && g.got == 0
		fmt.Fprintf(w, "  %-58s %-21d %-25s %s\n", g.name, g.got, "0", mark(g.got == 0))
		if g.got > 0 {
			fmt.Fprintf(w, "    e.g. %s\n", strings.Join(g.examples[:min(5, len(g.examples))], ", "))
		}
	}
	return ok
}

func doubleExamples(ds []doubleProbe) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = fmt.Sprintf("%s by %s and %s for %s", d.canary, d.replicas[0], d.replicas[1], d.overlap.Round(time.Millisecond))
	}
	return out
}

func fmtDur(d time.Duration) string {
	if d < 0 {
		return "n/a"
	}
	return d.Round(10 * time.Millisecond).String()
}
