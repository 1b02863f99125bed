package metrics

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// A fleet is n canaries in the mix a large installation runs, each with the
// series the reconcilers and probe loops give it (fleetMember.record) and the
// objects the ObjectCollector derives gauges from. Canary i's kind is set by
// i mod 100:
//
//	0-4    sentinel, two control personas, Search and Answer
//	5-9    content freshness (UpdateContent), Search
//	10-11  InFlight and Search
//	12-19  Search, Answer and Conversation
//	20-39  Search and Answer
//	40-99  Search only
//
// Every canary has finished a run (steady state; mostly SLOMet, some
// SLOBreached, censored or Inconclusive); one in ten has a run in progress
// past revocation, three in ten an ordinary control persona, one in fifty
// probe errors; one in twenty sets an exclusionSLO of its own (i mod 20 =
// 11).
const fleetCorpora = 10

type fleetMember struct {
	run       Run
	sentinel  bool
	content   bool
	surfaces  []string
	controls  []string
	verdict   string
	censored  bool // the finished run's Search surface ended without an upper bound
	errors    bool
	inFlight  bool // a run in progress past revocation
	inStreams bool // probes the InFlight surface too
	ownSLO    bool // sets exclusionSLO apart from its corpus's
}

func fleetMemberOf(i int) fleetMember {
	m := fleetMember{
		run:      Run{Namespace: "bench", Canary: fmt.Sprintf("canary-%05d", i), Corpus: fmt.Sprintf("target-%02d", i%fleetCorpora)},
		surfaces: []string{"Search"},
		verdict:  "SLOMet",
	}
	switch k := i % 100; {
	case k < 5:
		m.sentinel, m.surfaces, m.controls, m.verdict = true, []string{"Search", "Answer"}, []string{"outsider-a", "outsider-b"}, "Isolated"
	case k < 10:
		m.content = true
	case k < 12:
		m.inStreams = true
	case k < 20:
		m.surfaces = []string{"Search", "Answer", "Conversation"}
	case k < 40:
		m.surfaces = []string{"Search", "Answer"}
	}
	if !m.sentinel {
		if i%10 < 3 {
			m.controls = []string{"control"}
		}
		switch i % 50 {
		case 13:
			m.verdict = "SLOBreached"
		case 14:
			m.verdict, m.censored = "NotExcluded", true
		case 15:
			m.verdict, m.censored, m.errors = "Inconclusive", true, true
		}
	}
	m.inFlight = i%10 == 7
	m.ownSLO = i%20 == 11
	return m
}

// record makes the calls the reconcilers and the probe loop make for one
// canary: ready, probes of a finished run, its completion, then probes of
// the run in progress.
func (m fleetMember) record() {
	m.ready()
	series := NewProbeSeries(m.run)
	m.probe(series)
	RecordCompletion(m.run, m.completion())
	if !m.inFlight {
		return
	}
	series = NewProbeSeries(m.run)
	m.probe(series)
	for _, s := range m.surfaces {
		SetLiveExposure(m.run, s, 40*time.Second)
	}
}

// ready is what the RevocationCanary reconciler does when the canary
// becomes Ready.
func (m fleetMember) ready() {
	if m.sentinel {
		InitSentinel(m.run, m.controls, m.surfaces...)
		return
	}
	InitCanary(m.run, m.surfaces...)
}

func (m fleetMember) probe(series *ProbeSeries) {
	series.ObserveLag(3 * time.Millisecond)
	for _, s := range m.surfaces {
		series.ObserveProbe(s, RolePersona, "present", 40*time.Millisecond)
		series.ObserveProbe(s, RolePersona, "absent", 40*time.Millisecond)
		if m.errors {
			series.ObserveProbe(s, RolePersona, "error", 2*time.Second)
		}
		for range m.controls {
			series.ObserveProbe(s, RoleControl, "absent", 40*time.Millisecond)
		}
	}
}

func (m fleetMember) completion() Completion {
	visible := 6 * time.Second
	c := Completion{Verdict: m.verdict, TimeToVisibility: &visible}
	if m.sentinel {
		return c
	}
	for _, s := range m.surfaces {
		lower, upper := 20*time.Second, 25*time.Second
		r := SurfaceResult{Surface: s, Lower: &lower, Upper: &upper, Content: m.content}
		if m.censored && s == "Search" {
			r.Upper = nil
		}
		c.Surfaces = append(c.Surfaces, r)
	}
	return c
}

