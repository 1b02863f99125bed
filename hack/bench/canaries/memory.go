package main

import (
	"fmt"
	"math"
	goruntime "runtime"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ragcanary/ragcanary/hack/bench/internal/benchkit"
	"github.com/ragcanary/ragcanary/internal/metrics"
)

// memSample is this process's memory at one moment, after a GC.
type memSample struct {
	rss                              int64
	heapAlloc, heapInuse, stackInuse uint64
	heapObjects                      uint64
}

func sampleMemory() memSample {
	goruntime.GC()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	return memSample{rss: benchkit.RSSOf("self"), heapAlloc: ms.HeapAlloc, heapInuse: ms.HeapInuse, stackInuse: ms.StackInuse, heapObjects: ms.HeapObjects}
}

// owner is a part of the manager that holds heap. A sampled allocation
// belongs to the first owner, in this order, with a frame of its stack
// in one of the owner's packages: a metric series created by a probe is
// the metrics' heap, not the probe engine's.
type owner struct {
	name     string
	prefixes []string
}

var owners = []owner{
	{"metric series (prometheus client_golang)", []string{"github.com/prometheus/client_golang/"}},
	{"event recorder (pending and aggregated events)", []string{"k8s.io/client-go/tools/events.", "k8s.io/client-go/tools/record."}},
	// Objects decoded from a WATCH are decoded in the watch's own
	// goroutine, whose stack has no informer frame.
	{"informer cache (objects from LIST/WATCH)", []string{"k8s.io/client-go/tools/cache.", "sigs.k8s.io/controller-runtime/pkg/cache", "k8s.io/apimachinery/pkg/watch."}},
	{"probe engine (loops, state, limiters)", []string{"github.com/ragcanary/ragcanary/internal/probe.", "github.com/ragcanary/ragcanary/internal/target."}},
	{"driver HTTP clients and connections", []string{"github.com/ragcanary/ragcanary/internal/driver/", "net/http.", "crypto/tls.", "net."}},
	{"reconcilers and work queues", []string{"github.com/ragcanary/ragcanary/controllers.", "k8s.io/client-go/util/workqueue", "sigs.k8s.io/controller-runtime/pkg/internal/controller"}},
	{"API client (requests, decoding)", []string{"k8s.io/client-go/", "k8s.io/apimachinery/"}},
	{"benchmark harness", []string{"main."}},
}

// heapShare is in-use heap attributed to one owner or allocation site.
type heapShare struct {
	name  string
	bytes float64
}

// heapBreakdown attributes the in-use heap of the last GC by owner and by
// allocating function (the first frame outside the runtime), scaled from
// the sampled profile as pprof scales it.
func heapBreakdown() (byOwner, bySite []heapShare, total float64) {
	goruntime.GC()
	var recs []goruntime.MemProfileRecord
	for {
		n, ok := goruntime.MemProfile(recs, false)
		if ok {
			recs = recs[:n]
			break
		}
		recs = make([]goruntime.MemProfileRecord, n+64)
	}
	ownerBytes, siteBytes := map[string]float64{}, map[string]float64{}
	for i := range recs {
		r := &recs[i]
		inuse, objs := r.InUseBytes(), r.InUseObjects()
		if inuse <= 0 || objs <= 0 {
			continue
		}
		b := scaledBytes(inuse, objs)
		total += b
		funcs := stackFuncs(r.Stack())
		ownerBytes[ownerOf(funcs)] += b
		siteBytes[siteOf(funcs)] += b
	}
	return sortShares(ownerBytes), sortShares(siteBytes), total
}

// scaledBytes undoes the profile's sampling: an allocation of average size
// s is sampled with probability 1-exp(-s/rate) (runtime/pprof does the same).
func scaledBytes(bytes, objects int64) float64 {
	rate := float64(goruntime.MemProfileRate)
	if rate <= 1 {
		return float64(bytes)
	}
	avg := float64(bytes) / float64(objects)
	return float64(bytes) / (1 - math.Exp(-avg/rate))
}

func stackFuncs(pcs []uintptr) []string {
	frames := goruntime.CallersFrames(pcs)
	var out []string
	for {
		f, more := frames.Next()
		out = append(out, f.Function)
		if !more {
			return out
		}
	}
}

func ownerOf(funcs []string) string {
	for _, o := range owners {
		for _, fn := range funcs {
			for _, p := range o.prefixes {
				if strings.HasPrefix(fn, p) {
					return o.name
				}
			}
		}
	}
	return "other"
}

// siteOf is the allocating function: the first frame outside the runtime
// and the standard library's generic containers.
func siteOf(funcs []string) string {
	for _, fn := range funcs {
		if !strings.HasPrefix(fn, "runtime.") && !strings.HasPrefix(fn, "internal/") &&
			!strings.HasPrefix(fn, "reflect.") && !strings.HasPrefix(fn, "maps.") && !strings.HasPrefix(fn, "slices.") {
			return fn
		}
	}
	if len(funcs) > 0 {
		return funcs[0]
	}
	return "?"
}

func sortShares(m map[string]float64) []heapShare {
	out := make([]heapShare, 0, len(m))
	for k, v := range m {
		out = append(out, heapShare{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].bytes > out[j].bytes })
	return out
}

// fineHistogramOverhead estimates the heap the benchmark's own lag
// histogram (installLagHistogram: 200 buckets per canary instead of the
// production 13) adds per series, by building n series of each kind and
// comparing the heap, so per-canary figures can be given net of it.
func fineHistogramOverhead(n int) float64 {
	perSeries := func(buckets []float64) float64 {
		before := sampleMemory()
		vec := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "probe", Buckets: buckets},
			[]string{metrics.LabelNamespace, metrics.LabelCanary, metrics.LabelCorpus})
		for i := range n {
			vec.WithLabelValues("bench", fmt.Sprintf("canary-%05d", i), "target-00").Observe(0.001)
		}
		after := sampleMemory()
		goruntime.KeepAlive(vec)
		return (float64(after.heapAlloc) - float64(before.heapAlloc)) / float64(n)
	}
	fine := perSeries(fineLagBuckets)
	production := perSeries([]float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60})
	return max(fine-production, 0)
}

// seriesByFamily counts the series each ragcanary metric family holds on
// controller-runtime's registry (the benchmark's own lag histogram is
// counted under its production name).
func seriesByFamily() []heapShare {
	counts := map[string]float64{}
	if families, err := crmetrics.Registry.Gather(); err == nil {
		for _, fam := range families {
			if strings.HasPrefix(fam.GetName(), "ragcanary_") {
				counts[fam.GetName()] += float64(len(fam.GetMetric()))
			}
		}
	}
	return sortShares(counts)
}
