// Package benchkit holds what the benchmarks under hack/bench share: the
// ragtarget child process, the canary fleet and its fixture, waiting for
// runs, the API server's request counters, process figures from /proc and
// the probe scheduling lag histogram.
package benchkit

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// APIServerMetrics reads the API server's own request counters, so the
// report shows the load the fleet puts on it beside the manager's figures.
type APIServerMetrics struct {
	rc rest.Interface
}

func NewAPIServerMetrics(base *rest.Config) (*APIServerMetrics, error) {
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = -1, 0
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &APIServerMetrics{rc: cs.CoreV1().RESTClient()}, nil
}

// RequestCounts is apiserver_request_total summed by verb ("PATCH") and by
// verb and resource ("PATCH canaryruns/status").
type RequestCounts struct {
	ByVerb, ByResource map[string]float64
}

var labelPair = regexp.MustCompile(`(\w+)="([^"]*)"`)

// Requests scrapes /metrics. Every client's requests count, the
// benchmark's own scrapes included.
func (m *APIServerMetrics) Requests(ctx context.Context) (RequestCounts, error) {
	body, err := m.rc.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return RequestCounts{}, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	out := RequestCounts{ByVerb: map[string]float64{}, ByResource: map[string]float64{}}
	for _, line := range strings.Split(string(body), "\n") {
		rest, ok := strings.CutPrefix(line, "apiserver_request_total{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		l := map[string]string{}
		for _, m := range labelPair.FindAllStringSubmatch(labels, -1) {
			l[m[1]] = m[2]
		}
		resource := l["resource"]
		if resource == "" {
			resource = "(non-resource)"
		}
		if sub := l["subresource"]; sub != "" {
			resource += "/" + sub
		}
		// Cloned: a substring would keep the whole scrape alive in the heap
		// the report breaks down.
		verb := strings.Clone(l["verb"])
		out.ByVerb[verb] += v
		out.ByResource[verb+" "+resource] += v
	}
	return out, nil
}

// Rates formats the counts between two snapshots as rates per unit (per
// second over seconds, or per canary), largest first, dropping rows below
// min per unit.
func Rates(before, after map[string]float64, per, min float64, unit string) []string {
	type kv struct {
		key string
		n   float64
	}
	var rows []kv
	var total float64
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			total += d
			if d/per >= min {
				rows = append(rows, kv{k, d})
			}
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].n > rows[j].n })
	out := []string{fmt.Sprintf("%-40s %9.0f  %8.2f %s", "all", total, total/per, unit)}
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%-40s %9.0f  %8.2f %s", r.key, r.n, r.n/per, unit))
	}
	return out
}

// CPUProfile asks the API server for a CPU profile of the next d (its
// /debug/pprof endpoint, on by default) and writes it to path, so where
// its time per status write goes can be read with go tool pprof.
func (m *APIServerMetrics) CPUProfile(ctx context.Context, d time.Duration, path string) error {
	body, err := m.rc.Get().AbsPath("/debug/pprof/profile").Param("seconds", strconv.Itoa(int(d.Seconds()))).
		Timeout(d + time.Minute).DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("profiling the API server: %w", err)
	}
	return os.WriteFile(path, body, 0o644)
}

// IsWriteVerb: the API server's verbs that change an object.
func IsWriteVerb(verb string) bool {
	switch verb {
	case "POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION", "APPLY", "CREATE", "UPDATE":
		return true
	}
	return false
}

// Writes is the number of write requests between two snapshots.
func Writes(before, after RequestCounts) float64 {
	var n float64
	for verb, v := range after.ByVerb {
		if IsWriteVerb(verb) {
			n += v - before.ByVerb[verb]
		}
	}
	return n
}
