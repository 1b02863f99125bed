package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ragcanary/ragcanary/hack/bench/internal/benchkit"
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

func gatherLag(reg *prometheus.Registry) (benchkit.LagBuckets, error) {
	families, err := reg.Gather()
	if err != nil {
		return benchkit.LagBuckets{}, err
	}
	var out benchkit.LagBuckets
	out.AddFamilies(families)
	return out, nil
}

// selfCPU is this process's CPU time, all threads, from getrusage.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
			if r := benchkit.RSSOf("self"); r > s.max.Load() {
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
		s.series, benchkit.MiB(int64(s.bytes)), sorted[len(sorted)/2].Round(time.Millisecond), sorted[len(sorted)-1].Round(time.Millisecond))
}
