package cli

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/measure"
)

// recentWindow is how far back "runs by verdict" counts.
const recentWindow = 24 * time.Hour

// Fleet is everything `status` shows, read once. Durations are exact
// seconds; the text view rounds them.
type Fleet struct {
	// Namespace listed; empty for all namespaces.
	Namespace string          `json:"namespace"`
	Now       time.Time       `json:"now"`
	Corpora   []CorpusState   `json:"corpora"`
	Canaries  []CanaryState   `json:"canaries"`
	InFlight  []RunInFlight   `json:"inFlight"`
	Recent    []RecentVerdict `json:"runsLast24h"`
	Suites    []SuiteState    `json:"suites"`
	// Problems are the breaches and violations that make status exit 1.
	Problems []string `json:"problems"`
}

// CorpusState is one Corpus's readiness.
type CorpusState struct {
	Namespace           string   `json:"namespace"`
	Name                string   `json:"name"`
	Ready               string   `json:"ready"`
	Reason              string   `json:"reason"`
	Message             string   `json:"message,omitempty"`
	ExclusionSLOSeconds *float64 `json:"exclusionSLOSeconds"`
}

// CanaryState is one RevocationCanary and its last finished run.
type CanaryState struct {
	Namespace string     `json:"namespace"`
	Name      string     `json:"name"`
	Corpus    string     `json:"corpus"`
	Persona   string     `json:"persona"`
	Ready     string     `json:"ready"`
	Reason    string     `json:"reason"`
	Suspended bool       `json:"suspended"`
	NextRun   *time.Time `json:"nextRun"`
	LastRun   *LastRun   `json:"lastRun"`
}

// LastRun is a canary's latest finished run.
type LastRun struct {
	Name                    string          `json:"name"`
	Verdict                 string          `json:"verdict"`
	CompletionTime          *time.Time      `json:"completionTime"`
	TimeToVisibilitySeconds *float64        `json:"timeToVisibilitySeconds"`
	Surfaces                []SurfaceBounds `json:"surfaces"`
	// InFlight is the run's post-revocation delivery; absent when the
	// canary does not measure the InFlight surface.
	InFlight *InFlightResult `json:"inFlight,omitempty"`
}

// InFlightResult is what streams in flight across a revocation delivered
// after its request.
type InFlightResult struct {
	// DeliverySeconds is null when not established.
	DeliverySeconds         *float64 `json:"deliverySeconds"`
	CanaryBytesAfterRequest int64    `json:"canaryBytesAfterRequest"`
	Outcomes                string   `json:"outcomes"`
	SLOSeconds              float64  `json:"sloSeconds"`
	delivery                string
	deliveryAt              *metav1.Duration
	slo                     time.Duration
}

// SurfaceBounds is one surface's time-to-exclusion interval and its SLO.
type SurfaceBounds struct {
	Surface      string   `json:"surface"`
	LowerSeconds *float64 `json:"lowerSeconds"`
	UpperSeconds *float64 `json:"upperSeconds"`
	SLOSeconds   float64  `json:"sloSeconds"`

	bounds *v1alpha1.ExclusionBounds
	slo    time.Duration
}

// RunInFlight is an unfinished CanaryRun.
type RunInFlight struct {
	Namespace string     `json:"namespace"`
	Name      string     `json:"name"`
	Canary    string     `json:"canary"`
	Phase     string     `json:"phase"`
	StartTime *time.Time `json:"startTime"`
	// Exposure is, per surface not yet confirmed excluded, how long the
	// revoked canary has been visible since the source acknowledged the
	// revocation, as of now and the run's last status write.
	Exposure            []Exposure `json:"liveExposure"`
	IsolationViolations int32      `json:"isolationViolations"`
	// Sentinel is a sentinel run's watch; absent for other runs.
	Sentinel *SentinelView `json:"sentinel,omitempty"`
}

