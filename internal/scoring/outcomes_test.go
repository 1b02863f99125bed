package scoring

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// notFigures are the keys of the report's stats that are not rows of
// Figures, and why.
var notFigures = map[string]string{
	"leaks":              "affected_answers under the key reports had before it",
	"correct_abstention": "a rate per expected status, keyed by StatusActions",
	"latency_ms":         "percentiles, not a count or a ratio",
}

// TestFiguresAreStatsJSON: every row's Stats field is the JSON key the row
// names, and every key of the stats is a row (or one of notFigures), so a
// row and its Stats field cannot drift apart.
func TestFiguresAreStatsJSON(t *testing.T) {
	for i := range Figures {
		f := &Figures[i]
		var st Stats
		want := float64(1000 + i)
		if f.Kind == KindCount {
			*f.count(&st) = int(want)
		} else {
			*f.ratio(&st) = newRatio(want, 1)
		}
		got := statsJSON(t, st)[f.Name]
		if f.Kind != KindCount {
			got, _ = got.(map[string]any)["numerator"]
		}
		if got != want {
			t.Errorf("%s: its Stats field is written as %v under its key, want %v", f.Name, got, want)
		}
		if f.Count(&st)+int(f.Ratio(&st).Numerator) != int(want) {
			t.Errorf("%s: Count and Ratio read %d and %v, want %v from one of them", f.Name, f.Count(&st), f.Ratio(&st).Numerator, want)
		}
	}
	for key := range statsJSON(t, Stats{}) {
		if _, ok := FigureNamed(key); !ok && notFigures[key] == "" {
			t.Errorf("stats key %q is no row of Figures: add one", key)
		}
	}
}

func statsJSON(t *testing.T, st Stats) map[string]any {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestFiguresDocumented: docs/eval.md defines every row.
func TestFiguresDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/eval.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Figures {
		if !strings.Contains(string(b), "`"+f.Name+"`") {
			t.Errorf("docs/eval.md does not define `%s`", f.Name)
		}
	}
}

// TestRatesOverTheirCounts: a rate of cases is its numerator row over its
// denominator row in every persona and stratum of a real report, and a
// zero denominator leaves it undefined.
func TestRatesOverTheirCounts(t *testing.T) {
	rep, err := EvaluateV2(
		[]CaseV2{answerCase("a", "p"), answerCase("b", "p"), blockCase("c", "q"), {ID: "n", Question: "?", Persona: "p",
			Expected: Expected{Action: ActionNotFound, AllowedEvidence: []string{}}}},
		[]ResultV2{supportedResult("a"), declared("b", ActionBlock), leakResult("c"), declared("n", ActionNotFound)},
		Options{})
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]Stats{"overall": rep.Summary.Overall}
	for p, st := range rep.Summary.Personas {
		all[p] = st
	}
	for where, st := range all {
		for _, f := range Figures {
			if f.Numerator == "" {
				continue
			}
			num, _ := FigureNamed(f.Numerator)
			den, _ := FigureNamed(f.Denominator)
			r := f.Ratio(&st)
			n, d := num.Count(&st), den.Count(&st)
			if r.Numerator != float64(n) || r.Denominator != d || (r.Value == nil) != (d == 0) {
				t.Errorf("%s %s = %+v, want %d/%d (undefined when 0)", where, f.Name, r, n, d)
			}
		}
	}
	if st := rep.Summary.Personas["q"]; st.Utility.Value != nil || *st.DisclosureRate.Value != 1 || st.AffectedAnswers != 1 {
		t.Errorf("q: utility %+v, disclosure rate %+v, affected %d; want undefined, 1/1, 1", st.Utility, st.DisclosureRate, st.AffectedAnswers)
	}
}

// TestCompileFiguresRefuses: a malformed row stops the package at start-up
// rather than count nothing.
func TestCompileFiguresRefuses(t *testing.T) {
	count := func(s *Stats) *int { return &s.Supported }
	ratio := func(s *Stats) *Ratio { return &s.Utility }
	tests := []struct {
		name string
		// row is added to a valid table of one count.
		row Figure
	}{
		{"repeated name", Figure{Name: "n", Kind: KindCount, Doc: "d", Actions: answerOnly, count: count}},
		{"name not a key", Figure{Name: "Bad-Name", Kind: KindCount, Doc: "d", Actions: answerOnly, count: count}},
		{"no doc", Figure{Name: "x", Kind: KindCount, Actions: answerOnly, count: count}},
		{"count without actions", Figure{Name: "x", Kind: KindCount, Doc: "d", count: count}},
		{"count of an unknown action", Figure{Name: "x", Kind: KindCount, Doc: "d", Actions: []Action{"refuse"}, count: count}},
		{"count without its field", Figure{Name: "x", Kind: KindCount, Doc: "d", Actions: answerOnly}},
		{"rate over an unknown count", Figure{Name: "x", Kind: KindRate, Doc: "d", Numerator: "n", Denominator: "nope", ratio: ratio}},
		{"rate over a rate", Figure{Name: "x", Kind: KindRate, Doc: "d", Numerator: "n", Denominator: "r", ratio: ratio}},
		{"rate without numerator or measure", Figure{Name: "x", Kind: KindRate, Doc: "d", ratio: ratio}},
		{"rate that counts", Figure{Name: "x", Kind: KindRate, Doc: "d", Numerator: "n", Denominator: "n", Outcome: OutcomeSupported, ratio: ratio}},
		{"mean without measure", Figure{Name: "x", Kind: KindMean, Doc: "d", ratio: ratio}},
		{"report column without key", Figure{Name: "x", Kind: KindCount, Doc: "d", Actions: answerOnly, Report: "X", count: count}},
		{"no kind", Figure{Name: "x", Doc: "d", ratio: ratio}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table := []Figure{
				{Name: "n", Kind: KindCount, Doc: "d", Actions: answerOnly, count: count},
				{Name: "r", Kind: KindMean, Doc: "d", measure: measureRecall, ratio: ratio},
				tt.row,
			}
			defer func() {
				if recover() == nil {
					t.Errorf("compileFigures accepted %+v", tt.row)
				}
			}()
			compileFigures(table)
		})
	}
	valid := slices.Clone(Figures)
	if got := compileFigures(valid); len(got) != len(countFigures) {
		t.Errorf("recompiling Figures gives %d counts, want %d", len(got), len(countFigures))
	}
}
