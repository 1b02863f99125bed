// Package metrics defines ragcanary's Prometheus metrics and registers them
// with controller-runtime's registry, so they are served on the manager's
// metrics endpoint.
//
// Labels are limited to namespace, canary, corpus, surface, role, outcome,
// verdict, and a canary's method and revoked_in (enums): never run names, document IDs, tokens or error text, so series
// stay bounded and nothing secret reaches a scrape.
//
// Counters and histograms are pushed as events happen; Forget deletes a
// canary's when the canary is deleted. What a canary costs in series is
// bounded and documented in docs/observability.md ("Series per canary");
// TestSeriesPerCanary holds the code to it. Gauges that restate an object's
// spec or status are built from the objects at scrape time by
// ObjectCollector (collector.go), so they survive a restart and vanish with
// their object.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

const namespace = "ragcanary"

// Label names.
const (
	LabelNamespace = "namespace"
	LabelCanary    = "canary"
	LabelCorpus    = "corpus"
	LabelSurface   = "surface"
	LabelVerdict   = "verdict"
	// LabelRole is "persona" for the probed persona and "control" for control personas.
	LabelRole = "role"
	// LabelOutcome is present, absent or error.
	LabelOutcome = "outcome"
	// LabelMethod is a canary's revocation method (the API's enum).
	LabelMethod = "method"
	// LabelRevokedIn is where its revocation is made, when not the target:
	// permissions, directory or issuer (v1alpha1.RevokedIn).
	LabelRevokedIn = "revoked_in"
)

// Roles of a probing persona.
const (
	RolePersona = "persona"
	RoleControl = "control"
)

// LatencyBuckets span 1 s to 24 h, roughly doubling: fast syncs resolve in
// seconds, published re-sync defaults are tens of minutes to hours.
var LatencyBuckets = []float64{1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 28800, 43200, 86400}

// probeBuckets span 5 ms to 60 s for single probe durations and scheduling lag.
var probeBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

var (
	runLabels     = []string{LabelNamespace, LabelCanary, LabelCorpus}
	surfaceLabels = []string{LabelNamespace, LabelCanary, LabelCorpus, LabelSurface}
	// Histograms describe the target and the operator, not one canary: a
	// histogram per canary is 21 series (18 buckets, +Inf, _sum, _count),
	// so per canary they were three quarters of a 10,000-canary scrape
	// (BenchmarkScrape10000Canaries) and told nothing the corpus's do not;
	// the canary's own figures are in its status and the derived
	// last-run gauges.
	corpusLabels        = []string{LabelNamespace, LabelCorpus}
	corpusSurfaceLabels = []string{LabelNamespace, LabelCorpus, LabelSurface}
)