// Exposure is the live exposure of one surface.
type Exposure struct {
	Surface    string  `json:"surface"`
	Seconds    float64 `json:"seconds"`
	SLOSeconds float64 `json:"sloSeconds"`
}

// RecentVerdict counts one canary's kept runs finished in the last 24 h.
type RecentVerdict struct {
	Namespace string `json:"namespace"`
	// Canary is empty for runs created by hand.
	Canary    string         `json:"canary"`
	ByVerdict map[string]int `json:"byVerdict"`
}

// SuiteState is one EvalSuite and its last finished run.
type SuiteState struct {
	Namespace string        `json:"namespace"`
	Name      string        `json:"name"`
	Corpus    string        `json:"corpus"`
	Ready     string        `json:"ready"`
	Reason    string        `json:"reason"`
	LastRun   *SuiteLastRun `json:"lastRun"`
}

// SuiteLastRun is a suite's latest finished run. Gates come from the
// SuiteRun itself and are absent (RunKept false) once it was deleted.
type SuiteLastRun struct {
	Name           string                `json:"name"`
	Passed         bool                  `json:"passed"`
	Disclosures    int32                 `json:"disclosures"`
	CompletionTime *time.Time            `json:"completionTime"`
	RunKept        bool                  `json:"runKept"`
	Gates          []v1alpha1.GateResult `json:"gates"`
}

// Breached reports whether status should exit non-zero.
func (f *Fleet) Breached() bool { return len(f.Problems) > 0 }

// LoadFleet reads the fleet in namespace ns ("" for all namespaces).
func LoadFleet(ctx context.Context, c client.Reader, ns string, now time.Time) (*Fleet, error) {
	var (
		corpora  v1alpha1.CorpusList
		canaries v1alpha1.RevocationCanaryList
		runs     v1alpha1.CanaryRunList
		suites   v1alpha1.EvalSuiteList
		suiteRun v1alpha1.SuiteRunList
	)
	for _, l := range []client.ObjectList{&corpora, &canaries, &runs, &suites, &suiteRun} {
		if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("listing %T: %w", l, err)
		}
	}
	f := &Fleet{Namespace: ns, Now: now}
	byCorpus := map[string]*v1alpha1.Corpus{}
	for i := range corpora.Items {
		co := &corpora.Items[i]
		byCorpus[co.Namespace+"/"+co.Name] = co
		f.Corpora = append(f.Corpora, corpusState(co))
	}
	for i := range canaries.Items {
		ca := &canaries.Items[i]
		f.Canaries = append(f.Canaries, canaryState(ca, byCorpus[ca.Namespace+"/"+ca.Spec.CorpusRef.Name]))
	}
	f.InFlight, f.Recent = runStates(runs.Items, byCorpus, now)
	keptSuiteRuns := map[string]*v1alpha1.SuiteRun{}
	for i := range suiteRun.Items {
		keptSuiteRuns[suiteRun.Items[i].Namespace+"/"+suiteRun.Items[i].Name] = &suiteRun.Items[i]
	}
	for i := range suites.Items {
		f.Suites = append(f.Suites, suiteState(&suites.Items[i], keptSuiteRuns))
	}
	sortFleet(f)
	f.Problems = problems(f)
	// Empty lists are [] in JSON, not null: "none" is known.
	f.Corpora, f.Canaries, f.InFlight = orEmpty(f.Corpora), orEmpty(f.Canaries), orEmpty(f.InFlight)
	f.Recent, f.Suites, f.Problems = orEmpty(f.Recent), orEmpty(f.Suites), orEmpty(f.Problems)
	return f, nil
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func readyOf(conds []metav1.Condition) (status, reason string) {
	c := meta.FindStatusCondition(conds, v1alpha1.ConditionReady)
	if c == nil {
		return "Unknown", ""
	}
	return string(c.Status), c.Reason
}

