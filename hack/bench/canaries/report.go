package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	goruntime "runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// result holds the measured figures.
type result struct {
	canaries int
	setup    time.Duration
	window   time.Duration
	// maxRSS is the largest resident set sampled during the window.
	maxRSS, endRSS int64
	heapInuse      uint64
	goroutines     int
	// cpu is this process's CPU time (all threads) during the window.
	cpu time.Duration
	// lag is the scheduling lag histogram of the window, over all runs.
	lag lagBuckets
	// writesBefore and writesAfter are the manager's write counts.
	writesBefore, writesAfter map[string]int64
	// childrenBefore and childrenAfter sample etcd, kube-apiserver, ragtarget.
	childrenBefore, childrenAfter map[string]procSample
	activeAtEnd                   int
	// machineBusy is the share of all CPUs busy during the window, whoever used them.
	machineBusy float64
}

// measure samples the window: RSS every 500ms, CPU, lag and writes as
// differences between its start and end.
func measure(ctx context.Context, o options, writes *writeCounter, lagRegistry *prometheus.Registry) (*result, error) {
	res := &result{canaries: o.canaries}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile()
	}
	lagBefore, err := gatherLag(lagRegistry)
	if err != nil {
		return nil, err
	}
	res.writesBefore = writes.snapshot()
	res.childrenBefore = children()
	cpuBefore := selfCPU()
	busyBefore, totalBefore := machineCPU()
	start := time.Now()
	rss := startRSSSampler(500 * time.Millisecond)

	t := time.NewTimer(o.measure)
	progress := time.NewTicker(30 * time.Second)
	defer progress.Stop()
