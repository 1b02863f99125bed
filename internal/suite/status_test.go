package suite

import (
	"slices"
	"testing"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/scoring"
)

// TestPersonaResultsHoldEveryFigure: each status row lists every count and
// every rate of scoring.Figures, in the table's order, with the summary's
// value; an undefined rate keeps its denominator 0 and no value; the table
// fits the CRD's bounds.
func TestPersonaResultsHoldEveryFigure(t *testing.T) {
	rep, err := scoring.EvaluateV2(
		[]scoring.CaseV2{
			{ID: "a", Question: "?", Persona: "alice", Stratum: "hr", Expected: scoring.Expected{Action: scoring.ActionAnswer,
				AllowedEvidence: []string{"d"}, RequiredEvidence: []string{"d"}}},
			{ID: "b", Question: "?", Persona: "bob", Expected: scoring.Expected{Action: scoring.ActionBlock, AllowedEvidence: []string{}}},
		},
		[]scoring.ResultV2{
			{ID: "a", RetrievedIDs: []string{"d"}, CitedIDs: []string{"d"}, Response: scoring.ActionAnswer},
			{ID: "b", RetrievedIDs: []string{"secret"}, CitedIDs: []string{}, Response: scoring.ActionBlock},
		}, scoring.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rows := PersonaResults(Result{Report: rep})
	if len(rows) != 3 {
		t.Fatalf("rows = %+v, want alice and bob over all strata and alice in hr", rows)
	}
	for _, row := range rows {
		sum := rep.Summary
		if row.Stratum != "" {
			sum = rep.Summary.Strata[row.Stratum]
		}
		st := sum.Personas[row.Persona]
		var counts, rates []string
		for _, f := range scoring.Figures {
			if f.Kind == scoring.KindCount {
				counts = append(counts, f.Name)
				if got, ok := row.Count(f.Name); !ok || got != int32(f.Count(&st)) {
					t.Errorf("%s/%q count %s = %d (listed %v), want %d", row.Persona, row.Stratum, f.Name, got, ok, f.Count(&st))
				}
				continue
			}
			rates = append(rates, f.Name)
			got, ok := row.Rate(f.Name)
			if !ok || !sameRatio(got, Ratio(f.Ratio(&st))) {
				t.Errorf("%s/%q rate %s = %+v (listed %v), want %+v", row.Persona, row.Stratum, f.Name, got, ok, f.Ratio(&st))
			}
		}
		if got := countNames(row.Counts); !slices.Equal(got, counts) {
			t.Errorf("%s/%q counts %v, want the table's %v", row.Persona, row.Stratum, got, counts)
		}
		if got := rateNames(row.Rates); !slices.Equal(got, rates) {
			t.Errorf("%s/%q rates %v, want the table's %v", row.Persona, row.Stratum, got, rates)
		}
		if len(counts) > maxFigures || len(rates) > maxFigures {
			t.Errorf("%d counts and %d rates; the CRD holds %d of each", len(counts), len(rates), maxFigures)
		}
	}
	bob := rows[1]
	if r, _ := bob.Rate(scoring.FigureUtility); bob.Persona != "bob" || r.Value != nil || r.Denominator != 0 {
		t.Errorf("bob's utility = %+v, want unset over 0 (no answerable case)", r)
	}
	if r, _ := bob.Rate(scoring.FigureDisclosureRate); r.Value == nil || *r.Value != "1" {
		t.Errorf("bob's disclosure rate = %+v, want 1/1", r)
	}
}

func sameRatio(a, b v1alpha1.Ratio) bool {
	return a.Numerator == b.Numerator && a.Denominator == b.Denominator && (a.Value == nil) == (b.Value == nil) &&
		(a.Value == nil || *a.Value == *b.Value)
}

func countNames(cs []v1alpha1.NamedCount) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func rateNames(rs []v1alpha1.NamedRatio) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}
