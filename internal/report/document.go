package report

import (
	"fmt"
	"strings"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/scoring"
)

// document is what the Markdown and HTML formats both show, in order, so
// the two cannot disagree: sections of paragraphs, facts and tables. Only
// the charts are HTML's own (Markdown has the same numbers in tables).
type document struct {
	Title     string
	Generated string
	// Verdict is the headline; Tone picks its colour (good, bad, unknown).
	Verdict  string
	Tone     string
	Sections []section
}

type section struct {
	ID     string
	Title  string
	Blocks []block
}

// block is one of: a paragraph, a list of facts, a table, a chart.
type block struct {
	Para  string
	Facts []fact
	Table *table
	Chart chart
}

type fact struct{ Key, Value string }

type table struct {
	ID      string
	Caption string
	Header  []string
	Rows    [][]string
}

// chart draws itself as inline SVG.
type chart interface{ svg() string }

func para(format string, args ...any) block { return block{Para: fmt.Sprintf(format, args...)} }

func facts(f ...fact) block { return block{Facts: f} }

func tableBlock(t table) block { return block{Table: &t} }

// documentOf lays out the evidence of either kind.
func documentOf(ev Evidence) document {
	d := document{Generated: humanTime(ev.GeneratedAt)}
	switch {
	case ev.Canary != nil:
		d.Title = fmt.Sprintf("CanaryRun %s/%s", ev.Namespace, ev.Name)
		d.Verdict, d.Tone = verdictText(ev.Canary.Verdict), canaryTone(ev.Canary.Verdict)
		d.Sections = canarySections(ev.Canary)
	case ev.Suite != nil:
		d.Title = fmt.Sprintf("SuiteRun %s/%s", ev.Namespace, ev.Name)
		d.Verdict, d.Tone = passedText(ev.Suite.Passed), suiteTone(ev.Suite.Passed)
		d.Sections = suiteSections(ev.Suite)
	}
	return d
}

func canaryTone(v string) string {
	switch v {
	case "":
		return "unknown"
	case string(v1alpha1.VerdictSLOMet):
		return "good"
	}
	return "bad"
}

func suiteTone(p *bool) string {
	switch {
	case p == nil:
		return "unknown"
	case *p:
		return "good"
	}
	return "bad"
}

func canarySections(c *CanaryEvidence) []section {
	sections := baseCanarySections(c)
	if c.Sentinel != nil {
		sections = sentinelSections(sections, c.Sentinel)
	}
	if t, ok := freshnessTable(c.Surfaces); ok {
		// After the verdict: for a content-freshness run this is what it judged.
		fresh := section{ID: "freshness", Title: "Content freshness", Blocks: []block{
			para("A content-freshness run replaced the canary's body with a new payload instead of revoking access. Per surface, interval-censored like exclusion: the new content appeared after the start of the last probe that did not show it and no later than the end of the first that did; the old content's disappearance is the time to exclusion below. The surface is fresh once both happened: the later of the two, judged against the content-freshness SLO. Offsets are from the update request."),
			tableBlock(t),
		}}
		sections = append(sections[:1], append([]section{fresh}, sections[1:]...)...)
	}
	if s, ok := inFlightSection(c.InFlight); ok {
		// After the time to exclusion: what streams delivered past the request.
		at := min(2, len(sections))
		sections = append(sections[:at], append([]section{s}, sections[at:]...)...)
	}
	return sections
}

// freshnessTable is the content-freshness measurement per surface; ok is
// false for a run without one.
func freshnessTable(ss []SurfaceEvidence) (table, bool) {
	t := table{ID: "freshness-bounds", Caption: "Content freshness per surface",
		Header: []string{"Surface", "New content visible", "Old content gone", "Fresh (both)", "SLO", "Against the SLO", "SLO from"}}
	for _, s := range ss {
		if s.NewContent == nil {
			continue
		}
		n := s.NewContent
		t.Rows = append(t.Rows, []string{s.Surface, humanInterval(n.Lower, n.Upper), humanInterval(s.Lower, s.Upper),
			humanInterval(n.FreshnessLower, n.FreshnessUpper), humanSeconds(&s.SLO), againstText(s), s.SLOSource})
	}
	return t, len(t.Rows) > 0
}

