package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/scoring"
)

// conditionPassed is the SuiteRun condition holding the verdict and its
// reason (v1alpha1.ConditionPassed).
const conditionPassed = "Passed"

// annotationCompletedAt is the precise completion time a SuiteRun carries
// (v1alpha1.AnnotationCompletedAt); status holds it only to the second.
const annotationCompletedAt = "ragcanary.dev/completed-at"

// SuiteInput is a SuiteRun and the objects it names, as read. A nil Suite
// or Corpus means it was not found; ReportData is nil when the run names no
// report ConfigMap, it was not found (ReportFound says which) or the reader
// may not read it (ReportUnreadable says why).
type SuiteInput struct {
	Run              *v1alpha1.SuiteRun
	Suite            *v1alpha1.EvalSuite
	Corpus           *v1alpha1.Corpus
	ReportData       map[string]string
	ReportFound      bool
	ReportUnreadable string
}

// SuiteEvidence is what a SuiteRun scored and which gates decided it.
type SuiteEvidence struct {
	Suite string `json:"suite"`
	Phase string `json:"phase"`
	// Passed is null until the run is decided.
	Passed         *bool      `json:"passed"`
	Reason         string     `json:"reason"`
	Message        string     `json:"message"`
	StartTime      *time.Time `json:"startTime"`
	CompletionTime *time.Time `json:"completionTime"`
	// Duration is completion minus start, from the precise completion time
	// when the run recorded one.
	Duration    *Seconds `json:"durationSeconds"`
	Executions  *int32   `json:"executions"`
	Disclosures *int32   `json:"disclosures"`
	ProbeErrors *int32   `json:"probeErrors"`
	// K is the rank cutoff the stored report applied; null without it.
	K         *int                            `json:"k"`
	SuiteSpec Referenced[SuiteConfig]         `json:"evalSuite"`
	Corpus    Referenced[v1alpha1.CorpusSpec] `json:"corpus"`
	Secrets   []SecretName                    `json:"secrets"`
	Personas  []PersonaRow                    `json:"personas"`
	Strata    []StratumRows                   `json:"strata"`
	Gates     []GateRow                       `json:"gates"`
	// DecidingGates are the gates that failed the run, or every gate of a
	// passed run.
	DecidingGates []string `json:"decidingGates"`
	// FailingCases are every failing execution the stored report lists;
	// FailingCasesSource says where they come from.
	FailingCases       []CaseRow `json:"failingCases"`
	FailingCasesSource string    `json:"failingCasesSource"`
	ReportConfigMap    string    `json:"reportConfigMap"`
	// Truncated is the report's own note when it was cut to fit its ConfigMap.
	Truncated  string      `json:"truncated"`
	Timeline   []Event     `json:"timeline"`
	Conditions []Condition `json:"conditions"`
}

// SuiteConfig is the part of an EvalSuite spec a report shows: how it was
// scored and gated, not the cases' text.
type SuiteConfig struct {
	CorpusRef   v1alpha1.LocalObjectReference `json:"corpusRef"`
	K           int32                         `json:"k"`
	Parallelism int32                         `json:"parallelism"`
	Gates       v1alpha1.Gates                `json:"gates"`
	InlineCases int                           `json:"inlineCases"`
	CaseSources []v1alpha1.CaseSource         `json:"caseSources"`
}

// Ratio is a metric with its numerator and denominator as the run stored
// them; Value is null when the denominator is zero.
type Ratio struct {
	Numerator   string  `json:"numerator"`
	Denominator int32   `json:"denominator"`
	Value       *string `json:"value"`
}

// PersonaRow is one persona's metrics over all strata or within one: the
// scoring table's rows with a report column (scoring.Figures), under their
// ReportKey in JSON, in the table's order.
type PersonaRow struct {
	Persona string
	Cells   []Cell
}

// Cell is one figure of a persona row. A count has Count, a rate or a mean
// Ratio; neither is set when the run did not record the figure.
type Cell struct {
	Figure scoring.Figure
	Count  *int32
	Ratio  *Ratio
}

