package main

import (
	"context"
	"fmt"
	"io"
	"os"
	goruntime "runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ragcanary/ragcanary/hack/bench/internal/benchkit"
)

// result holds the measured figures.
type result struct {
	canaries int
	setup    time.Duration
	// setupWrites are the manager's requests from the start until every
	// run was in AwaitingExclusion.
	setupWrites map[string]int64
	// setupBefore and setupAfter sample CPU and API requests around the
	// setup, so its limit can be read: whose CPU, spent on which requests.
	setupBefore, setupAfter setupSample
	// objects are the sizes of one stored canary and its run.
	objects objectSizes
	window  time.Duration
	// maxRSS is the largest resident set sampled during the window.
	maxRSS, endRSS int64
	heapInuse      uint64
	goroutines     int
	// base is the manager before any canary existed; end is after the window.
	base, end memSample
	// heapByOwner and heapBySite attribute the in-use heap at the end.
	heapByOwner, heapBySite []heapShare
	heapSampled             float64
	// fineHistogram is the heap per canary of the benchmark's own lag histogram.
	fineHistogram float64
	// series counts the ragcanary metric series by family at the end.
	series []heapShare
	// cpu is this process's CPU time (all threads) during the window.
	cpu time.Duration
	// lag is the scheduling lag histogram of the window, over all runs.
	lag benchkit.LagBuckets
	// writeSamples are the first run status patches of the window.
	writeSamples []string
	// writesBefore and writesAfter are the manager's write counts.
	writesBefore, writesAfter map[string]int64
	// childrenBefore and childrenAfter sample etcd, kube-apiserver, ragtarget.
	childrenBefore, childrenAfter map[string]benchkit.ProcSample
	activeAtEnd                   int
	// apiBefore and apiAfter are the API server's request counters.
	apiBefore, apiAfter benchkit.RequestCounts
	// probesBefore and probesAfter are probe counts by role and outcome.
	probesBefore, probesAfter map[string]float64
	// scrapes are the simulated Prometheus scrapes during the window.
	scrapes scrapeStats
	// machineBusy is the share of all CPUs busy during the window, whoever used them.
	machineBusy float64
}

// measure samples the window: RSS every 500ms, CPU, lag and writes as
// differences between its start and end.
func measure(ctx context.Context, o options, writes *writeCounter, lagRegistry *prometheus.Registry, api *benchkit.APIServerMetrics) (*result, error) {
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
	if o.childNice != 0 {
		if err := benchkit.ReniceChildren(o.childNice); err != nil {
			return nil, err
		}
	}
	res.writesBefore = writes.snapshot()
	writes.startSampling(o.showWrites)
	res.childrenBefore = benchkit.Children()
	res.probesBefore = probeOutcomes()
	var err error
	if res.apiBefore, err = api.Requests(ctx); err != nil {
		return nil, err
	}
	// The lag is read last before the window and first after it: the
	// snapshots above are the harness's work, not the manager's.
	lagBefore, err := gatherLag(lagRegistry)
	if err != nil {
		return nil, err
	}
	cpuBefore := selfCPU()
	busyBefore, totalBefore := benchkit.MachineCPU()
	start := time.Now()
	rss := startRSSSampler(500 * time.Millisecond)
	scrapes := startScraper(ctx, o.scrapeInterval)
	apiProfiled := make(chan error, 1)
	if o.apiProfile != "" {
		go func() { apiProfiled <- api.CPUProfile(ctx, min(o.measure, 5*time.Minute), o.apiProfile) }()
	} else {
		apiProfiled <- nil
	}

	t := time.NewTimer(o.measure)
	progress := time.NewTicker(30 * time.Second)
	defer progress.Stop()
wait:
	for {
		select {
		case <-ctx.Done():
			t.Stop()
			rss.finish()
			scrapes.finish()
			return nil, ctx.Err()
		case <-progress.C:
			benchkit.Step("  %s of %s measured", time.Since(start).Round(time.Second), o.measure)
		case <-t.C:
			break wait
		}
	}

	lagAfter, err := gatherLag(lagRegistry)
	if err != nil {
		return nil, err
	}
	res.window = time.Since(start)
	res.cpu = selfCPU() - cpuBefore
	if busy, total := benchkit.MachineCPU(); total > totalBefore {
		res.machineBusy = float64(busy-busyBefore) / float64(total-totalBefore)
	}
	res.scrapes = scrapes.finish()
	if err := <-apiProfiled; err != nil {
		return nil, err
	}
	res.maxRSS = rss.finish()
	res.endRSS = benchkit.RSSOf("self")
	res.childrenAfter = benchkit.Children()
	res.writesAfter = writes.snapshot()
	res.writeSamples = writes.samples()
	res.probesAfter = probeOutcomes()
	if res.apiAfter, err = api.Requests(ctx); err != nil {
		return nil, err
	}
	res.lag = lagAfter.Minus(lagBefore)
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	res.heapInuse = ms.HeapInuse
	res.goroutines = goruntime.NumGoroutine()
	// After the window: the GCs these force are not measured.
	res.end = sampleMemory()
	res.heapByOwner, res.heapBySite, res.heapSampled = heapBreakdown()
	if o.fineLag {
		// One lag series per corpus, shared by its canaries.
		res.fineHistogram = fineHistogramOverhead(min(o.canaries, 2000)) * float64(o.corpora) / float64(o.canaries)
	}
	res.series = seriesByFamily()
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
		if isWrite(k) {
			n += v - r.writesBefore[k]
		}
	}
	return n
}