func baseCanarySections(c *CanaryEvidence) []section {
	return []section{
		{ID: "verdict", Title: "Verdict and why", Blocks: []block{
			facts(fact{"Verdict", verdictText(c.Verdict)}, fact{"Phase", orNone(c.Phase)},
				fact{"Why", orNone(c.Message)}, fact{"Canary", orNone(c.Canary)}),
		}},
		{ID: "exclusion", Title: "Time to exclusion", Blocks: []block{
			para("Interval-censored: exclusion happened after the lower bound (last positive probe start − revocation acknowledged, floor 0) and no later than the upper bound (first negative probe end of the confirmed streak − revocation requested). Offsets are from the revocation request."),
			{Chart: exclusionChart{surfaces: c.Surfaces, ack: ackOffset(c.Timeline)}},
			tableBlock(boundsTable(c.Surfaces)),
		}},
		{ID: "probes", Title: "Probes by outcome", Blocks: []block{
			para("Probes after the revocation, per surface. An error, timeout or unparseable reply is never counted as an absence."),
			tableBlock(probesTable(c.Surfaces)),
		}},
		{ID: "visibility", Title: "Time to visibility", Blocks: []block{
			facts(fact{"Time to visibility", humanSeconds(c.TimeToVisibility)},
				fact{"Visibility SLO (corpus, as read now)", humanSeconds(c.VisibilitySLO)}),
		}},
		{ID: "isolation", Title: "Isolation", Blocks: isolationBlocks(c)},
		{ID: "timeline", Title: "Timeline", Blocks: []block{
			para("Every timestamp the run persisted, in time order."),
			tableBlock(timelineTable(c.Timeline, "Since revocation")),
		}},
		{ID: "measured", Title: "What was measured", Blocks: []block{
			para("The run's spec, frozen when it was created."),
			facts(measuredFacts(c)...),
		}},
		{ID: "corpus", Title: "Corpus", Blocks: corpusBlocks(c.Corpus)},
		{ID: "personas", Title: "Personas", Blocks: personaBlocks(c)},
		{ID: "secrets", Title: "Secrets referenced", Blocks: secretBlocks(c.Secrets)},
		{ID: "conditions", Title: "Conditions", Blocks: []block{tableBlock(conditionsTable(c.Conditions))}},
	}
}

// ackOffset is the revocation acknowledgement's offset from the request.
func ackOffset(tl []Event) *Seconds {
	for _, e := range tl {
		if e.Field == "status.revokeAcknowledgedTime" {
			return e.Offset
		}
	}
	return nil
}

func boundsTable(ss []SurfaceEvidence) table {
	t := table{ID: "bounds", Caption: "Time to exclusion per surface",
		Header: []string{"Surface", "Interval", "SLO", "Against the SLO", "SLO from", "Excluded"}}
	for _, s := range ss {
		t.Rows = append(t.Rows, []string{s.Surface, humanInterval(s.Lower, s.Upper),
			humanSeconds(&s.SLO), againstText(s), s.SLOSource, yesNo(s.Excluded)})
	}
	return t
}

func probesTable(ss []SurfaceEvidence) table {
	t := table{ID: "probe-counts", Caption: "Probe outcomes per surface",
		Header: []string{"Surface", "Positive", "Negative", "Errors", "Total", "Reappearances", "Negative streak", "Last reply"}}
	for _, s := range ss {
		p := s.Probes
		t.Rows = append(t.Rows, []string{s.Surface, fmt.Sprint(p.Positive), fmt.Sprint(p.Negative),
			fmt.Sprint(p.Errors), fmt.Sprint(p.Total), fmt.Sprint(s.Reappearances), fmt.Sprint(s.NegativeStreak),
			orNone(s.LastReply)})
	}
	return t
}