// objects are the canary as the cache holds it: Ready, and its last run
// summarised in status.
func (m fleetMember) object(finished time.Time) v1alpha1.RevocationCanary {
	c := v1alpha1.RevocationCanary{
		ObjectMeta: metav1.ObjectMeta{Namespace: m.run.Namespace, Name: m.run.Canary},
		Spec: v1alpha1.RevocationCanarySpec{
			Scheduling: v1alpha1.Scheduling{Schedule: v1alpha1.Schedule{Every: dur(time.Hour)}},
			CanarySpec: v1alpha1.CanarySpec{CorpusRef: v1alpha1.LocalObjectReference{Name: m.run.Corpus}},
		},
		Status: v1alpha1.RevocationCanaryStatus{Conditions: ready(metav1.ConditionTrue, "Scheduled")},
	}
	for _, s := range m.surfaces {
		c.Spec.Probing.Surfaces = append(c.Spec.Probing.Surfaces, v1alpha1.Surface(s))
	}
	if m.inStreams {
		c.Spec.Probing.Surfaces = append(c.Spec.Probing.Surfaces, v1alpha1.SurfaceInFlight)
	}
	if m.content {
		c.Spec.Revocation.Method = v1alpha1.RevokeUpdateContent
	}
	if m.ownSLO {
		c.Spec.ExclusionSLO = dur(20 * time.Second)
	}
	if m.sentinel {
		c.Spec.Sentinel = &v1alpha1.Sentinel{}
		for _, p := range m.controls {
			c.Spec.ControlPersonaRefs = append(c.Spec.ControlPersonaRefs, v1alpha1.LocalObjectReference{Name: p})
		}
	}
	last := &v1alpha1.RunSummary{Name: m.run.Canary + "-1", Verdict: v1alpha1.Verdict(m.verdict), CompletionTime: &metav1.Time{Time: finished}}
	for _, r := range m.completion().Surfaces {
		b := &v1alpha1.ExclusionBounds{Lower: &metav1.Duration{Duration: *r.Lower}}
		if r.Upper != nil {
			b.Upper = &metav1.Duration{Duration: *r.Upper}
		}
		sum := v1alpha1.SurfaceSummary{Surface: v1alpha1.Surface(r.Surface), Bounds: b}
		if m.content {
			sum.ContentFreshness = b
		}
		last.Surfaces = append(last.Surfaces, sum)
	}
	if m.inStreams {
		last.InFlight = &v1alpha1.InFlightSummary{PostRevocationDelivery: dur(0), CanaryBytesAfterRequest: 0}
	}
	c.Status.LastRun = last
	return c
}

// fleetReader serves fixed lists, as the manager's cache does: from memory,
// without copying.
type fleetReader struct {
	canaries []v1alpha1.RevocationCanary
	corpora  []v1alpha1.Corpus
}

func (r *fleetReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return fmt.Errorf("fleetReader serves lists only")
}

func (r *fleetReader) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	switch l := list.(type) {
	case *v1alpha1.RevocationCanaryList:
		l.Items = r.canaries
	case *v1alpha1.CorpusList:
		l.Items = r.corpora
	case *v1alpha1.CanaryRunList, *v1alpha1.EvalSuiteList:
	default:
		return fmt.Errorf("fleetReader: unexpected list %T", list)
	}
	return nil
}

// startFleet resets every ragcanary vector, records n canaries and returns
// the gatherer of a scrape: controller-runtime's registry, which the
// manager serves, and the object collector over the fleet's objects.
func startFleet(n int) (prometheus.Gatherer, []fleetMember) {
	for _, c := range all {
		c.(interface{ Reset() }).Reset()
	}
	reader := &fleetReader{}
	for i := range fleetCorpora {
		c := corpus(fmt.Sprintf("target-%02d", i), 30*time.Second)
		c.Namespace = "bench"
		reader.corpora = append(reader.corpora, *c)
	}
	members := make([]fleetMember, n)
	for i := range n {
		members[i] = fleetMemberOf(i)
		members[i].record()
		reader.canaries = append(reader.canaries, members[i].object(scrapeTime.Add(-10*time.Minute)))
	}
	derived := prometheus.NewRegistry()
	derived.MustRegister(NewObjectCollector(reader, clocktesting.NewFakePassiveClock(scrapeTime)))
	return prometheus.Gatherers{crmetrics.Registry, derived}, members
}

// scrape gathers g and encodes it in the text format, as the metrics
// endpoint answers a scrape; it returns the body's size, the number of
// series (sample lines; a histogram has one per bucket plus _sum and _count)
// and how many of them are ragcanary's.
func scrape(tb testing.TB, g prometheus.Gatherer, buf *bytes.Buffer) (size, series, own int) {
	tb.Helper()
	families, err := g.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	buf.Reset()
	enc := expfmt.NewEncoder(buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			tb.Fatal(err)
		}
	}
	for _, line := range bytes.Split(buf.Bytes(), []byte("\n")) {
		if len(line) > 0 && line[0] != '#' {
			series++
			if bytes.HasPrefix(line, []byte(namespace+"_")) {
				own++
			}
		}
	}
	return buf.Len(), series, own
}

// BenchmarkScrape10000Canaries: one scrape of a manager running 10,000
// canaries in the fleet mix. It reports the series of a scrape (every
// sample line, the Go runtime's and controller-runtime's included), the
// ragcanary series per canary and the bytes of one scrape in the text
// format; ns/op is one scrape's gather and encoding.
func BenchmarkScrape10000Canaries(b *testing.B) {
	const n = 10000
	g, _ := startFleet(n)
	b.Cleanup(func() {
		for _, c := range all {
			c.(interface{ Reset() }).Reset()
		}
	})
	var buf bytes.Buffer
	size, series, own := scrape(b, g, &buf)
	b.ResetTimer()
	for b.Loop() {
		size, series, own = scrape(b, g, &buf)
	}
	b.ReportMetric(float64(series), "series")
	b.ReportMetric(float64(own)/n, "series/canary")
	b.ReportMetric(float64(size), "bytes/scrape")
	b.ReportMetric(float64(size)/(1<<20), "MiB/scrape")
}