// print writes the report and returns whether every goal was met.
func (r *result) print(w io.Writer, o options) bool {
	secs := r.window.Seconds()
	lagLo, lagHi := r.lag.Quantile(0.99)
	p50Lo, p50Hi := r.lag.Quantile(0.50)
	rssMiB := benchkit.MiB(r.maxRSS)
	perRun := float64(r.statusWrites()) / secs / float64(r.canaries)
	lagOK := lagHi <= goalLagP99.Seconds()
	rssOK := rssMiB <= goalRSSMiB(r.canaries)
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
	fmt.Fprintf(w, "\nragcanary benchmark: %d active canaries over %d corpora and %d ragtarget(s), probe interval %s, %d control persona(s), status checkpoint %s, GOMAXPROCS %d, %d CPUs\n",
		r.canaries, o.corpora, o.targets, o.interval, controls, o.checkpoint, goruntime.GOMAXPROCS(0), goruntime.NumCPU())
	lagBucketsUsed := "production buckets (13 per corpus)"
	if o.fineLag {
		lagBucketsUsed = "fine buckets (200 per corpus, netted out of the memory figures)"
	}
	fmt.Fprintf(w, "setup (create → every run AwaitingExclusion, its first sighting after the revocation persisted): %s; window %s; runs still AwaitingExclusion at the end: %d; lag read from %s\n\n",
		r.setup.Round(time.Second), r.window.Round(time.Second), r.activeAtEnd, lagBucketsUsed)
	fmt.Fprintf(w, "%-44s %-22s %-12s %s\n", "figure (manager process)", "measured", "goal", "")
	fmt.Fprintf(w, "%-44s %-22s %-12s %s\n", strings.Repeat("-", 44), strings.Repeat("-", 22), strings.Repeat("-", 12), "------")
	fmt.Fprintf(w, "%-44s %-22s %-12s %s\n", "p99 probe scheduling lag", fmt.Sprintf("%s < p99 ≤ %s", benchkit.FmtSec(lagLo), benchkit.FmtSec(lagHi)), "≤ "+goalLagP99.String(), mark(lagOK))
	fmt.Fprintf(w, "%-44s %-22s %-12s %s\n", "max RSS", fmt.Sprintf("%.1f MiB", rssMiB), fmt.Sprintf("≤ %.0f MiB", goalRSSMiB(r.canaries)), mark(rssOK))
	fmt.Fprintf(w, "%-44s %-22s %-12s %s\n", "canaryruns/status writes per active run", fmt.Sprintf("%.4f /s", perRun), fmt.Sprintf("≤ %.3f /s", goalWritesPerRunPS), mark(writesOK))
	fmt.Fprintf(w, "%-44s %-22s\n", "CPU (seconds used / wall seconds)", fmt.Sprintf("%.3f (%.0f%% of one core)", r.cpu.Seconds()/secs, 100*r.cpu.Seconds()/secs))
	fmt.Fprintf(w, "%-44s %-22s\n", "all API writes", fmt.Sprintf("%.2f /s", float64(r.allWrites())/secs))
	expected := float64(r.canaries*(1+controls)) / o.interval.Seconds()
	fmt.Fprintf(w, "%-44s %-22s\n", "probes in window / per second (due /s)", fmt.Sprintf("%d / %.1f (%.1f)", r.lag.Total(), float64(r.lag.Total())/secs, expected))
	fmt.Fprintf(w, "%-44s %-22s\n", "probe outcomes (role/outcome: count)", outcomeLine(r.probesBefore, r.probesAfter))
	fmt.Fprintf(w, "%-44s %-22s\n", "p50 probe scheduling lag", fmt.Sprintf("%s < p50 ≤ %s", benchkit.FmtSec(p50Lo), benchkit.FmtSec(p50Hi)))
	if n := r.lag.Total(); n > 0 {
		fmt.Fprintf(w, "%-44s %-22s\n", "mean probe scheduling lag", benchkit.FmtSec(r.lag.Sum/float64(n)))
	}
	fmt.Fprintf(w, "%-44s %-22s\n", "RSS at end / Go heap in use / goroutines", fmt.Sprintf("%.1f MiB / %.1f MiB / %d", benchkit.MiB(r.endRSS), float64(r.heapInuse)/(1<<20), r.goroutines))

	fmt.Fprintf(w, "%-44s %s\n", "simulated Prometheus scrapes", r.scrapes.line())
	fmt.Fprintf(w, "%-44s %s\n", "nice of the other processes in the window", niceLine(o.childNice))
	fmt.Fprintf(w, "%-44s %-22s\n", "whole machine CPU busy (all processes)", fmt.Sprintf("%.0f%% of %d CPUs", 100*r.machineBusy, goruntime.NumCPU()))

	r.printMemory(w)

	fmt.Fprintf(w, "\nmanager API writes during the setup, per canary:\n")
	for _, line := range perCanary(r.setupWrites, r.canaries) {
		fmt.Fprintf(w, "  %s\n", line)
	}
	r.printSetupLoad(w)
	fmt.Fprintf(w, "stored objects (JSON as the API server returns them): %s\n", r.objects)

	fmt.Fprintf(w, "\nmanager API writes in the window:\n")
	for _, line := range topRequests(r.writesBefore, r.writesAfter, secs, isWrite) {
		fmt.Fprintf(w, "  %s\n", line)
	}
	for i, body := range r.writeSamples {
		fmt.Fprintf(w, "  run status patch %d of the window: %s\n", i+1, body)
	}
	fmt.Fprintf(w, "manager API reads in the window (the cache serves most reads without one):\n")
	for _, line := range topRequests(r.writesBefore, r.writesAfter, secs, func(k string) bool { return !isWrite(k) }) {
		fmt.Fprintf(w, "  %s\n", line)
	}
	fmt.Fprintf(w, "\nAPI server requests in the window (apiserver_request_total, every client), by verb:\n")
	for _, line := range benchkit.Rates(r.apiBefore.ByVerb, r.apiAfter.ByVerb, secs, 0, "/s") {
		fmt.Fprintf(w, "  %s\n", line)
	}
	fmt.Fprintf(w, "by verb and resource (≥ 0.1/s):\n")
	for _, line := range benchkit.Rates(r.apiBefore.ByResource, r.apiAfter.ByResource, secs, 0.1, "/s")[1:] {
		fmt.Fprintf(w, "  %s\n", line)
	}
	fmt.Fprintf(w, "\nother processes on the machine started by the benchmark (CPU / wall, RSS at end):\n")
	for name, after := range r.childrenAfter {
		before := r.childrenBefore[name]
		fmt.Fprintf(w, "  %-18s %5.0f%% of one core  %7.1f MiB\n", name, 100*(after.CPU-before.CPU).Seconds()/secs, benchkit.MiB(after.RSS))
	}
	ok := lagOK && rssOK && writesOK
	if ok {
		fmt.Fprintf(w, "\nall goals met\n")
	} else {
		fmt.Fprintf(w, "\nat least one goal MISSED\n")
	}
	return ok
}