func isolationBlocks(c *CanaryEvidence) []block {
	out := []block{para("Isolation violations (control-persona probes that saw the canary): %d.", c.IsolationViolations)}
	if len(c.Controls) == 0 {
		return append(out, para("The run names no control personas, so it tested no isolation."))
	}
	t := table{ID: "controls", Caption: "Control personas",
		Header: []string{"Control persona", "Valid replies", "Errors", "Isolation tested"}}
	for _, ctl := range c.Controls {
		tested := "no: no probes recorded"
		if ctl.Answered != nil && *ctl.Answered > 0 {
			tested = "yes"
		} else if ctl.Answered != nil {
			tested = "no: no valid reply"
		}
		t.Rows = append(t.Rows, []string{ctl.Persona, humanCount(ctl.Answered), humanCount(ctl.Errors), tested})
	}
	return append(out, tableBlock(t))
}

func timelineTable(tl []Event, offsetHeader string) table {
	t := table{ID: "timeline-events", Caption: "Persisted timestamps",
		Header: []string{"When (UTC)", offsetHeader, "Event", "Field"}}
	for _, e := range tl {
		t.Rows = append(t.Rows, []string{humanTime(e.Time), humanOffset(e.Offset), e.Label, e.Field})
	}
	return t
}

func measuredFacts(c *CanaryEvidence) []fact {
	s := c.Spec
	var controls []string
	for _, r := range s.ControlPersonaRefs {
		controls = append(controls, r.Name)
	}
	var surfaces []string
	for _, x := range s.Probing.Surfaces {
		surfaces = append(surfaces, string(x))
	}
	method := orNone(string(s.Revocation.Method))
	if s.Revocation.Group != "" {
		method += " (group " + s.Revocation.Group + ")"
	}
	confirmations := none
	if s.Probing.Confirmations > 0 {
		confirmations = fmt.Sprint(s.Probing.Confirmations)
	}
	return []fact{
		{"Corpus", s.CorpusRef.Name},
		{"Persona", s.PersonaRef.Name},
		{"Control personas", listOrNone(controls)},
		{"Revocation method", method},
		{"Surfaces", listOrNone(surfaces)},
		{"Probe interval", durationVal(s.Probing.Interval)},
		{"Confirmations", confirmations},
		{"Visibility timeout", durationVal(s.Probing.VisibilityTimeout)},
		{"Exclusion timeout", durationVal(s.Probing.ExclusionTimeout)},
		{"Exclusion SLO override", durationPtr(s.ExclusionSLO)},
		{"Canary document ID", orNone(c.DocumentID)},
		{"Token hash", orNone(c.TokenHash)},
	}
}

func corpusBlocks(r Referenced[v1alpha1.CorpusSpec]) []block {
	out := []block{para("%s.", referencedNote("Corpus", r))}
	if r.Spec == nil {
		return out
	}
	s := r.Spec
	f := []fact{{"Driver", string(s.Driver.Type)}}
	if h := s.Driver.HTTP; h != nil {
		f = append(f, fact{"URL", h.URL})
	}
	if p := s.Driver.Postgres; p != nil {
		f = append(f, fact{"Schema", orNone(p.Schema)})
	}
	if r := s.Driver.REST; r != nil {
		f = append(f, fact{"URL", r.URL})
	}
	f = append(f,
		fact{"Call timeout", durationPtr(s.Driver.Timeout)},
		fact{"Exclusion SLO", durationPtr(s.Freshness.ExclusionSLO)},
		fact{"Cache invalidation SLO", durationPtr(s.Freshness.CacheInvalidationSLO)},
		fact{"Visibility SLO", durationPtr(s.Freshness.VisibilitySLO)},
		fact{"Rate limit", rateLimit(s.RateLimit)},
	)
	return append(out, facts(f...))
}

func rateLimit(r v1alpha1.RateLimit) string {
	rps, burst := "operator default", "operator default"
	if r.RequestsPerSecond > 0 {
		rps = fmt.Sprint(r.RequestsPerSecond)
	}
	if r.Burst > 0 {
		burst = fmt.Sprint(r.Burst)
	}
	return fmt.Sprintf("%s requests/s, burst %s", rps, burst)
}

