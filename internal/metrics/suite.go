package metrics

import (
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
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
// denominator) deletes the series rather than reporting 0 or 1.
var (
	SuiteUtility = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "suite_utility_ratio",
		Help: "Supported answers / answerable cases per persona in the suite's last finished run; absent when undefined.",
	}, personaLabels)
	SuiteDisclosureRate = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "suite_disclosure_rate_ratio",
		Help: "Disclosures / required-block cases per persona in the suite's last finished run; absent when undefined.",
	}, personaLabels)
	SuiteAffectedAnswers = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "suite_affected_answers",
		Help: "Executions of any expected action that exposed forbidden evidence, a forbidden marker or a forbidden document's text, per persona in the suite's last finished run: the count reported beside the disclosure rate.",
	}, personaLabels)
	SuiteFalseBlockRate = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "suite_false_block_rate_ratio",
		Help: "False blocks / answerable cases per persona in the suite's last finished run; absent when undefined.",
	}, personaLabels)
	SuiteRecall = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "suite_recall_at_k_ratio",
		Help: "Mean recall@k per persona in the suite's last finished run; absent when undefined.",
	}, personaLabels)
	SuiteMRR = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "suite_mrr_at_k_ratio",
		Help: "Mean reciprocal rank at k per persona in the suite's last finished run; absent when undefined.",
	}, personaLabels)
	SuiteFailedToAbstainRate = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "suite_failed_to_abstain_rate_ratio",
		Help: "Required-block cases answered without a leak / required-block cases per persona in the suite's last finished run; absent when undefined.",
	}, personaLabels)
	SuiteStaleRate = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "suite_stale_rate_ratio",
		Help: "Answers supported only by superseded evidence / answerable cases per persona in the suite's last finished run; absent when undefined.",
	}, personaLabels)
	SuiteMistakenNotFoundRate = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "suite_mistaken_not_found_rate_ratio",
		Help: "Answerable cases declared not found / answerable cases per persona in the suite's last finished run; absent when undefined.",
	}, personaLabels)
	SuiteCitationPrecision = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "suite_citation_precision_ratio",
		Help: "Cited IDs that are eligible and supporting / all cited IDs per persona in the suite's last finished run; absent when undefined.",
	}, personaLabels)
	SuiteCitationValidity = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "suite_citation_validity_ratio",
		Help: "Cited IDs inside retrieved ∩ allowed / all cited IDs per persona in the suite's last finished run; absent when undefined.",
	}, personaLabels)
	SuiteCorrectAbstention = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "suite_correct_abstention_ratio",
		Help: "Per expected status (not_found, not_applicable, clarify, conflict): cases declared with it / cases expecting it, per persona in the suite's last finished run; absent when undefined.",
	}, append(slices.Clone(personaLabels), LabelStatus))
	SuiteFailedToAbstainTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "suite_failed_to_abstain_total",
		Help: "Suite executions where policy required a refusal and the persona got an answer.",
	}, personaLabels)
	SuiteStaleTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "suite_stale_total",
		Help: "Suite executions answered with support only from superseded evidence.",
	}, personaLabels)
	SuiteDisclosuresTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "suite_disclosures_total",
		Help: "Suite executions that exposed forbidden evidence (returned or cited outside the persona's allowed set), a forbidden marker or a forbidden document's text.",
	}, personaLabels)
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

// SuiteDurationBuckets span 0.1 s to 1 h: a handful of cases against a local
// target finishes in well under a second, thousands of executions at a
// corpus's rate limit take minutes to an hour.
var SuiteDurationBuckets = []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600}

// suiteVecs lists every suite vector for registration and ForgetSuite.
var suiteVecs = []interface {
	prometheus.Collector
	DeletePartialMatch(prometheus.Labels) int
}{
	SuiteUtility, SuiteDisclosureRate, SuiteAffectedAnswers, SuiteFalseBlockRate, SuiteRecall, SuiteMRR,
	SuiteFailedToAbstainRate, SuiteStaleRate, SuiteMistakenNotFoundRate, SuiteCitationPrecision,
	SuiteCitationValidity, SuiteCorrectAbstention, SuiteFailedToAbstainTotal, SuiteStaleTotal,
	SuiteDisclosuresTotal, SuiteRunsTotal, SuiteRunDuration,
}

func init() {
	for _, c := range suiteVecs {
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

// PersonaScores are one persona's results over all strata; nil is undefined.
type PersonaScores struct {
	Persona                                 string
	Utility, DisclosureRate, FalseBlockRate *float64
	Recall, MRR                             *float64
	FailedToAbstainRate, StaleRate          *float64
	MistakenNotFoundRate                    *float64
	CitationPrecision, CitationValidity     *float64
	// CorrectAbstention is keyed by expected status; a missing or nil
	// entry is undefined.
	CorrectAbstention map[string]*float64
	// AffectedAnswers counts the run's executions, of any expected action,
	// that exposed anything forbidden.
	AffectedAnswers int
	// FailedToAbstain and Stale count the run's executions with those outcomes.
	FailedToAbstain, Stale int
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
		disclosures += max(p.AffectedAnswers, 0)
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

func personaGauges() []*prometheus.GaugeVec {
	return []*prometheus.GaugeVec{SuiteUtility, SuiteDisclosureRate, SuiteAffectedAnswers, SuiteFalseBlockRate, SuiteRecall, SuiteMRR,
		SuiteFailedToAbstainRate, SuiteStaleRate, SuiteMistakenNotFoundRate, SuiteCitationPrecision,
		SuiteCitationValidity, SuiteCorrectAbstention}
}

func recordPersona(s Suite, p PersonaScores) {
	l := s.withPersona(p.Persona)
	setDefined(SuiteUtility, l, p.Utility)
	setDefined(SuiteDisclosureRate, l, p.DisclosureRate)
	// A count is defined for every persona the run scored, 0 included.
	SuiteAffectedAnswers.With(l).Set(float64(max(p.AffectedAnswers, 0)))
	setDefined(SuiteFalseBlockRate, l, p.FalseBlockRate)
	setDefined(SuiteRecall, l, p.Recall)
	setDefined(SuiteMRR, l, p.MRR)
	setDefined(SuiteFailedToAbstainRate, l, p.FailedToAbstainRate)
	setDefined(SuiteStaleRate, l, p.StaleRate)
	setDefined(SuiteMistakenNotFoundRate, l, p.MistakenNotFoundRate)
	setDefined(SuiteCitationPrecision, l, p.CitationPrecision)
	setDefined(SuiteCitationValidity, l, p.CitationValidity)
	for _, status := range CorrectAbstentionStatuses {
		sl := s.withPersona(p.Persona)
		sl[LabelStatus] = status
		setDefined(SuiteCorrectAbstention, sl, p.CorrectAbstention[status])
	}
	// Touch the counters so a persona with none still has a 0 series that
	// increase() and alerts can see.
	SuiteDisclosuresTotal.With(l).Add(float64(max(p.AffectedAnswers, 0)))
	SuiteFailedToAbstainTotal.With(l).Add(float64(max(p.FailedToAbstain, 0)))
	SuiteStaleTotal.With(l).Add(float64(max(p.Stale, 0)))
}

// CorrectAbstentionStatuses are the values of LabelStatus.
var CorrectAbstentionStatuses = []string{"not_found", "not_applicable", "clarify", "conflict"}

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
	for _, c := range suiteVecs {
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
