package cli

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/measure"
	"github.com/ragcanary/ragcanary/internal/schedule"
)

// History is every kept run of one canary, oldest first, and the spread
// of their measurements.
type History struct {
	Namespace string       `json:"namespace"`
	Canary    string       `json:"canary"`
	Corpus    string       `json:"corpus"`
	Runs      []HistoryRun `json:"runs"`
	// Upper is the spread of the upper bounds per surface; Visibility that
	// of time-to-visibility.
	Upper      []Spread `json:"upperBounds"`
	Visibility Spread   `json:"timeToVisibility"`
}

// HistoryRun is one kept run.
type HistoryRun struct {
	Name      string     `json:"name"`
	Phase     string     `json:"phase"`
	Verdict   string     `json:"verdict"`
	StartTime *time.Time `json:"startTime"`
	// CompletionTime is unset while the run is in flight.
	CompletionTime          *time.Time   `json:"completionTime"`
	TimeToVisibilitySeconds *float64     `json:"timeToVisibilitySeconds"`
	Surfaces                []RunSurface `json:"surfaces"`
	IsolationViolations     int32        `json:"isolationViolations"`

	timeToVisibility *metav1.Duration
}

// RunSurface is one surface of a kept run.
type RunSurface struct {
	SurfaceBounds
	Reappearances int32                `json:"reappearances"`
	Probes        v1alpha1.ProbeCounts `json:"probes"`
}

// Spread summarises one quantity over the finished runs that established
// it. p50 and p95 are nearest-rank percentiles. Runs without a value (no
// upper bound: still visible, or errors) are counted in Missing, never
// folded in as a number.
type Spread struct {
	Surface    string   `json:"surface,omitempty"`
	N          int      `json:"n"`
	Missing    int      `json:"missing"`
	P50Seconds *float64 `json:"p50Seconds"`
	P95Seconds *float64 `json:"p95Seconds"`
	MaxSeconds *float64 `json:"maxSeconds"`
	// Sparkline has one character per finished run, oldest first: the
	// upper bound's height on a scale from 0 to the largest, or "·" for a
	// run that established none.
	Sparkline string `json:"sparkline"`

	p50, p95, max time.Duration
}

// LoadHistory reads the runs the canary controls in namespace ns.
func LoadHistory(ctx context.Context, c client.Reader, ns, name string) (*History, error) {
	var canary v1alpha1.RevocationCanary
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &canary); err != nil {
		return nil, fmt.Errorf("reading revocationcanary %s/%s: %w", ns, name, err)
	}
	var corpus *v1alpha1.Corpus
	var co v1alpha1.Corpus
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: canary.Spec.CorpusRef.Name}, &co); err == nil {
		corpus = &co
	} else if client.IgnoreNotFound(err) != nil {
		return nil, fmt.Errorf("reading corpus %s/%s: %w", ns, canary.Spec.CorpusRef.Name, err)
	}
	var runs v1alpha1.CanaryRunList
	if err := c.List(ctx, &runs, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelCanary: schedule.LabelValue(name)}); err != nil {
		return nil, fmt.Errorf("listing canaryruns: %w", err)
	}
	h := &History{Namespace: ns, Canary: name, Corpus: canary.Spec.CorpusRef.Name}
	var kept []*v1alpha1.CanaryRun
	for i := range runs.Items {
		// The label only narrows the query; the controller reference decides.
		if metav1.IsControlledBy(&runs.Items[i], &canary) {
			kept = append(kept, &runs.Items[i])
		}
	}
	sort.SliceStable(kept, func(i, j int) bool {
		ti, tj := startedAt(kept[i]), startedAt(kept[j])
		if !ti.Equal(tj) {
			return ti.Before(tj)
		}
		return kept[i].Name < kept[j].Name
	})
	for _, run := range kept {
		h.Runs = append(h.Runs, historyRun(run, corpus))
	}
	h.Upper, h.Visibility = spreads(h.Runs)
	h.Runs, h.Upper = orEmpty(h.Runs), orEmpty(h.Upper)
	return h, nil
}

// startedAt orders runs: status.startTime, else creation.
func startedAt(run *v1alpha1.CanaryRun) time.Time {
	if run.Status.StartTime != nil {
		return run.Status.StartTime.Time
	}
	return run.CreationTimestamp.Time
}