func personaBlocks(c *CanaryEvidence) []block {
	t := table{ID: "persona-specs", Caption: "Personas as read now",
		Header: []string{"Role", "Persona", "Subject", "Tenant", "Groups", "As read"}}
	add := func(role string, r Referenced[v1alpha1.PersonaSpec]) {
		subject, tenant, groups := none, none, none
		if r.Spec != nil {
			subject, tenant, groups = r.Spec.Subject, orNone(r.Spec.Tenant), listOrNone(r.Spec.Groups)
		}
		t.Rows = append(t.Rows, []string{role, r.Name, subject, tenant, groups, referencedNote("Persona", r)})
	}
	add("measured", c.Persona)
	for _, ctl := range c.ControlPersonas {
		add("control", ctl)
	}
	return []block{tableBlock(t)}
}

func secretBlocks(ss []SecretName) []block {
	out := []block{para("Names of the Secrets the run and its references point at. Their values are never read into this report.")}
	if len(ss) == 0 {
		return out
	}
	t := table{ID: "secret-names", Caption: "Secrets (names only)", Header: []string{"Used for", "Secret", "Key"}}
	for _, s := range ss {
		t.Rows = append(t.Rows, []string{s.Use, s.Name, orNone(s.Key)})
	}
	return append(out, tableBlock(t))
}

func conditionsTable(cs []Condition) table {
	t := table{ID: "condition-list", Caption: "Status conditions",
		Header: []string{"Type", "Status", "Reason", "Message", "Since (UTC)"}}
	for _, c := range cs {
		t.Rows = append(t.Rows, []string{c.Type, c.Status, c.Reason, c.Message, humanTime(c.LastTransitionTime)})
	}
	return t
}

func suiteSections(s *SuiteEvidence) []section {
	decided := "no gate has decided the run yet"
	if len(s.DecidingGates) > 0 {
		if s.Passed != nil && *s.Passed {
			decided = "every gate passed: " + strings.Join(s.DecidingGates, ", ")
		} else {
			decided = "failed gates: " + strings.Join(s.DecidingGates, ", ")
		}
	}
	k := none
	if s.K != nil {
		k = fmt.Sprint(*s.K)
	}
	strata := []block{para("Each stratum's cases alone, per persona.")}
	if len(s.Strata) == 0 {
		strata = []block{para("The run scored no cases with a stratum.")}
	}
	for _, st := range s.Strata {
		strata = append(strata, tableBlock(personaTable("stratum-"+st.Stratum, "Stratum "+st.Stratum, st.Personas)))
	}
	return []section{
		{ID: "verdict", Title: "Verdict and why", Blocks: []block{
			facts(fact{"Verdict", passedText(s.Passed)}, fact{"Phase", orNone(s.Phase)},
				fact{"Reason", orNone(s.Reason)}, fact{"Why", orNone(s.Message)},
				fact{"Decided by", decided}, fact{"Suite", s.Suite}),
		}},
		{ID: "counts", Title: "Executions", Blocks: []block{
			facts(fact{"Executions (case × persona)", humanCount(s.Executions)},
				fact{"Affected answers (executions of any action that exposed anything forbidden)", humanCount(s.Disclosures)},
				fact{"Probe errors (never scored)", humanCount(s.ProbeErrors)},
				fact{"Rank cutoff k", k},
				fact{"Duration", humanSeconds(s.Duration)}),
		}},
		{ID: "gates", Title: "Gates", Blocks: []block{tableBlock(gatesTable(s.Gates))}},
		{ID: "per-persona", Title: "Per persona", Blocks: []block{
			para("All strata, per persona, with numerators and denominators; a zero denominator is undefined, never 0 or 1. Nothing is pooled across personas."),
			{Chart: ratioChart{rows: s.Personas}},
			tableBlock(personaTable("personas", "Per persona, all strata", s.Personas)),
		}},
		{ID: "per-stratum", Title: "Per stratum", Blocks: strata},
		{ID: "failing", Title: "Failing cases", Blocks: failingBlocks(s)},
		{ID: "timeline", Title: "Timeline", Blocks: []block{tableBlock(timelineTable(s.Timeline, "Since start"))}},
		{ID: "suite", Title: "Suite and corpus", Blocks: suiteConfigBlocks(s)},
		{ID: "secrets", Title: "Secrets referenced", Blocks: secretBlocks(s.Secrets)},
		{ID: "conditions", Title: "Conditions", Blocks: []block{tableBlock(conditionsTable(s.Conditions))}},
	}
}