// The metrics. They are exported for tests that read values back; code
// records through the functions below.
var (
	TimeToVisibility = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "time_to_visibility_seconds",
		Help:    "Time from the share request to the first probe that saw the canary token, per corpus.",
		Buckets: LatencyBuckets,
	}, corpusLabels)
	TimeToExclusion = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "time_to_exclusion_seconds",
		Help:    "Upper bound of time from revocation to confirmed exclusion on the search surface, per corpus.",
		Buckets: LatencyBuckets,
	}, corpusLabels)
	CacheInvalidation = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "cache_invalidation_seconds",
		Help:    "Upper bound of time from revocation to confirmed exclusion on the answer surface, per corpus.",
		Buckets: LatencyBuckets,
	}, corpusLabels)
	LiveExposure = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "live_exposure_seconds",
		Help: "Seconds a revoked canary token has still been visible in the active run; absent when no run of the canary is probing past revocation.",
	}, surfaceLabels)
	RunsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "runs_total",
		Help: "Finished canary runs by verdict; a verdict's series appears with the canary's first run of that verdict.",
	}, []string{LabelNamespace, LabelCanary, LabelCorpus, LabelVerdict})
	IsolationViolationsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "isolation_violations_total",
		Help: "Permission leaks: control-persona probes that saw a canary token (kind=\"canary\") and suite executions that disclosed forbidden evidence (kind=\"suite\").",
	}, []string{LabelNamespace, LabelKind, LabelCanary, LabelSuite, LabelCorpus})
	ReappearancesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "reappearances_total",
		Help: "Positive probes that followed a negative one after revocation: a replica or cache serving revoked content, per corpus and surface.",
	}, corpusSurfaceLabels)
	// Probes are counted twice: per corpus with the full breakdown, and
	// per canary by outcome only while the canary's run probes. Per canary
	// by surface, role and outcome, kept between runs, they were a third
	// of a 10,000-canary scrape (BenchmarkScrape10000Canaries) counting
	// nothing between runs.
	ProbesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "probes_total",
		Help: "Probes by corpus, surface, probing role and outcome (present, absent, error).",
	}, []string{LabelNamespace, LabelCorpus, LabelSurface, LabelRole, LabelOutcome})
	CanaryProbesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "canary_probes_total",
		Help: "Probes of the canary's run in progress by outcome (present, absent, error), every surface and role; absent between runs: deleted when the run finishes.",
	}, []string{LabelNamespace, LabelCanary, LabelCorpus, LabelOutcome})
	ProbeDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "probe_duration_seconds",
		Help:    "Duration of one probe of the probed persona, including rate-limit waits inside the driver's retries, per corpus and surface.",
		Buckets: probeBuckets,
	}, corpusSurfaceLabels)
	ProbeSchedulingLag = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "probe_scheduling_lag_seconds",
		Help:    "Delay between a probe's due time and its start, including rate-limit waits, per corpus.",
		Buckets: probeBuckets,
	}, corpusLabels)
)

// all lists every vector for registration and Forget.
var all = []interface {
	prometheus.Collector
	DeletePartialMatch(prometheus.Labels) int
}{
	TimeToVisibility, TimeToExclusion, CacheInvalidation,
	LiveExposure, RunsTotal, IsolationViolationsTotal, ReappearancesTotal, ProbesTotal, CanaryProbesTotal,
	ProbeDuration, ProbeSchedulingLag,
}

func init() {
	for _, c := range all {
		crmetrics.Registry.MustRegister(c)
	}
}

// Run identifies the series of one canary. Canary is empty for a run
// created by hand rather than by a RevocationCanary.
type Run struct {
	Namespace string
	Canary    string
	Corpus    string
}

// RunOf labels a run's series by its canary: the controlling
// RevocationCanary, else the canary label, else empty for a run made by
// hand. Never the run name: that would be one series per run.
func RunOf(run *v1alpha1.CanaryRun) Run {
	canary := run.Labels[v1alpha1.LabelCanary]
	for _, ref := range run.OwnerReferences {
		if ref.Controller != nil && *ref.Controller && ref.Kind == "RevocationCanary" {
			canary = ref.Name
		}
	}
	return Run{Namespace: run.Namespace, Canary: canary, Corpus: run.Spec.CorpusRef.Name}
}

func (r Run) labels() prometheus.Labels {
	return prometheus.Labels{LabelNamespace: r.Namespace, LabelCanary: r.Canary, LabelCorpus: r.Corpus}
}

// corpusLabels label the run's per-corpus series.
func (r Run) corpusLabels() prometheus.Labels {
	return prometheus.Labels{LabelNamespace: r.Namespace, LabelCorpus: r.Corpus}
}

// corpusSurface labels the run's per-corpus series of a surface.
func (r Run) corpusSurface(surface string) prometheus.Labels {
	l := r.corpusLabels()
	l[LabelSurface] = surface
	return l
}

func (r Run) withSurface(surface string) prometheus.Labels {
	l := r.labels()
	l[LabelSurface] = surface
	return l
}

// Forget deletes every series of a canary. Call it when the RevocationCanary
// is deleted so its series do not linger.
func Forget(namespace, canary string) {
	match := prometheus.Labels{LabelNamespace: namespace, LabelCanary: canary}
	for _, c := range all {
		c.DeletePartialMatch(match)
	}
}

