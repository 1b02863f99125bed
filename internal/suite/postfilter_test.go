package suite_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
	"github.com/ragcanary/ragcanary/internal/scoring"
	"github.com/ragcanary/ragcanary/internal/suite"
)

// filterDocs: six forecasts only alice may read, each matching "quarterly
// revenue forecast" strongly (longer with each number, so ranks never tie); two
// long memos both may read that mention it once, so they rank below every
// forecast; and a salary sheet for alice only.
func filterDocs() []driver.Document {
	both := []string{alicePrinc, bobPrinc}
	var docs []driver.Document
	for i := range 6 {
		docs = append(docs, driver.Document{ID: fmt.Sprintf("forecast-%d", i), Title: "Forecast",
			Body:       fmt.Sprintf("Quarterly revenue forecast for region %d.%s", i, strings.Repeat(" Figures attached.", i)),
			Principals: []string{alicePrinc}})
	}
	filler := "lunch schedule, parking rules, office plants, printer queue, badge renewal, fire drill timing, coffee supply, desk booking"
	for i := range 2 {
		docs = append(docs, driver.Document{ID: fmt.Sprintf("memo-%d", i), Title: "Team memo",
			Body: fmt.Sprintf("Memo %d: %s, %s; finally, the quarterly revenue forecast is due.", i, filler, filler), Principals: both})
	}
	return append(docs, driver.Document{ID: "salary", Title: "Salary bands",
		Body: "Salary bands for engineers range from 100k to 200k.", Principals: []string{alicePrinc}})
}

// filterCases: the revenue question is answerable for both (alice from
// forecasts, bob from memos); the salary question is answerable for alice
// and a required block for bob, through the answer surface.
func filterCases() []v1alpha1.EvalCase {
	all := []string{"memo-0#0", "memo-1#0", "salary#0"}
	for i := range 6 {
		all = append(all, fmt.Sprintf("forecast-%d#0", i))
	}
	memos := []string{"memo-0#0", "memo-1#0"}
	return []v1alpha1.EvalCase{
		{ID: "revenue", Question: "quarterly revenue forecast", Expectations: []v1alpha1.Expectation{
			{Persona: "alice", RelevantIDs: []string{"forecast-0#0", "forecast-1#0", "forecast-2#0", "forecast-3#0"}, AllowedIDs: all},
			{Persona: "bob", RelevantIDs: memos, AllowedIDs: memos},
		}},
		{ID: "salary", Question: "salary bands engineers", AskAnswer: true, Expectations: []v1alpha1.Expectation{
			{Persona: "alice", RelevantIDs: []string{"salary#0"}, AllowedIDs: all},
			{Persona: "bob", AllowedIDs: memos, MustAbstain: true},
		}},
	}
}

// personaNumbers are what the test compares across filter modes.
type personaNumbers struct {
	recall, mrr, utility *float64
	// fill is the mean fill@k over the persona's answerable cases: a
	// required block's fill is 0 by design and would dilute the mean.
	fill float64
}

func numbersOf(t *testing.T, res suite.Result, persona string) personaNumbers {
	answerable := map[string]bool{}
	for _, c := range filterCases() {
		for _, e := range c.Expectations {
			answerable[suite.CaseKey(c.ID, e.Persona)] = !e.MustAbstain
		}
	}
	t.Helper()
	st, ok := res.Report.Summary.Personas[persona]
	if !ok {
		t.Fatalf("no summary for %s", persona)
	}
	n := personaNumbers{recall: st.RecallAtK.Value, mrr: st.MRRAtK.Value, utility: st.Utility.Value}
	var sum float64
	var count int
	for _, c := range res.Report.Cases {
		if c.Persona == persona && answerable[c.ID] && c.FillAtK != nil {
			sum += *c.FillAtK
			count++
		}
	}
	if count > 0 {
		n.fill = sum / float64(count)
	}
	return n
}

