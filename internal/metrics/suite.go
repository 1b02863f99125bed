package metrics

import (
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ragcanary/ragcanary/internal/scoring"
)

// Label names of the suite metrics, in addition to LabelNamespace and
// LabelCorpus.
const (
	LabelSuite   = "suite"
	LabelPersona = "persona"
	// LabelResult is "passed" or "failed".
	LabelResult = "result"
	// LabelKind tells canary and suite series of a shared family apart.
	LabelKind = "kind"
	// LabelStatus is an expected status of the correct-abstention rate:
	// not_found, not_applicable, clarify or conflict (four values).
	LabelStatus = "status"
)

// Values of LabelKind.
const (
	KindCanary = "canary"
	KindSuite  = "suite"
)

// Suite run results.
const (
	ResultPassed = "passed"
	ResultFailed = "failed"
)

var (
	suiteLabels   = []string{LabelNamespace, LabelSuite, LabelCorpus}
	personaLabels = []string{LabelNamespace, LabelSuite, LabelCorpus, LabelPersona}
)

// Suite metrics. Per-persona gauges hold the latest finished run's value and
// exist only while the value is defined: an undefined ratio (zero
// denominator) deletes the series rather than reporting 0 or 1. The
// per-persona families come from the scoring engine's table of counts and
// rates (scoring.Figures): one series of SuiteCases per count, one family
// ragcanary_suite_<rate>_ratio per rate and mean, and the families of their
// own that some counts name.
var (
	// SuiteCases has LabelOutcome set to a count of the table: an outcome
	// (supported, disclosures, …), an expected action's total (answerable,
	// required_block) or a flag (affected_answers, invalid_citation_cases).
	SuiteCases = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "suite_cases",
		Help: "Executions per persona in the suite's last finished run, one series per count of the scoring table (label outcome: an outcome, answerable, required_block, affected_answers, invalid_citation_cases), 0 included.",
	}, append(slices.Clone(personaLabels), LabelOutcome))
	// suiteRates are the rate and mean families by figure name.
	suiteRates = rateFamilies()
	// suiteCountGauges and suiteCountTotals are the families of a count's
	// own (scoring.Figure Gauge and Total) by figure name.
	suiteCountGauges, suiteCountTotals = countFamilies()
	SuiteCorrectAbstention             = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "suite_correct_abstention_ratio",
		Help: "Per expected status (not_found, not_applicable, clarify, conflict): cases declared with it / cases expecting it, per persona in the suite's last finished run; absent when undefined.",
	}, append(slices.Clone(personaLabels), LabelStatus))
	SuiteRunsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "suite_runs_total",
		Help: "Finished suite runs by result (passed, failed).",
	}, []string{LabelNamespace, LabelSuite, LabelCorpus, LabelResult})
	SuiteRunDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "suite_run_duration_seconds",
		Help:    "Time from a suite run's start to its completion, passed or failed.",
		Buckets: SuiteDurationBuckets,
	}, suiteLabels)
)

// RateFamily is the metric name of a rate or mean of the scoring table.
func RateFamily(figure string) string { return namespace + "_suite_" + figure + "_ratio" }

func rateFamilies() map[string]*prometheus.GaugeVec {
	out := map[string]*prometheus.GaugeVec{}
	for _, f := range scoring.Figures {
		if f.Kind == scoring.KindCount {
			continue
		}
		out[f.Name] = prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: RateFamily(f.Name),
			Help: f.Doc + " per persona in the suite's last finished run; absent when undefined.",
		}, personaLabels)
	}
	return out
}

func countFamilies() (gauges map[string]*prometheus.GaugeVec, totals map[string]*prometheus.CounterVec) {
	gauges, totals = map[string]*prometheus.GaugeVec{}, map[string]*prometheus.CounterVec{}
	for _, f := range scoring.Figures {
		if f.Gauge != "" {
			gauges[f.Name] = prometheus.NewGaugeVec(prometheus.GaugeOpts{
				Namespace: namespace, Name: f.Gauge,
				Help: f.Doc + ", per persona in the suite's last finished run, 0 included (the " + f.Name + " series of ragcanary_suite_cases).",
			}, personaLabels)
		}
		if f.Total != "" {
			totals[f.Name] = prometheus.NewCounterVec(prometheus.CounterOpts{
				Namespace: namespace, Name: f.Total,
				Help: f.Doc + ", per persona, summed over the suite's finished runs.",
			}, personaLabels)
		}
	}
	return gauges, totals
}

// SuiteDurationBuckets span 0.1 s to 1 h: a handful of cases against a local
// target finishes in well under a second, thousands of executions at a
// corpus's rate limit take minutes to an hour.
var SuiteDurationBuckets = []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600}

// deletable is a vector whose series ForgetSuite and a new run delete.
type deletable interface {
	prometheus.Collector
	DeletePartialMatch(prometheus.Labels) int
}