// ObserveProbe records one probe's outcome and duration. Probe loops use
// a ProbeSeries instead, which looks the series up once.
func ObserveProbe(r Run, surface, role, outcome string, d time.Duration) {
	NewProbeSeries(r).ObserveProbe(surface, role, outcome, d)
}

// ObserveSchedulingLag records how late a probe round started.
func ObserveSchedulingLag(r Run, lag time.Duration) {
	NewProbeSeries(r).ObserveLag(lag)
}

// AddIsolationViolations counts control-persona sightings.
func AddIsolationViolations(r Run, n int) {
	if n > 0 {
		IsolationViolationsTotal.With(r.isolationLabels()).Add(float64(n))
	}
}

// isolationLabels labels a canary's isolation violations; the suite label
// is empty, as the canary label is on a suite's.
func (r Run) isolationLabels() prometheus.Labels {
	return prometheus.Labels{LabelNamespace: r.Namespace, LabelKind: KindCanary, LabelCanary: r.Canary, LabelSuite: "", LabelCorpus: r.Corpus}
}

// AddReappearance counts one reappearance on a surface of the run's corpus.
func AddReappearance(r Run, surface string) {
	ReappearancesTotal.With(r.corpusSurface(surface)).Inc()
}

// SetLiveExposure sets how long the revoked token has been visible on a surface.
func SetLiveExposure(r Run, surface string, d time.Duration) {
	LiveExposure.With(r.withSurface(surface)).Set(max(d, 0).Seconds())
}

// ClearLiveExposure deletes a surface's live exposure when the run stops
// probing: nothing is exposed any more, and a series per idle canary and
// surface would cost every scrape a sample that can only say 0.
func ClearLiveExposure(r Run, surface string) {
	LiveExposure.Delete(r.withSurface(surface))
}

// SurfaceResult is one surface's final bounds; nil means "not established".
type SurfaceResult struct {
	Surface string
	Lower   *time.Duration
	Upper   *time.Duration
	// Content marks a content-freshness run: the bounds are then the
	// surface's time until it served only the new content.
	Content bool
}

// Completion is what a finished run reports.
type Completion struct {
	Verdict string
	// TimeToVisibility is nil when the token never became visible.
	TimeToVisibility *time.Duration
	Surfaces         []SurfaceResult
	Finished         time.Time
}

// Surface names as the API spells them, repeated here to keep this package
// free of the API types.
const (
	surfaceSearch       = "Search"
	surfaceAnswer       = "Answer"
	surfaceConversation = "Conversation"
)

// RecordCompletion records a finished run: the verdict count and the
// histograms of time-to-visibility and of upper bounds. Live exposure and
// the canary's probe counts go (forgetRunProbes).
// The last-run gauges are not set here: ObjectCollector builds them from
// the canary's status.
//
// The verdict's series is created by this first increment, not at zero
// beforehand: pre-creating every verdict was six series per canary, most
// of which never count. Queries see the first run through the new-series
// guard of docs/observability.md ("Counters created by their first event").
func RecordCompletion(r Run, c Completion) {
	l := r.labels()
	l[LabelVerdict] = c.Verdict
	RunsTotal.With(l).Inc()
	forgetRunProbes(r)
	if c.TimeToVisibility != nil {
		TimeToVisibility.With(r.corpusLabels()).Observe(c.TimeToVisibility.Seconds())
	}
	for _, s := range c.Surfaces {
		recordSurface(r, s)
	}
}

func recordSurface(r Run, s SurfaceResult) {
	ClearLiveExposure(r, s.Surface)
	recordTail(r, s)
	if s.Upper == nil || s.Content {
		return
	}
	switch s.Surface {
	case surfaceSearch:
		TimeToExclusion.With(r.corpusLabels()).Observe(s.Upper.Seconds())
	case surfaceAnswer:
		CacheInvalidation.With(r.corpusLabels()).Observe(s.Upper.Seconds())
	}
}
