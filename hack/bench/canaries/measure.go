package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ragcanary/ragcanary/internal/metrics"
)

// writeCounter counts the manager's API requests by verb and resource path
// ("PATCH canaryruns/status", "LIST canaryruns"), wrapping its REST
// transport; the report separates writes from reads.
type writeCounter struct {
	mu     sync.Mutex
	counts map[string]int64
	// sample keeps up to keep bodies of run status patches once sampling
	// starts: what the window's writes changed.
	sampling bool
	keep     int
	sample   []string
}

func newWriteCounter() *writeCounter { return &writeCounter{counts: map[string]int64{}} }

// wrap is a rest.Config WrapTransport.
func (c *writeCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		key := verbOf(req) + " " + resourceOf(req.URL.Path)
		c.mu.Lock()
		c.counts[key]++
		if c.sampling && len(c.sample) < c.keep && key == "PATCH canaryruns/status" && req.GetBody != nil {
			if body, err := req.GetBody(); err == nil {
				b, _ := io.ReadAll(io.LimitReader(body, 2048))
				c.sample = append(c.sample, string(b))
			}
		}
		c.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

// startSampling keeps the next n run status patch bodies.
func (c *writeCounter) startSampling(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sampling, c.keep = true, n
}

func (c *writeCounter) samples() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.sample...)
}

func (c *writeCounter) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// verbOf names a request as the API server's metrics do: a GET is a WATCH
// with watch=true, a LIST of a collection, else a GET of one object.
func verbOf(req *http.Request) string {
	if req.Method != http.MethodGet {
		return req.Method
	}
	if req.URL.Query().Get("watch") == "true" {
		return "WATCH"
	}
	if isCollection(req.URL.Path) {
		return "LIST"
	}
	return "GET"
}

// isCollection: /api/v1/secrets, /apis/g/v/namespaces/ns/canaryruns.
func isCollection(path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return false
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	return len(parts) == 1
}

// isWrite: the verbs that change an object.
func isWrite(key string) bool {
	verb, _, _ := strings.Cut(key, " ")
	switch verb {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// resourceOf turns an API path into "resource" or "resource/subresource":
// /apis/g/v/namespaces/ns/canaryruns/name/status → canaryruns/status.
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i < len(parts); i++ {
		if parts[i] == "namespaces" && i+2 < len(parts) {
			parts = parts[i+2:]
			break
		}
	}
	switch {
	case len(parts) >= 3:
		return parts[0] + "/" + parts[2]
	case len(parts) >= 1:
		return parts[0]
	}
	return path
}

// installLagHistogram returns the registry the lag is read from. With
// fine, it replaces ragcanary_probe_scheduling_lag_seconds for the
// benchmark with the same name and labels but fine buckets (about 7% apart
// from 0.1 ms to 60 s), so the p99 is read to within one narrow bucket
// instead of the production buckets' 250 ms → 500 ms step; the engine
// records through metrics.ObserveSchedulingLag, which reads the variable at
// call time. Without, it reads the production histogram itself, so the
// manager's memory is exactly production's.
func installLagHistogram(fine bool) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	if !fine {
		reg.MustRegister(metrics.ProbeSchedulingLag)
		return reg
	}
	vec := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "ragcanary", Name: "probe_scheduling_lag_seconds",
		Help:    "Delay between a probe's due time and its start, including rate-limit waits, per corpus (benchmark buckets).",
		Buckets: fineLagBuckets,
	}, []string{metrics.LabelNamespace, metrics.LabelCorpus})
	metrics.ProbeSchedulingLag = vec
	reg.MustRegister(vec)
	return reg
}

// fineLagBuckets are about 7% apart from 0.1 ms to 60 s.
var fineLagBuckets = prometheus.ExponentialBucketsRange(0.0001, 60, 200)

// lagBuckets is a cumulative histogram summed over every series.
type lagBuckets struct {
	bounds []float64
	counts []uint64 // cumulative, per bound; the last bound is +Inf
	sum    float64
}

func gatherLag(reg *prometheus.Registry) (lagBuckets, error) {
	families, err := reg.Gather()
	if err != nil {
		return lagBuckets{}, err
	}
	var out lagBuckets
	for _, fam := range families {
		for _, m := range fam.GetMetric() {
			addHistogram(&out, m.GetHistogram())
		}
	}
	return out, nil
}