// personaGauges are the vectors holding the last run's per-persona values.
func personaGauges() []deletable {
	out := []deletable{SuiteCases, SuiteCorrectAbstention}
	for _, f := range scoring.Figures {
		if g, ok := suiteRates[f.Name]; ok {
			out = append(out, g)
		}
		if g, ok := suiteCountGauges[f.Name]; ok {
			out = append(out, g)
		}
	}
	return out
}

// suiteVecs are every suite vector, for registration and ForgetSuite.
func suiteVecs() []deletable {
	out := append(personaGauges(), SuiteRunsTotal, SuiteRunDuration)
	for _, f := range scoring.Figures {
		if c, ok := suiteCountTotals[f.Name]; ok {
			out = append(out, c)
		}
	}
	return out
}

func init() {
	for _, c := range suiteVecs() {
		crmetrics.Registry.MustRegister(c)
	}
}

// Suite identifies the series of one EvalSuite.
type Suite struct {
	Namespace string
	Suite     string
	Corpus    string
}

// isolationLabels labels a suite's disclosures in the shared isolation
// violations family.
func (s Suite) isolationLabels() prometheus.Labels {
	return prometheus.Labels{LabelNamespace: s.Namespace, LabelKind: KindSuite, LabelCanary: "", LabelSuite: s.Suite, LabelCorpus: s.Corpus}
}

func (s Suite) labels() prometheus.Labels {
	return prometheus.Labels{LabelNamespace: s.Namespace, LabelSuite: s.Suite, LabelCorpus: s.Corpus}
}

func (s Suite) withPersona(persona string) prometheus.Labels {
	l := s.labels()
	l[LabelPersona] = persona
	return l
}

// PersonaScores are one persona's statistics over all strata.
type PersonaScores struct {
	Persona string
	Stats   scoring.Stats
}

// SuiteCompletion is what a finished suite run reports.
type SuiteCompletion struct {
	Passed   bool
	Personas []PersonaScores
	// Started is when the run started executing; zero when unknown, and
	// then no duration is observed.
	Started  time.Time
	Finished time.Time
}

// RecordSuiteCompletion records a finished run: its result, disclosures,
// the per-persona gauges and the run's duration; ObjectCollector builds the
// last verdict and completion time from the EvalSuite. Personas of an
// earlier run that this run did not score lose their gauges, so a dashboard
// never mixes two runs.
func RecordSuiteCompletion(s Suite, c SuiteCompletion) {
	result := ResultFailed
	if c.Passed {
		result = ResultPassed
	}
	l := s.labels()
	l[LabelResult] = result
	SuiteRunsTotal.With(l).Inc()
	disclosures := 0
	for _, p := range c.Personas {
		disclosures += max(p.Stats.AffectedAnswers, 0)
	}
	IsolationViolationsTotal.With(s.isolationLabels()).Add(float64(disclosures))
	// A start after the completion (clock skew across an operator restart)
	// is no duration at all, not a negative one.
	if !c.Started.IsZero() && !c.Finished.Before(c.Started) {
		SuiteRunDuration.With(s.labels()).Observe(c.Finished.Sub(c.Started).Seconds())
	}
	for _, g := range personaGauges() {
		g.DeletePartialMatch(s.labels())
	}
	for _, p := range c.Personas {
		recordPersona(s, p)
	}
}

// recordPersona sets every figure of the table for one persona: a count is
// defined for every persona the run scored, 0 included; a rate or mean only
// when its denominator is not zero.
func recordPersona(s Suite, p PersonaScores) {
	l := s.withPersona(p.Persona)
	st := &p.Stats
	for _, f := range scoring.Figures {
		if f.Kind != scoring.KindCount {
			setDefined(suiteRates[f.Name], l, f.Ratio(st).Value)
			continue
		}
		n := float64(max(f.Count(st), 0))
		cl := s.withPersona(p.Persona)
		cl[LabelOutcome] = f.Name
		SuiteCases.With(cl).Set(n)
		if g, ok := suiteCountGauges[f.Name]; ok {
			g.With(l).Set(n)
		}
		// Add touches the counter, so a persona with none still has a 0
		// series that increase() and alerts can see.
		if c, ok := suiteCountTotals[f.Name]; ok {
			c.With(l).Add(n)
		}
	}
	for _, status := range scoring.StatusActions {
		sl := s.withPersona(p.Persona)
		sl[LabelStatus] = string(status)
		var v *float64
		if r, ok := st.CorrectAbstention[status]; ok {
			v = r.Value
		}
		setDefined(SuiteCorrectAbstention, sl, v)
	}
}

// setDefined sets the gauge, or deletes its series when v is undefined.
func setDefined(g *prometheus.GaugeVec, l prometheus.Labels, v *float64) {
	if v == nil {
		g.Delete(l)
		return
	}
	g.With(l).Set(*v)
}

// ForgetSuite deletes every series of a suite. Call it when the EvalSuite is
// deleted so its series do not linger.
func ForgetSuite(namespace, suite string) {
	match := prometheus.Labels{LabelNamespace: namespace, LabelSuite: suite}
	for _, c := range suiteVecs() {
		c.DeletePartialMatch(match)
	}
	IsolationViolationsTotal.DeletePartialMatch(match)
}

func boolToFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