func corpusState(co *v1alpha1.Corpus) CorpusState {
	s := CorpusState{Namespace: co.Namespace, Name: co.Name, ExclusionSLOSeconds: secondsOf(co.Spec.Freshness.ExclusionSLO)}
	s.Ready, s.Reason = readyOf(co.Status.Conditions)
	if c := meta.FindStatusCondition(co.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		s.Message = c.Message
	}
	return s
}

// canaryState is the canary and its last finished run, as its summary
// keeps it (the run itself may be gone).
func canaryState(ca *v1alpha1.RevocationCanary, corpus *v1alpha1.Corpus) CanaryState {
	s := CanaryState{
		Namespace: ca.Namespace, Name: ca.Name,
		Corpus: ca.Spec.CorpusRef.Name, Persona: ca.Spec.PersonaRef.Name,
		Suspended: ca.Spec.Suspend != nil && *ca.Spec.Suspend,
		NextRun:   timeOf(ca.Status.NextScheduleTime),
	}
	s.Ready, s.Reason = readyOf(ca.Status.Conditions)
	if last := ca.Status.LastRun; last != nil {
		s.LastRun = &LastRun{
			Name: last.Name, Verdict: string(last.Verdict),
			CompletionTime:          timeOf(last.CompletionTime),
			TimeToVisibilitySeconds: secondsOf(last.TimeToVisibility),
			Surfaces:                summarySurfaces(&ca.Spec.CanarySpec, corpus, last),
			InFlight:                inFlightResult(&ca.Spec.CanarySpec, corpus, last.InFlight),
		}
	}
	return s
}

// inFlightResult is the summary's in-flight measurement against the SLO it
// was judged by (the current rule when the summary does not say); nil when
// the run read no streams.
func inFlightResult(spec *v1alpha1.CanarySpec, corpus *v1alpha1.Corpus, m *v1alpha1.InFlightSummary) *InFlightResult {
	if m == nil {
		return nil
	}
	slo := SurfaceSLO(spec, corpus, v1alpha1.SurfaceInFlight)
	if m.SLO != nil {
		slo = m.SLO.Duration
	}
	return &InFlightResult{DeliverySeconds: secondsOf(m.PostRevocationDelivery), CanaryBytesAfterRequest: m.CanaryBytesAfterRequest,
		Outcomes: m.Outcomes, SLOSeconds: slo.Seconds(), delivery: dash(m.Delivery), deliveryAt: m.PostRevocationDelivery, slo: slo}
}

// surfaceOrder is the order surfaces are shown in, as the printer columns
// show them.
var surfaceOrder = []v1alpha1.Surface{v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer, v1alpha1.SurfaceConversation, v1alpha1.SurfaceStream}

// summarySurfaces are the bounds of the surfaces the canary probes, plus
// any the summary holds beyond them (the spec may have changed since), each
// against the SLO the run was judged by (the current spec's and corpus's
// when the summary does not say).
func summarySurfaces(spec *v1alpha1.CanarySpec, corpus *v1alpha1.Corpus, last *v1alpha1.RunSummary) []SurfaceBounds {
	held := map[v1alpha1.Surface]*v1alpha1.SurfaceSummary{}
	order := slices.Clone(surfaceOrder)
	for i := range last.Surfaces {
		m := &last.Surfaces[i]
		held[m.Surface] = m
		if !slices.Contains(order, m.Surface) {
			order = append(order, m.Surface)
		}
	}
	var out []SurfaceBounds
	for _, s := range order {
		m := held[s]
		if m == nil && !slices.Contains(probedSurfaces(spec), s) {
			continue
		}
		slo := SurfaceSLO(spec, corpus, s)
		var b *v1alpha1.ExclusionBounds
		if m != nil {
			// A content-freshness canary is judged by each surface's
			// freshness (new content visible and old gone), not by the old
			// content alone.
			b = m.Bounds
			if spec.Revocation.Method == v1alpha1.RevokeUpdateContent {
				b = m.ContentFreshness
			}
			if m.SLO != nil {
				slo = m.SLO.Duration
			}
		}
		out = append(out, surfaceBounds(s, b, slo))
	}
	return out
}

