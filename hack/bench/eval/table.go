package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// Goals from issue 14, item 7.
const (
	goalSpeedup     = 5.0 // ragcanary at least this many times the baseline's speed
	goalMemoryRatio = 1.0 // and no more peak RSS than the baseline
)

// printTable prints one line per size and format, ragcanary and Python side
// by side, then each pair of verdicts.
func printTable(w io.Writer, rows []row, floor int64) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "CASES\tFORMAT\tINPUT_MiB\tRAGCANARY_WALL\tRAGCANARY_CPU\tRAGCANARY_RSS_MiB\tPYTHON_WALL\tPYTHON_CPU\tPYTHON_RSS_MiB\tSPEED_RATIO\tCPU_RATIO\tMEMORY_RATIO\tSPEED>=5x\tMEMORY<=PYTHON\tAGREE\t")
	for _, r := range rows {
		speed := ratio(r.python.wall.Seconds(), r.ragcanary.wall.Seconds())
		cpu := ratio(r.python.cpu.Seconds(), r.ragcanary.cpu.Seconds())
		mem := ratio(float64(r.ragcanary.maxRSS), float64(r.python.maxRSS))
		fmt.Fprintf(tw, "%d\t%s\t%.1f\t%s\t%s\t%.0f\t%s\t%s\t%.0f\t%.2fx\t%.2fx\t%.2f\t%s\t%s\t%s\t\n",
			r.cases, r.format, mib(r.inputBytes),
			secs(r.ragcanary.wall), secs(r.ragcanary.cpu), mib(r.ragcanary.maxRSS),
			secs(r.python.wall), secs(r.python.cpu), mib(r.python.maxRSS),
			speed, cpu, mem, yesNo(speed >= goalSpeedup), yesNo(mem <= goalMemoryRatio), yesNo(r.disagree == ""))
	}
	tw.Flush()
	fmt.Fprintf(w, "\nmedian of %d run(s) each; SPEED_RATIO = python wall / ragcanary wall (the goal), CPU_RATIO the same for user+system CPU (steadier on a busy machine), MEMORY_RATIO = ragcanary peak RSS / python peak RSS; peak RSS of a no-op command, the measurement's floor: %.1f MiB\n", runsOf(rows), mib(floor))
	for _, r := range rows {
		fmt.Fprintf(w, "%d %s ragcanary: %s\n%d %s python:    %s\n", r.cases, r.format, r.ragcanaryResult, r.cases, r.format, r.pythonResult)
		if r.disagree != "" {
			fmt.Fprintf(w, "%d %s DISAGREE: %s\n", r.cases, r.format, r.disagree)
		}
	}
}

func runsOf(rows []row) int {
	if len(rows) == 0 {
		return 0
	}
	return rows[0].ragcanary.runs
}

func ratio(num, den float64) float64 {
	if den == 0 {
		return 0
	}
	return num / den
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func secs(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}