func historyRun(run *v1alpha1.CanaryRun, corpus *v1alpha1.Corpus) HistoryRun {
	hr := HistoryRun{
		Name: run.Name, Phase: string(run.Status.Phase), Verdict: string(run.Status.Verdict),
		StartTime: timeOf(run.Status.StartTime), TimeToVisibilitySeconds: secondsOf(run.Status.TimeToVisibility),
		timeToVisibility:    run.Status.TimeToVisibility,
		IsolationViolations: run.Status.IsolationViolations,
	}
	if finished(run) {
		hr.CompletionTime = timeOf(run.Status.CompletionTime)
	}
	for _, s := range probedSurfaces(&run.Spec.CanarySpec) {
		m := v1alpha1.SurfaceMeasurement{Surface: s}
		for _, got := range run.Status.Surfaces {
			if got.Surface == s {
				m = got
			}
		}
		b := m.Bounds
		if run.Spec.Revocation.Method == v1alpha1.RevokeUpdateContent {
			// Judged by its freshness, the later of new visible and old gone.
			b = measure.Freshness(&m)
		}
		hr.Surfaces = append(hr.Surfaces, RunSurface{
			SurfaceBounds: surfaceBounds(s, b, RunSLO(run, corpus, &m)),
			Reappearances: m.Reappearances, Probes: m.Probes,
		})
	}
	return hr
}

// spreads computes, over finished runs, the upper bounds per surface and
// time-to-visibility.
func spreads(runs []HistoryRun) ([]Spread, Spread) {
	var upper []Spread
	for _, s := range surfaceOrder {
		var values []*metav1.Duration
		for _, r := range runs {
			if r.CompletionTime == nil {
				continue
			}
			for _, rs := range r.Surfaces {
				if rs.Surface == string(s) {
					values = append(values, upperOf(rs.bounds))
				}
			}
		}
		if len(values) > 0 {
			sp := spread(values)
			sp.Surface = string(s)
			upper = append(upper, sp)
		}
	}
	var ttv []*metav1.Duration
	for _, r := range runs {
		if r.CompletionTime != nil {
			ttv = append(ttv, r.timeToVisibility)
		}
	}
	return upper, spread(ttv)
}

func upperOf(b *v1alpha1.ExclusionBounds) *metav1.Duration {
	if b == nil {
		return nil
	}
	return b.Upper
}

// spread summarises values in run order; nil entries are missing. It
// works on the exact durations; JSON gets them as seconds.
func spread(values []*metav1.Duration) Spread {
	var sp Spread
	var known []time.Duration
	for _, v := range values {
		if v == nil {
			sp.Missing++
			continue
		}
		known = append(known, v.Duration)
	}
	sp.N = len(known)
	sp.Sparkline = Sparkline(values)
	if len(known) == 0 {
		return sp
	}
	slices.Sort(known)
	sp.p50, sp.p95, sp.max = nearestRank(known, 0.50), nearestRank(known, 0.95), known[len(known)-1]
	sp.P50Seconds, sp.P95Seconds, sp.MaxSeconds = ptr(sp.p50.Seconds()), ptr(sp.p95.Seconds()), ptr(sp.max.Seconds())
	return sp
}

// nearestRank is the smallest value with at least p of the values at or
// below it; sorted must be sorted and non-empty.
func nearestRank(sorted []time.Duration, p float64) time.Duration {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

func ptr(f float64) *float64 { return &f }

// sparkBlocks are the eight heights of a sparkline, lowest first.
var sparkBlocks = []rune("▁▂▃▄▅▆▇█")

// Sparkline draws values on a scale from 0 to the largest: the largest is
// █, anything above zero at least ▁. A nil value is "·": nothing to draw.
func Sparkline(values []*metav1.Duration) string {
	var top time.Duration
	for _, v := range values {
		if v != nil && v.Duration > top {
			top = v.Duration
		}
	}
	var b strings.Builder
	for _, v := range values {
		switch {
		case v == nil:
			b.WriteRune('·')
		case top <= 0:
			b.WriteRune(sparkBlocks[0])
		default:
			i := int(math.Ceil(float64(v.Duration)/float64(top)*float64(len(sparkBlocks)))) - 1
			b.WriteRune(sparkBlocks[min(max(i, 0), len(sparkBlocks)-1)])
		}
	}
	return b.String()
}