func surfaceBounds(s v1alpha1.Surface, b *v1alpha1.ExclusionBounds, slo time.Duration) SurfaceBounds {
	sb := SurfaceBounds{Surface: string(s), SLOSeconds: slo.Seconds(), bounds: b, slo: slo}
	if b != nil {
		sb.LowerSeconds, sb.UpperSeconds = secondsOf(b.Lower), secondsOf(b.Upper)
	}
	return sb
}

// probedSurfaces are the spec's surfaces, Search when none are set (the
// CRD default).
func probedSurfaces(spec *v1alpha1.CanarySpec) []v1alpha1.Surface {
	return v1alpha1.Probed(spec.Probing.Surfaces)
}

// runStates splits the runs into those in flight and verdict counts of
// those finished in the last 24 hours.
func runStates(runs []v1alpha1.CanaryRun, corpora map[string]*v1alpha1.Corpus, now time.Time) ([]RunInFlight, []RecentVerdict) {
	var inFlight []RunInFlight
	recent := map[[2]string]*RecentVerdict{}
	for i := range runs {
		run := &runs[i]
		if !finished(run) {
			inFlight = append(inFlight, runInFlight(run, corpora[run.Namespace+"/"+run.Spec.CorpusRef.Name], now))
			continue
		}
		if run.Status.CompletionTime == nil || now.Sub(run.Status.CompletionTime.Time) > recentWindow {
			continue
		}
		key := [2]string{run.Namespace, canaryOf(run)}
		rv := recent[key]
		if rv == nil {
			rv = &RecentVerdict{Namespace: key[0], Canary: key[1], ByVerdict: map[string]int{}}
			recent[key] = rv
		}
		rv.ByVerdict[string(run.Status.Verdict)]++
	}
	out := make([]RecentVerdict, 0, len(recent))
	for _, rv := range recent {
		out = append(out, *rv)
	}
	return inFlight, out
}

func finished(run *v1alpha1.CanaryRun) bool {
	return run.Status.Phase == v1alpha1.PhaseSucceeded || run.Status.Phase == v1alpha1.PhaseFailed
}

// canaryOf is the RevocationCanary that controls the run, else its canary
// label, else empty for a run created by hand.
func canaryOf(run *v1alpha1.CanaryRun) string {
	if ref := metav1.GetControllerOf(run); ref != nil && ref.Kind == "RevocationCanary" {
		return ref.Name
	}
	return run.Labels[v1alpha1.LabelCanary]
}

func runInFlight(run *v1alpha1.CanaryRun, corpus *v1alpha1.Corpus, now time.Time) RunInFlight {
	r := RunInFlight{
		Namespace: run.Namespace, Name: run.Name, Canary: canaryOf(run),
		Phase: string(run.Status.Phase), StartTime: timeOf(run.Status.StartTime),
		IsolationViolations: run.Status.IsolationViolations,
		Sentinel:            sentinelView(run, now),
	}
	if r.Phase == "" {
		r.Phase = string(v1alpha1.PhasePending)
	}
	if run.Status.RevokeAcknowledgedTime == nil {
		return r
	}
	ack := run.Status.RevokeAcknowledgedTime.Time
	for _, s := range probedSurfaces(&run.Spec.CanarySpec) {
		// A surface status has no measurement for yet is not excluded.
		m := v1alpha1.SurfaceMeasurement{Surface: s}
		for _, got := range run.Status.Surfaces {
			if got.Surface == s {
				m = got
			}
		}
		if d := measure.LiveExposure(&m, ack, now); d > 0 {
			r.Exposure = append(r.Exposure, Exposure{Surface: string(s), Seconds: d.Seconds(),
				SLOSeconds: SurfaceSLO(&run.Spec.CanarySpec, corpus, s).Seconds()})
		}
	}
	return r
}