func addHistogram(out *lagBuckets, h *dto.Histogram) {
	if h == nil {
		return
	}
	if out.bounds == nil {
		for _, b := range h.GetBucket() {
			out.bounds = append(out.bounds, b.GetUpperBound())
		}
		out.bounds = append(out.bounds, math.Inf(1))
		out.counts = make([]uint64, len(out.bounds))
	}
	for i, b := range h.GetBucket() {
		out.counts[i] += b.GetCumulativeCount()
	}
	out.counts[len(out.counts)-1] += h.GetSampleCount()
	out.sum += h.GetSampleSum()
}

// minus is the observations between an earlier snapshot and this one.
func (b lagBuckets) minus(earlier lagBuckets) lagBuckets {
	out := lagBuckets{bounds: b.bounds, counts: make([]uint64, len(b.counts)), sum: b.sum - earlier.sum}
	for i := range b.counts {
		out.counts[i] = b.counts[i]
		if i < len(earlier.counts) {
			out.counts[i] -= earlier.counts[i]
		}
	}
	return out
}

func (b lagBuckets) total() uint64 {
	if len(b.counts) == 0 {
		return 0
	}
	return b.counts[len(b.counts)-1]
}

// quantile returns the upper bound of the bucket holding quantile q: the
// true value is at most this (and above the previous bound).
func (b lagBuckets) quantile(q float64) (lower, upper float64) {
	n := b.total()
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	rank := uint64(math.Ceil(q * float64(n)))
	for i, c := range b.counts {
		if c >= rank {
			if i > 0 {
				lower = b.bounds[i-1]
			}
			return lower, b.bounds[i]
		}
	}
	return b.bounds[len(b.bounds)-2], math.Inf(1)
}

// procSample is one process's resource use.
type procSample struct {
	cpu time.Duration // user + system
	rss int64         // bytes
}

// selfCPU is this process's CPU time, all threads, from getrusage.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rssOf reads VmRSS of pid ("self" for this process).
func rssOf(pid string) int64 {
	f, err := os.Open(filepath.Join("/proc", pid, "status"))
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// clockTick is USER_HZ, the unit of /proc/<pid>/stat times; 100 on Linux.
const clockTick = 100

// childProc is one direct child of this process.
type childProc struct {
	pid, name  string
	utime, stm int64
}

// directChildren lists this process's direct children (etcd,
// kube-apiserver, kube-controller-manager, the ragtargets) by command name.
// The ragtarget child is this binary.
func directChildren() []childProc {
	self := strconv.Itoa(os.Getpid())
	selfComm, _ := os.ReadFile("/proc/self/comm")
	entries, _ := os.ReadDir("/proc")
	var out []childProc
	for _, e := range entries {
		pid := e.Name()
		if _, err := strconv.Atoi(pid); err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ... utime(14) stime(15)
		s := string(data)
		open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || closing < 0 {
			continue
		}
		fields := strings.Fields(s[closing+1:])
		if len(fields) < 13 || fields[1] != self {
			continue
		}
		utime, _ := strconv.ParseInt(fields[11], 10, 64)
		stime, _ := strconv.ParseInt(fields[12], 10, 64)
		name := s[open+1 : closing]
		if name == strings.TrimSpace(string(selfComm)) {
			name = "ragtarget (child)"
		}
		out = append(out, childProc{pid: pid, name: name, utime: utime, stm: stime})
	}
	return out
}

// children samples the direct children's CPU and RSS by command name.
func children() map[string]procSample {
	out := map[string]procSample{}
	for _, c := range directChildren() {
		prev := out[c.name]
		out[c.name] = procSample{
			cpu: prev.cpu + time.Duration(c.utime+c.stm)*time.Second/clockTick,
			rss: prev.rss + rssOf(c.pid),
		}
	}
	return out
}

// reniceChildren sets the nice value of every thread of every direct
// child: on Linux a nice value belongs to a thread, and threads a Go
// process starts later inherit it from the thread that starts them.
func reniceChildren(nice int) error {
	for _, c := range directChildren() {
		tasks, err := os.ReadDir(filepath.Join("/proc", c.pid, "task"))
		if err != nil {
			continue // exited
		}
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("renice %s (thread %d): %w", c.name, tid, err)
			}
		}
	}
	return nil
}

// rssSampler records the maximum RSS of this process while it runs.
type rssSampler struct {
	max  atomic.Int64
	stop chan struct{}
	done chan struct{}
}