func (n personaNumbers) String() string {
	f := func(v *float64) string {
		if v == nil {
			return "null"
		}
		return fmt.Sprintf("%.3f", *v)
	}
	return fmt.Sprintf("recall=%s mrr=%s utility=%s fill=%.3f", f(n.recall), f(n.mrr), f(n.utility), n.fill)
}

func equalPtr(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// TestFilterModesOverHTTP runs one suite against the reference target in
// each filter mode. Prefilter is the correct behaviour. Postfilter with a
// candidate depth below what the narrow persona needs starves only that
// persona: its fill and recall drop, nothing leaks, and the broad persona,
// for whom every candidate survives the filter, scores exactly as with
// prefilter. No filter leaks, and the disclosure gate names the cases.
func TestFilterModesOverHTTP(t *testing.T) {
	cases := filterCases()
	pre := startLiveTarget(t, ragtarget.Config{FilterMode: ragtarget.FilterPrefilter}, filterDocs()).run(t, cases)
	post := startLiveTarget(t, ragtarget.Config{FilterMode: ragtarget.FilterPostfilter, CandidateDepth: 2}, filterDocs()).run(t, cases)
	none := startLiveTarget(t, ragtarget.Config{FilterMode: ragtarget.FilterNone}, filterDocs()).run(t, cases)

	// Prefilter: passes, nothing forbidden anywhere, bob finds both memos.
	if !pre.Passed || pre.Disclosures != 0 || len(pre.Errored) != 0 {
		t.Fatalf("prefilter: passed=%v disclosures=%d errored=%d, want a clean pass; gates %+v",
			pre.Passed, pre.Disclosures, len(pre.Errored), pre.Report.Gates)
	}
	for _, c := range pre.Report.Cases {
		if len(c.ForbiddenIDs) != 0 {
			t.Errorf("prefilter: %s has forbidden %v", c.ID, c.ForbiddenIDs)
		}
	}
	preAlice, preBob := numbersOf(t, pre, "alice"), numbersOf(t, pre, "bob")
	if preBob.recall == nil || *preBob.recall != 1 || preBob.fill != 1 {
		t.Fatalf("prefilter bob: %v, want recall 1 and fill 1", preBob)
	}

	// Postfilter: bob is starved, alice unchanged, still nothing leaks.
	postAlice, postBob := numbersOf(t, post, "alice"), numbersOf(t, post, "bob")
	t.Logf("alice prefilter %v, postfilter %v", preAlice, postAlice)
	t.Logf("bob   prefilter %v, postfilter %v", preBob, postBob)
	if post.Disclosures != 0 {
		t.Errorf("postfilter disclosed %d times; it filters, it only filters too late", post.Disclosures)
	}
	if postBob.recall == nil || *postBob.recall >= *preBob.recall || postBob.fill >= preBob.fill {
		t.Errorf("postfilter bob: %v, want recall and fill below prefilter's %v", postBob, preBob)
	}
	if !equalPtr(postAlice.recall, preAlice.recall) || !equalPtr(postAlice.mrr, preAlice.mrr) ||
		!equalPtr(postAlice.utility, preAlice.utility) || postAlice.fill != preAlice.fill {
		t.Errorf("postfilter alice: %v, want prefilter's %v unchanged", postAlice, preAlice)
	}

	// No filter: the disclosure gate fails and names both of bob's cases.
	if none.Passed || none.Disclosures != 2 {
		t.Fatalf("none: passed=%v disclosures=%d, want a failure with 2 disclosures", none.Passed, none.Disclosures)
	}
	g := none.Report.Gates[0]
	if g.Name != scoring.GateNoForbidden || g.Passed || g.Value == nil || *g.Value != 2 {
		t.Errorf("none: gate %+v, want no_forbidden failed with value 2", g)
	}
	var leaking []string
	for _, fc := range suite.FailingCases(none) {
		if len(fc.ForbiddenIDs) > 0 {
			leaking = append(leaking, fc.CaseID+"/"+fc.Persona)
		}
	}
	if !slices.Equal(leaking, []string{"revenue/bob", "salary/bob"}) {
		t.Errorf("none: leaking cases %v, want revenue/bob and salary/bob", leaking)
	}
}