// printMemory writes memory per canary and where the heap goes.
func (r *result) printMemory(w io.Writer) {
	n := float64(r.canaries)
	kib := func(b float64) string { return fmt.Sprintf("%.1f KiB", b/1024) }
	heapPer := (float64(r.end.heapInuse) - float64(r.base.heapInuse)) / n
	fmt.Fprintf(w, "\nmemory per canary (after the window minus before the first canary, over %d canaries):\n", r.canaries)
	fmt.Fprintf(w, "  %-42s %s (%.1f MiB → %.1f MiB)\n", "RSS", kib((float64(r.end.rss)-float64(r.base.rss))/n), benchkit.MiB(r.base.rss), benchkit.MiB(r.end.rss))
	fmt.Fprintf(w, "  %-42s %s (%.1f MiB → %.1f MiB)\n", "Go heap in use", kib(heapPer), float64(r.base.heapInuse)/(1<<20), float64(r.end.heapInuse)/(1<<20))
	fmt.Fprintf(w, "  %-42s %s\n", "of which the benchmark's fine lag histogram", kib(r.fineHistogram))
	fmt.Fprintf(w, "  %-42s %s\n", "heap in use net of it (what production holds)", kib(heapPer-r.fineHistogram))
	fmt.Fprintf(w, "  %-42s %s (%.1f MiB → %.1f MiB)\n", "goroutine stacks", kib((float64(r.end.stackInuse)-float64(r.base.stackInuse))/n), float64(r.base.stackInuse)/(1<<20), float64(r.end.stackInuse)/(1<<20))
	fmt.Fprintf(w, "  %-42s %.1f\n", "live heap objects", (float64(r.end.heapObjects)-float64(r.base.heapObjects))/n)
	fmt.Fprintf(w, "\nin-use heap at the end by owner (sampled every %d KiB, scaled; %.1f MiB in all):\n", goruntime.MemProfileRate>>10, r.heapSampled/(1<<20))
	for _, sh := range r.heapByOwner {
		fmt.Fprintf(w, "  %-46s %7.1f MiB  %5.1f%%  %s per canary\n", sh.name, sh.bytes/(1<<20), 100*sh.bytes/r.heapSampled, kib(sh.bytes/n))
	}
	fmt.Fprintf(w, "ragcanary metric series at the end, by family (count, per canary):\n")
	for _, sh := range r.series {
		fmt.Fprintf(w, "  %-58s %7.0f  %5.2f\n", sh.name, sh.bytes, sh.bytes/n)
	}
	fmt.Fprintf(w, "top allocating functions by in-use bytes:\n")
	for i, sh := range r.heapBySite {
		if i == 15 {
			break
		}
		fmt.Fprintf(w, "  %-90s %7.1f MiB  %5.1f%%\n", shorten(sh.name, 90), sh.bytes/(1<<20), 100*sh.bytes/r.heapSampled)
	}
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n+1:]
}

