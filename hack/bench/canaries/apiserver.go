package main

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

// apiServerMetrics reads the API server's own request counters, so the
// report shows the load the fleet puts on it beside the manager's figures.
type apiServerMetrics struct {
	rc rest.Interface
}

func newAPIServerMetrics(base *rest.Config) (*apiServerMetrics, error) {
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = -1, 0
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &apiServerMetrics{rc: cs.CoreV1().RESTClient()}, nil
}

// requestCounts is apiserver_request_total summed by verb ("PATCH") and by
// verb and resource ("PATCH canaryruns/status").
type requestCounts struct {
	byVerb, byResource map[string]float64
}

var labelPair = regexp.MustCompile(`(\w+)="([^"]*)"`)

// requests scrapes /metrics. Every client's requests count, the
// benchmark's two scrapes included; in the window the manager is the only
// other client.
func (m *apiServerMetrics) requests(ctx context.Context) (requestCounts, error) {
	body, err := m.rc.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return requestCounts{}, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	out := requestCounts{byVerb: map[string]float64{}, byResource: map[string]float64{}}
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
		out.byVerb[verb] += v
		out.byResource[verb+" "+resource] += v
	}
	return out, nil
}

// rates formats the counts between two snapshots as rates per unit (per
// second over seconds, or per canary), largest first, dropping rows below
// min per unit.
func rates(before, after map[string]float64, per, min float64, unit string) []string {
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

// cpuProfile asks the API server for a CPU profile of the next d (its
// /debug/pprof endpoint, on by default) and writes it to path, so where
// its time per status write goes can be read with go tool pprof.
func (m *apiServerMetrics) cpuProfile(ctx context.Context, d time.Duration, path string) error {
	body, err := m.rc.Get().AbsPath("/debug/pprof/profile").Param("seconds", strconv.Itoa(int(d.Seconds()))).
		Timeout(d + time.Minute).DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("profiling the API server: %w", err)
	}
	return os.WriteFile(path, body, 0o644)
}