// MarshalJSON writes {"persona": …, <ReportKey>: count or ratio, …}; an
// unrecorded figure is null.
func (p PersonaRow) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	b.WriteString(`{"persona":`)
	if err := enc.Encode(p.Persona); err != nil {
		return nil, err
	}
	for _, c := range p.Cells {
		var v any = c.Ratio
		if c.Figure.Kind == scoring.KindCount {
			v = c.Count
		}
		fmt.Fprintf(&b, ",%q:", c.Figure.ReportKey)
		if err := enc.Encode(v); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// ratio is the rate or mean named name; the undefined Ratio when the row
// lacks it.
func (p PersonaRow) ratio(name string) Ratio {
	for _, c := range p.Cells {
		if c.Figure.Name == name && c.Ratio != nil {
			return *c.Ratio
		}
	}
	return Ratio{}
}

// StratumRows are the persona rows of one stratum.
type StratumRows struct {
	Stratum  string       `json:"stratum"`
	Personas []PersonaRow `json:"personas"`
}

// GateRow is one gate's verdict; Value is null when undefined.
type GateRow struct {
	Name      string  `json:"name"`
	Passed    bool    `json:"passed"`
	Value     *string `json:"value"`
	Threshold string  `json:"threshold"`
}

// CaseRow is one failing execution. The per-case metrics are null when
// undefined for the case or when only status listed it.
type CaseRow struct {
	CaseID  string `json:"caseID"`
	Persona string `json:"persona"`
	Outcome string `json:"outcome"`
	// Disclosed is true when the execution exposed anything forbidden,
	// whatever its outcome.
	Disclosed      bool     `json:"disclosed"`
	ForbiddenIDs   []string `json:"forbiddenIDs"`
	RecallAtK      *float64 `json:"recallAtK"`
	ReciprocalRank *float64 `json:"reciprocalRank"`
	Duplicates     int      `json:"duplicates"`
	// Error is the sanitized reason an execution got no reply.
	Error string `json:"error,omitempty"`
}

// BuildSuite assembles a SuiteRun's evidence; now is when it was read. A
// report ConfigMap that cannot be decoded is an error, never an empty list.
func BuildSuite(in SuiteInput, now time.Time) (Evidence, error) {
	run := in.Run
	st := run.Status
	created := run.CreationTimestamp.UTC()
	ev := &SuiteEvidence{
		Suite:          run.Spec.SuiteRef.Name,
		Phase:          string(st.Phase),
		StartTime:      timeOf(st.StartTime),
		CompletionTime: timeOf(st.CompletionTime),
		Executions:     st.Executions,
		Disclosures:    st.Disclosures,
		ProbeErrors:    st.ProbeErrors,
		SuiteSpec:      referSuite(run.Spec.SuiteRef.Name, in.Suite, created),
		Personas:       []PersonaRow{},
		Strata:         []StratumRows{},
		Gates:          []GateRow{},
		DecidingGates:  []string{},
		Conditions:     conditions(st.Conditions),
	}
	ev.Passed, ev.Reason, ev.Message = passed(run)
	corpusName := ""
	if in.Suite != nil {
		corpusName = in.Suite.Spec.CorpusRef.Name
	}
	ev.Corpus = referCorpus(corpusName, in.Corpus, created)
	ev.Secrets = append([]SecretName{}, corpusSecrets(ev.Corpus.Spec)...)
	personaTables(ev, st.Personas)
	gateTable(ev, st.Gates)
	completed := preciseCompletion(run)
	if ev.StartTime != nil && completed != nil {
		d := Seconds(completed.Sub(*ev.StartTime))
		ev.Duration = &d
	}
	ev.Timeline = suiteTimeline(run, completed)
	if err := failingCases(ev, in); err != nil {
		return Evidence{}, err
	}
	return Evidence{Kind: KindSuiteRun, Namespace: run.Namespace, Name: run.Name, UID: string(run.UID),
		GeneratedAt: now.UTC(), Suite: ev}, nil
}

func referSuite(name string, s *v1alpha1.EvalSuite, created time.Time) Referenced[SuiteConfig] {
	if s == nil {
		return reference[SuiteConfig](name, nil, nil, created)
	}
	cfg := SuiteConfig{CorpusRef: s.Spec.CorpusRef, K: s.Spec.K, Parallelism: s.Spec.Parallelism,
		Gates: s.Spec.Gates, InlineCases: len(s.Spec.Cases),
		CaseSources: append([]v1alpha1.CaseSource{}, s.Spec.CaseSources...)}
	return reference(name, &s.ObjectMeta, &cfg, created)
}

// passed reads the verdict from the Passed condition; an unknown or absent
// condition leaves it undecided.
func passed(run *v1alpha1.SuiteRun) (*bool, string, string) {
	for _, c := range run.Status.Conditions {
		if c.Type != conditionPassed {
			continue
		}
		var p *bool
		switch c.Status {
		case "True":
			p = ptrTo(true)
		case "False":
			p = ptrTo(false)
		}
		return p, c.Reason, c.Message
	}
	return nil, "", ""
}

func ptrTo[T any](v T) *T { return &v }

func ratio(r v1alpha1.Ratio) Ratio {
	return Ratio{Numerator: r.Numerator, Denominator: r.Denominator, Value: r.Value}
}

// personaRow reads the report's figures from a status row by name.
func personaRow(p v1alpha1.PersonaResult) PersonaRow {
	row := PersonaRow{Persona: p.Persona}
	for _, f := range scoring.Figures {
		if f.Report == "" {
			continue
		}
		c := Cell{Figure: f}
		if n, ok := p.Count(f.Name); ok && f.Kind == scoring.KindCount {
			c.Count = &n
		}
		if r, ok := p.Rate(f.Name); ok && f.Kind != scoring.KindCount {
			c.Ratio = ptrTo(ratio(r))
		}
		row.Cells = append(row.Cells, c)
	}
	return row
}

// personaTables splits status.personas into the all-strata rows and one
// table per stratum, keeping the order status has (sorted by the run).
func personaTables(ev *SuiteEvidence, rows []v1alpha1.PersonaResult) {
	index := map[string]int{}
	for _, p := range rows {
		if p.Stratum == "" {
			ev.Personas = append(ev.Personas, personaRow(p))
			continue
		}
		i, ok := index[p.Stratum]
		if !ok {
			i = len(ev.Strata)
			index[p.Stratum] = i
			ev.Strata = append(ev.Strata, StratumRows{Stratum: p.Stratum})
		}
		ev.Strata[i].Personas = append(ev.Strata[i].Personas, personaRow(p))
	}
}

func gateTable(ev *SuiteEvidence, gates []v1alpha1.GateResult) {
	var failed, all []string
	for _, g := range gates {
		row := GateRow{Name: g.Name, Passed: g.Passed, Threshold: g.Threshold}
		if g.Value != "" {
			row.Value = ptrTo(g.Value)
		}
		ev.Gates = append(ev.Gates, row)
		all = append(all, g.Name)
		if !g.Passed {
			failed = append(failed, g.Name)
		}
	}
	switch {
	case len(failed) > 0:
		ev.DecidingGates = failed
	case ev.Passed != nil && *ev.Passed:
		ev.DecidingGates = append(ev.DecidingGates, all...)
	}
}

// preciseCompletion is the completed-at annotation when it agrees with
// status.completionTime to the second, else status's own time.
func preciseCompletion(run *v1alpha1.SuiteRun) *time.Time {
	coarse := timeOf(run.Status.CompletionTime)
	if coarse == nil {
		return nil
	}
	precise, err := time.Parse(time.RFC3339Nano, run.Annotations[annotationCompletedAt])
	if err != nil || !precise.Truncate(time.Second).Equal(coarse.Truncate(time.Second)) {
		return coarse
	}
	precise = precise.UTC()
	return &precise
}

func suiteTimeline(run *v1alpha1.SuiteRun, completed *time.Time) []Event {
	tl := timeline{origin: timeOf(run.Status.StartTime)}
	created := run.CreationTimestamp.UTC()
	tl.add("metadata.creationTimestamp", "Run created", &created)
	tl.add("status.startTime", "Run started", timeOf(run.Status.StartTime))
	tl.add("status.completionTime", "Run completed (to the second)", timeOf(run.Status.CompletionTime))
	if completed != nil && !completed.Equal(run.Status.CompletionTime.UTC()) {
		tl.add("metadata.annotations["+annotationCompletedAt+"]", "Run completed (precise)", completed)
	}
	return tl.sorted()
}

// failingCases lists every failing execution from the report ConfigMap,
// or, without it, the bounded list status keeps, saying which.
func failingCases(ev *SuiteEvidence, in SuiteInput) error {
	ev.FailingCases = []CaseRow{}
	ref := in.Run.Status.ReportConfigMapRef
	if ref != nil {
		ev.ReportConfigMap = ref.Name
	}
	if in.ReportData == nil {
		ev.FailingCasesSource = "status.failingCases (at most 20)"
		switch {
		case ref == nil:
			ev.FailingCasesSource += "; the run names no report ConfigMap"
		case in.ReportUnreadable != "":
			ev.FailingCasesSource += "; report ConfigMap " + ref.Name + " could not be read: " + in.ReportUnreadable
		case !in.ReportFound:
			ev.FailingCasesSource += "; report ConfigMap " + ref.Name + " not found"
		}
		for _, fc := range in.Run.Status.FailingCases {
			ev.FailingCases = append(ev.FailingCases, CaseRow{CaseID: fc.CaseID, Persona: fc.Persona,
				Outcome: fc.Outcome, Disclosed: fc.Disclosed || len(fc.ForbiddenIDs) > 0, ForbiddenIDs: nonNil(fc.ForbiddenIDs)})
		}
		return nil
	}
	ev.FailingCasesSource = "report ConfigMap " + ev.ReportConfigMap
	ev.Truncated = in.ReportData[v1alpha1.ReportKeyTruncated]
	var rep scoring.Report
	if err := json.Unmarshal([]byte(in.ReportData[v1alpha1.ReportKeyReport]), &rep); err != nil {
		return fmt.Errorf("decoding %s of report ConfigMap %s: %w", v1alpha1.ReportKeyReport, ev.ReportConfigMap, err)
	}
	ev.K = ptrTo(rep.K)
	var errs []v1alpha1.ReportProbeError
	if raw, ok := in.ReportData[v1alpha1.ReportKeyProbeErrors]; ok {
		if err := json.Unmarshal([]byte(raw), &errs); err != nil {
			return fmt.Errorf("decoding %s of report ConfigMap %s: %w", v1alpha1.ReportKeyProbeErrors, ev.ReportConfigMap, err)
		}
	}
	ev.FailingCases = orderFailing(rep.Cases, errs)
	return nil
}

// orderFailing puts executions that failed a zero-tolerance gate (anything
// forbidden exposed, an answer where policy requires a refusal, no reply)
// first, then the others, each in case order, as status.failingCases does.
func orderFailing(cases []scoring.CaseScore, errs []v1alpha1.ReportProbeError) []CaseRow {
	gate, other := []CaseRow{}, []CaseRow{}
	for _, s := range cases {
		if !s.Failing() {
			continue
		}
		row := CaseRow{CaseID: strings.TrimSuffix(s.ID, "/"+s.Persona), Persona: s.Persona,
			Outcome: string(s.Outcome), Disclosed: s.Leaked(), ForbiddenIDs: nonNil(s.ForbiddenIDs), RecallAtK: s.RecallAtK,
			ReciprocalRank: s.ReciprocalRank, Duplicates: s.DuplicateCount}
		if row.Disclosed || s.Outcome == scoring.OutcomeFailedToAbstain {
			gate = append(gate, row)
		} else {
			other = append(other, row)
		}
	}
	for _, e := range errs {
		gate = append(gate, CaseRow{CaseID: e.CaseID, Persona: e.Persona, Outcome: v1alpha1.OutcomeProbeError,
			ForbiddenIDs: []string{}, Error: e.Error})
	}
	return append(gate, other...)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