func gatesTable(gs []GateRow) table {
	t := table{ID: "gate-results", Caption: "Gate verdicts", Header: []string{"Gate", "Result", "Value", "Threshold"}}
	for _, g := range gs {
		result := "failed"
		if g.Passed {
			result = "passed"
		}
		value := "undefined"
		if g.Value != nil {
			value = *g.Value
		}
		t.Rows = append(t.Rows, []string{g.Name, result, value, orNone(g.Threshold)})
	}
	return t
}

// personaTable has a column per row of scoring.Figures with a report
// header, in the table's order.
func personaTable(id, caption string, rows []PersonaRow) table {
	t := table{ID: id, Caption: caption, Header: []string{"Persona"}}
	for _, f := range scoring.Figures {
		if f.Report != "" {
			t.Header = append(t.Header, f.Report)
		}
	}
	for _, p := range rows {
		cells := []string{orNone(p.Persona)}
		for _, c := range p.Cells {
			cells = append(cells, cellText(c))
		}
		t.Rows = append(t.Rows, cells)
	}
	return t
}

// cellText is a count or a ratio, or says the run did not record it:
// unknown is not zero.
func cellText(c Cell) string {
	switch {
	case c.Count != nil:
		return fmt.Sprint(*c.Count)
	case c.Ratio != nil:
		return humanRatio(*c.Ratio)
	}
	return "not recorded"
}

func failingBlocks(s *SuiteEvidence) []block {
	out := []block{para("From %s.", s.FailingCasesSource)}
	if s.Truncated != "" {
		out = append(out, para("%s", s.Truncated))
	}
	if len(s.FailingCases) == 0 {
		return append(out, para("No failing cases."))
	}
	t := table{ID: "failing-cases", Caption: "Failing executions",
		Header: []string{"Case", "Persona", "Outcome", "Disclosed", "Forbidden IDs", "Recall@k", "Reciprocal rank", "Duplicates", "Error"}}
	for _, c := range s.FailingCases {
		t.Rows = append(t.Rows, []string{c.CaseID, orNone(c.Persona), c.Outcome, yesNo(c.Disclosed), listOrNone(c.ForbiddenIDs),
			humanFloat(c.RecallAtK), humanFloat(c.ReciprocalRank), fmt.Sprint(c.Duplicates), orNone(c.Error)})
	}
	return append(out, tableBlock(t))
}

func suiteConfigBlocks(s *SuiteEvidence) []block {
	out := []block{para("%s.", referencedNote("EvalSuite", s.SuiteSpec))}
	if cfg := s.SuiteSpec.Spec; cfg != nil {
		var sources []string
		for _, src := range cfg.CaseSources {
			sources = append(sources, src.ConfigMapRef.Name+"/"+src.Key)
		}
		g := cfg.Gates
		out = append(out, facts(
			fact{"Corpus", cfg.CorpusRef.Name},
			fact{"k", fmt.Sprint(cfg.K)},
			fact{"Parallelism", fmt.Sprint(cfg.Parallelism)},
			fact{"Inline cases", fmt.Sprint(cfg.InlineCases)},
			fact{"Case sources (ConfigMap/key)", listOrNone(sources)},
			fact{"Gates configured", fmt.Sprintf("maxDisclosures %d, maxInvalidCitations %d, minRecall %s, minMRR %s",
				g.MaxDisclosures, g.MaxInvalidCitations, orNone(g.MinRecall), orNone(g.MinMRR))},
		))
	}
	return append(out, corpusBlocks(s.Corpus)...)
}