wait:
	for {
		select {
		case <-ctx.Done():
			t.Stop()
			rss.finish()
			return nil, ctx.Err()
		case <-progress.C:
			step("  %s of %s measured", time.Since(start).Round(time.Second), o.measure)
		case <-t.C:
			break wait
		}
	}

	res.window = time.Since(start)
	res.cpu = selfCPU() - cpuBefore
	if busy, total := machineCPU(); total > totalBefore {
		res.machineBusy = float64(busy-busyBefore) / float64(total-totalBefore)
	}
	res.maxRSS = rss.finish()
	res.endRSS = rssOf("self")
	res.childrenAfter = children()
	res.writesAfter = writes.snapshot()
	lagAfter, err := gatherLag(lagRegistry)
	if err != nil {
		return nil, err
	}
	res.lag = lagAfter.minus(lagBefore)
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	res.heapInuse = ms.HeapInuse
	res.goroutines = goruntime.NumGoroutine()
	if o.heapProfile != "" {
		f, err := os.Create(o.heapProfile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := pprof.WriteHeapProfile(f); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// statusWrites counts PATCH and PUT of canaryruns/status in the window.
func (r *result) statusWrites() int64 {
	var n int64
	for _, verb := range []string{"PATCH", "PUT"} {
		key := verb + " canaryruns/status"
		n += r.writesAfter[key] - r.writesBefore[key]
	}
	return n
}

func (r *result) allWrites() int64 {
	var n int64
	for k, v := range r.writesAfter {
		n += v - r.writesBefore[k]
	}
	return n
}

// print writes the report and returns whether every goal was met.
func (r *result) print(w io.Writer, o options) bool {
	secs := r.window.Seconds()
	lagLo, lagHi := r.lag.quantile(0.99)
	p50Lo, p50Hi := r.lag.quantile(0.50)
	rssMiB := mib(r.maxRSS)
	perRun := float64(r.statusWrites()) / secs / float64(r.canaries)
	lagOK := lagHi <= goalLagP99.Seconds()
	rssOK := rssMiB <= goalRSSMiB
	writesOK := perRun <= goalWritesPerRunPS
	mark := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	controls := 0
	if o.controls {
		controls = 1
	}
	fmt.Fprintf(w, "\nragcanary benchmark: %d active canaries, probe interval %s, %d control persona(s), GOMAXPROCS %d, %d CPUs\n",
		r.canaries, o.interval, controls, goruntime.GOMAXPROCS(0), goruntime.NumCPU())
	fmt.Fprintf(w, "setup (create → all runs AwaitingExclusion): %s; window %s; runs still AwaitingExclusion at the end: %d\n\n",
		r.setup.Round(time.Second), r.window.Round(time.Second), r.activeAtEnd)
	fmt.Fprintf(w, "%-44s %-22s %-12s %s\n", "figure (manager process)", "measured", "goal", "")
	fmt.Fprintf(w, "%-44s %-22s %-12s %s\n", strings.Repeat("-", 44), strings.Repeat("-", 22), strings.Repeat("-", 12), "------")
	fmt.Fprintf(w, "%-44s %-22s %-12s %s\n", "p99 probe scheduling lag", fmt.Sprintf("%s < p99 ≤ %s", fmtSec(lagLo), fmtSec(lagHi)), "≤ "+goalLagP99.String(), mark(lagOK))
	fmt.Fprintf(w, "%-44s %-22s %-12s %s\n", "max RSS", fmt.Sprintf("%.1f MiB", rssMiB), fmt.Sprintf("≤ %d MiB", goalRSSMiB), mark(rssOK))
	fmt.Fprintf(w, "%-44s %-22s %-12s %s\n", "canaryruns/status writes per active run", fmt.Sprintf("%.4f /s", perRun), fmt.Sprintf("≤ %.2f /s", goalWritesPerRunPS), mark(writesOK))
	fmt.Fprintf(w, "%-44s %-22s\n", "CPU (seconds used / wall seconds)", fmt.Sprintf("%.3f (%.0f%% of one core)", r.cpu.Seconds()/secs, 100*r.cpu.Seconds()/secs))
	fmt.Fprintf(w, "%-44s %-22s\n", "all API writes", fmt.Sprintf("%.2f /s", float64(r.allWrites())/secs))
	fmt.Fprintf(w, "%-44s %-22s\n", "probes in window / per second", fmt.Sprintf("%d / %.1f", r.lag.total(), float64(r.lag.total())/secs))
	fmt.Fprintf(w, "%-44s %-22s\n", "p50 probe scheduling lag", fmt.Sprintf("%s < p50 ≤ %s", fmtSec(p50Lo), fmtSec(p50Hi)))
	if n := r.lag.total(); n > 0 {
		fmt.Fprintf(w, "%-44s %-22s\n", "mean probe scheduling lag", fmtSec(r.lag.sum/float64(n)))
	}
	fmt.Fprintf(w, "%-44s %-22s\n", "RSS at end / Go heap in use / goroutines", fmt.Sprintf("%.1f MiB / %.1f MiB / %d", mib(r.endRSS), float64(r.heapInuse)/(1<<20), r.goroutines))

	fmt.Fprintf(w, "%-44s %-22s\n", "whole machine CPU busy (all processes)", fmt.Sprintf("%.0f%% of %d CPUs", 100*r.machineBusy, goruntime.NumCPU()))

	fmt.Fprintf(w, "\nmanager API writes in the window:\n")
	for _, line := range topWrites(r.writesBefore, r.writesAfter, secs) {
		fmt.Fprintf(w, "  %s\n", line)
	}
	fmt.Fprintf(w, "\nother processes on the machine started by the benchmark (CPU / wall, RSS at end):\n")
	for name, after := range r.childrenAfter {
		before := r.childrenBefore[name]
		fmt.Fprintf(w, "  %-18s %5.0f%% of one core  %7.1f MiB\n", name, 100*(after.cpu-before.cpu).Seconds()/secs, mib(after.rss))
	}
	ok := lagOK && rssOK && writesOK
	if ok {
		fmt.Fprintf(w, "\nall goals met\n")
	} else {
		fmt.Fprintf(w, "\nat least one goal MISSED\n")
	}
	return ok
}

func fmtSec(s float64) string {
	if math.IsNaN(s) {
		return "n/a"
	}
	if math.IsInf(s, 1) {
		return "+Inf"
	}
	return time.Duration(s * float64(time.Second)).Round(100 * time.Microsecond).String()
}