// outcomeLine formats probe counts in the window by role and outcome.
func outcomeLine(before, after map[string]float64) string {
	var parts []string
	for _, k := range []string{"persona/present", "persona/absent", "persona/error", "control/present", "control/absent", "control/error"} {
		if d := after[k] - before[k]; d > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, d))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func niceLine(nice int) string {
	if nice == 0 {
		return "0 (as the manager: they share the CPUs equally)"
	}
	return fmt.Sprintf("%d (the manager is served first, as when they run elsewhere)", nice)
}

// setupSample is what the setup is measured by at its start and end.
type setupSample struct {
	self     time.Duration
	children map[string]benchkit.ProcSample
	api      benchkit.RequestCounts
}

// sampleSetup samples the manager's and the children's CPU and the API
// server's request counters.
func sampleSetup(ctx context.Context, api *benchkit.APIServerMetrics) (setupSample, error) {
	counts, err := api.Requests(ctx)
	if err != nil {
		return setupSample{}, err
	}
	return setupSample{self: selfCPU(), children: benchkit.Children(), api: counts}, nil
}

// printSetupLoad prints who used the CPU during the setup and the API
// server's requests then (every client, the benchmark's creates and polls
// included).
func (r *result) printSetupLoad(w io.Writer) {
	secs := r.setup.Seconds()
	b, a := r.setupBefore, r.setupAfter
	fmt.Fprintf(w, "CPU during the setup (share of one core over %s):\n", r.setup.Round(time.Second))
	fmt.Fprintf(w, "  %-18s %5.0f%%\n", "manager (and bench)", 100*(a.self-b.self).Seconds()/secs)
	for name, after := range a.children {
		fmt.Fprintf(w, "  %-18s %5.0f%%\n", name, 100*(after.CPU-b.children[name].CPU).Seconds()/secs)
	}
	fmt.Fprintf(w, "API server requests during the setup, per canary, by verb and resource (≥ 0.05):\n")
	for _, line := range benchkit.Rates(b.api.ByResource, a.api.ByResource, float64(r.canaries), 0.05, "per canary") {
		fmt.Fprintf(w, "  %s\n", line)
	}
}