func startRSSSampler(every time.Duration) *rssSampler {
	s := &rssSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if r := rssOf("self"); r > s.max.Load() {
				s.max.Store(r)
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *rssSampler) finish() int64 {
	close(s.stop)
	<-s.done
	return s.max.Load()
}

// topRequests formats the request counts between two snapshots, largest
// first, of the requests keep selects.
func topRequests(before, after map[string]int64, seconds float64, keep func(string) bool) []string {
	type kv struct {
		key string
		n   int64
	}
	var rows []kv
	for k, v := range after {
		if d := v - before[k]; d > 0 && keep(k) {
			rows = append(rows, kv{k, d})
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].n > rows[j].n })
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%-32s %7d  %7.2f/s", r.key, r.n, float64(r.n)/seconds))
	}
	return out
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// machineCPU reads the busy and total jiffies of all CPUs from /proc/stat,
// so the report shows how loaded the machine was (other work included).
func machineCPU() (busy, total uint64) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0, 0
	}
	for i, f := range fields[1:] {
		v, _ := strconv.ParseUint(f, 10, 64)
		total += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, total
}

// probeOutcomes sums ragcanary_probes_total by role and outcome
// ("persona/present"): errors there mean the target or the manager could
// not keep up, which the lag alone does not show.
func probeOutcomes() map[string]float64 {
	out := map[string]float64{}
	// A registry of this family alone: gathering every series would cost
	// the manager more CPU than the answer is worth.
	reg := prometheus.NewRegistry()
	if err := reg.Register(metrics.ProbesTotal); err != nil {
		return out
	}
	families, err := reg.Gather()
	if err != nil {
		return out
	}
	for _, fam := range families {
		if fam.GetName() != "ragcanary_probes_total" {
			continue
		}
		for _, m := range fam.GetMetric() {
			var role, outcome string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case metrics.LabelRole:
					role = l.GetValue()
				case metrics.LabelOutcome:
					outcome = l.GetValue()
				}
			}
			out[role+"/"+outcome] += m.GetCounter().GetValue()
		}
	}
	return out
}

// scrapeStats summarises the simulated scrapes of the window.
type scrapeStats struct {
	every     time.Duration
	durations []time.Duration
	bytes     int
	series    int
	err       error
}

type scraper struct {
	stop  context.CancelFunc
	done  chan struct{}
	stats scrapeStats
}

// startScraper gathers and encodes the manager's whole registry every
// interval, as Prometheus scraping /metrics would (the chart's
// ServiceMonitor scrapes every 30 s), so the lag is measured under the load
// production adds. 0 turns it off.
func startScraper(ctx context.Context, every time.Duration) *scraper {
	ctx, stop := context.WithCancel(ctx)
	s := &scraper{stop: stop, done: make(chan struct{}), stats: scrapeStats{every: every}}
	if every <= 0 {
		close(s.done)
		return s
	}
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := s.scrape(); err != nil {
					s.stats.err = err
					return
				}
			}
		}
	}()
	return s
}

func (s *scraper) scrape() error {
	start := time.Now()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		return err
	}
	var w byteCounter
	enc := expfmt.NewEncoder(&w, expfmt.NewFormat(expfmt.TypeTextPlain))
	series := 0
	for _, fam := range families {
		series += len(fam.GetMetric())
		if err := enc.Encode(fam); err != nil {
			return err
		}
	}
	s.stats.durations = append(s.stats.durations, time.Since(start))
	s.stats.bytes, s.stats.series = int(w), series
	return nil
}

func (s *scraper) finish() scrapeStats {
	s.stop()
	<-s.done
	return s.stats
}

// byteCounter counts what an encoder writes and keeps none of it.
type byteCounter int

func (c *byteCounter) Write(p []byte) (int, error) {
	*c += byteCounter(len(p))
	return len(p), nil
}

// line describes the scrapes for the report.
func (s scrapeStats) line() string {
	if s.every <= 0 {
		return "off (--scrape-interval 0)"
	}
	if s.err != nil {
		return "failed: " + s.err.Error()
	}
	if len(s.durations) == 0 {
		return fmt.Sprintf("every %s, none in the window", s.every)
	}
	sorted := slices.Clone(s.durations)
	slices.Sort(sorted)
	return fmt.Sprintf("every %s: %d, %d series / %.1f MiB each, took median %s, max %s", s.every, len(sorted),
		s.series, mib(int64(s.bytes)), sorted[len(sorted)/2].Round(time.Millisecond), sorted[len(sorted)-1].Round(time.Millisecond))
}
