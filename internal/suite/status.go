package suite

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/scoring"
)

// Status bounds, matching the SuiteRun CRD's MaxItems: a longer list would
// fail the status write and turn into a retry loop.
const (
	maxPersonaResults = 256
	maxFailingCases   = 20
	maxForbiddenIDs   = 10
	// maxFigures bounds personas[].counts and personas[].rates each.
	maxFigures = 32
)

// GateProbeErrors is the gate for executions without a reply. The scoring
// engine never sees them, so FinalReport appends it to the engine's gates.
const GateProbeErrors = "no_probe_errors"

// PersonaResults is status.personas: every persona over all strata, then
// every persona within each stratum, sorted, within the status bound.
func PersonaResults(r Result) []v1alpha1.PersonaResult {
	out := personaRows("", r.Report.Summary)
	for _, stratum := range slices.Sorted(maps.Keys(r.Report.Summary.Strata)) {
		out = append(out, personaRows(stratum, r.Report.Summary.Strata[stratum])...)
	}
	if len(out) > maxPersonaResults {
		out = out[:maxPersonaResults]
	}
	return out
}

func personaRows(stratum string, s scoring.Summary) []v1alpha1.PersonaResult {
	var out []v1alpha1.PersonaResult
	for _, persona := range slices.Sorted(maps.Keys(s.Personas)) {
		st := s.Personas[persona]
		row := figureRow(&st)
		row.Persona, row.Stratum = persona, stratum
		for _, status := range scoring.StatusActions {
			if ratio, ok := st.CorrectAbstention[status]; ok && ratio.Denominator > 0 {
				row.CorrectAbstention = append(row.CorrectAbstention, v1alpha1.StatusRatio{Status: string(status), Ratio: Ratio(ratio)})
			}
		}
		out = append(out, row)
	}
	return out
}

// figureRow holds every row of scoring.Figures, in the table's order: the
// counts, then the rates and means.
func figureRow(st *scoring.Stats) v1alpha1.PersonaResult {
	var row v1alpha1.PersonaResult
	for _, f := range scoring.Figures {
		if f.Kind == scoring.KindCount {
			row.Counts = append(row.Counts, v1alpha1.NamedCount{Name: f.Name, Count: int32(f.Count(st))})
			continue
		}
		row.Rates = append(row.Rates, v1alpha1.NamedRatio{Name: f.Name, Ratio: Ratio(f.Ratio(st))})
	}
	return row
}

// Ratio converts a scoring ratio; an undefined value stays unset.
func Ratio(r scoring.Ratio) v1alpha1.Ratio {
	out := v1alpha1.Ratio{Numerator: Decimal(r.Numerator), Denominator: int32(r.Denominator)}
	if r.Value != nil {
		v := Decimal(*r.Value)
		out.Value = &v
	}
	return out
}

// Decimal formats v with at most four decimals and no trailing zeros, short
// enough for the status fields ("0.6667", "1", "2.5").
func Decimal(v float64) string {
	s := strconv.FormatFloat(v, 'f', 4, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		return "0"
	}
	return s
}

// GateResults is status.gates: FinalReport's gates, so status and the
// stored report list the same verdicts.
func GateResults(r Result) []v1alpha1.GateResult {
	var out []v1alpha1.GateResult
	for _, g := range FinalReport(r).Gates {
		gr := v1alpha1.GateResult{Name: g.Name, Passed: g.Passed, Threshold: Decimal(g.Threshold)}
		if g.Value != nil {
			gr.Value = Decimal(*g.Value)
		}
		out = append(out, gr)
	}
	return out
}

// FailingCases is status.failingCases: executions that failed a
// zero-tolerance gate (forbidden evidence, invalid citations, an answer
// where policy requires a refusal, no reply) first, then the other cases
// needing attention, each group in case order, within the bound. Ordering
// this way keeps a disclosure from being crowded out of the list.
func FailingCases(r Result) []v1alpha1.FailingCase {
	var gate, other []v1alpha1.FailingCase
	for _, s := range r.failing {
		caseID, persona := splitKey(s.ID, s.Persona)
		fc := v1alpha1.FailingCase{CaseID: caseID, Persona: persona, Outcome: string(s.Outcome),
			Disclosed: s.Leaked(), ForbiddenIDs: firstN(s.ForbiddenIDs, maxForbiddenIDs)}
		if fc.Disclosed || len(s.InvalidCitations) > 0 || s.Outcome == scoring.OutcomeFailedToAbstain {
			gate = append(gate, fc)
		} else {
			other = append(other, fc)
		}
	}
	for _, x := range r.Errored {
		gate = append(gate, v1alpha1.FailingCase{CaseID: x.CaseID, Persona: x.Persona, Outcome: v1alpha1.OutcomeProbeError})
	}
	return firstN(append(gate, other...), maxFailingCases)
}

// splitKey recovers the case ID from a CaseKey; the persona is known.
func splitKey(key, persona string) (string, string) {
	return strings.TrimSuffix(key, "/"+persona), persona
}

func firstN[T any](s []T, n int) []T {
	if len(s) > n {
		return s[:n]
	}
	return s
}