func suiteState(s *v1alpha1.EvalSuite, kept map[string]*v1alpha1.SuiteRun) SuiteState {
	st := SuiteState{Namespace: s.Namespace, Name: s.Name, Corpus: s.Spec.CorpusRef.Name}
	st.Ready, st.Reason = readyOf(s.Status.Conditions)
	if last := s.Status.LastRun; last != nil {
		st.LastRun = &SuiteLastRun{Name: last.Name, Passed: last.Passed, Disclosures: last.Disclosures,
			CompletionTime: timeOf(last.CompletionTime)}
		if run := kept[s.Namespace+"/"+last.Name]; run != nil {
			st.LastRun.RunKept = true
			st.LastRun.Gates = run.Status.Gates
		}
	}
	return st
}

// problems names what is breached or violated: a canary whose last run
// breached its SLO, never excluded the canary or leaked it to a control
// persona; a run in flight that already leaked; a suite whose last run
// failed a gate. Runs that could not measure (Inconclusive, SetupFailed)
// are shown but are not breaches: nothing was observed to be wrong.
func problems(f *Fleet) []string {
	var out []string
	for _, c := range f.Canaries {
		if c.LastRun == nil {
			continue
		}
		switch v1alpha1.Verdict(c.LastRun.Verdict) {
		case v1alpha1.VerdictSLOBreached, v1alpha1.VerdictNotExcluded, v1alpha1.VerdictIsolationViolation:
			out = append(out, fmt.Sprintf("canary %s/%s: last run %s is %s", c.Namespace, c.Name, c.LastRun.Name, c.LastRun.Verdict))
		}
	}
	for _, r := range f.InFlight {
		if r.IsolationViolations > 0 {
			out = append(out, fmt.Sprintf("run %s/%s: a control persona saw the canary %d time(s)", r.Namespace, r.Name, r.IsolationViolations))
		}
	}
	for _, s := range f.Suites {
		if s.LastRun != nil && !s.LastRun.Passed {
			out = append(out, fmt.Sprintf("suite %s/%s: last run %s failed its gates (disclosures: %d)", s.Namespace, s.Name, s.LastRun.Name, s.LastRun.Disclosures))
		}
	}
	return out
}

func sortFleet(f *Fleet) {
	by := func(ns1, n1, ns2, n2 string) int {
		if c := strings.Compare(ns1, ns2); c != 0 {
			return c
		}
		return strings.Compare(n1, n2)
	}
	sort.SliceStable(f.Corpora, func(i, j int) bool {
		return by(f.Corpora[i].Namespace, f.Corpora[i].Name, f.Corpora[j].Namespace, f.Corpora[j].Name) < 0
	})
	sort.SliceStable(f.Canaries, func(i, j int) bool {
		return by(f.Canaries[i].Namespace, f.Canaries[i].Name, f.Canaries[j].Namespace, f.Canaries[j].Name) < 0
	})
	sort.SliceStable(f.InFlight, func(i, j int) bool {
		return by(f.InFlight[i].Namespace, f.InFlight[i].Name, f.InFlight[j].Namespace, f.InFlight[j].Name) < 0
	})
	sort.SliceStable(f.Recent, func(i, j int) bool {
		return by(f.Recent[i].Namespace, f.Recent[i].Canary, f.Recent[j].Namespace, f.Recent[j].Canary) < 0
	})
	sort.SliceStable(f.Suites, func(i, j int) bool {
		return by(f.Suites[i].Namespace, f.Suites[i].Name, f.Suites[j].Namespace, f.Suites[j].Name) < 0
	})
}

func secondsOf(d *metav1.Duration) *float64 {
	if d == nil {
		return nil
	}
	s := d.Seconds()
	return &s
}

func timeOf(t *metav1.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
