package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
)

// forged is what a hostile target or status writer puts in a message.
const forged = testutil.ForgedText

func TestFleetTextQuotesObjectText(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f := &Fleet{Now: now,
		Corpora:  []CorpusState{{Namespace: "ns", Name: "docs", Ready: "False", Reason: forged}},
		Canaries: []CanaryState{{Namespace: "ns", Name: "c", Corpus: "docs", Ready: "True", LastRun: &LastRun{Name: forged, Verdict: "SLOBreached"}}},
		InFlight: []RunInFlight{{Namespace: "ns", Name: "r", Canary: forged, Phase: "Planting"}},
		Recent:   []RecentVerdict{{Namespace: "ns", Canary: "c", ByVerdict: map[string]int{forged: 1}}},
		Suites: []SuiteState{{Namespace: "ns", Name: "s", Corpus: "docs", Ready: "True", LastRun: &SuiteLastRun{Name: forged, RunKept: true,
			Gates: []v1alpha1.GateResult{{Name: forged, Value: "1", Threshold: "0"}}}}},
	}
	f.Problems = problems(f)
	for _, all := range []bool{false, true} {
		var out bytes.Buffer
		if err := WriteFleet(&out, f, all); err != nil {
			t.Fatal(err)
		}
		testutil.ShowsForgedQuoted(t, "status", out.String())
		// Each of the seven places the forged text was put shows it quoted.
		if n := strings.Count(out.String(), `\x1b[2J`); n < 7 {
			t.Errorf("the escape shows quoted %d times, want every place it was put (7):\n%s", n, out.String())
		}
	}
}

func TestHistoryTextQuotesObjectText(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	h := &History{Namespace: "ns", Canary: forged, Corpus: "docs",
		Runs:  []HistoryRun{{Name: "r", Phase: forged, Verdict: forged, StartTime: &start, Surfaces: []RunSurface{{SurfaceBounds: SurfaceBounds{Surface: "Search"}}}}},
		Upper: []Spread{{Surface: forged}}}
	var out bytes.Buffer
	if err := WriteHistory(&out, h); err != nil {
		t.Fatal(err)
	}
	testutil.ShowsForgedQuoted(t, "history", out.String())
}

// TestFollowViewsQuoteObjectText: the run --wait views show a run's
// message, its wait and its name quoted; the live view's own redraw
// sequence is the only escape it writes.
func TestFollowViewsQuoteObjectText(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	waiting := Progress{Kind: "CanaryRun", Run: "r", Waiting: "waiting for the controller; active: " + forged}
	done := Progress{Kind: "CanaryRun", Run: "r", Created: true, Done: true, Verdict: "SLOBreached", Message: forged}
	suite := Progress{Kind: "SuiteRun", Run: "s", Created: true, Done: true, Verdict: "Failed", Message: forged,
		Gates: []v1alpha1.GateResult{{Name: forged, Value: "1", Threshold: "0"}}}

	var plain bytes.Buffer
	pv := &PlainView{W: &plain, Now: clock, Start: now}
	pv.Update(waiting)
	pv.Done(done)
	pv.Done(suite)
	testutil.ShowsForgedQuoted(t, "the plain view", plain.String())

	var live bytes.Buffer
	lv := &LiveView{W: &live, Now: clock}
	lv.Update(waiting)
	lv.Update(Progress{Kind: "CanaryRun", Run: forged, Created: true, Phase: "Planting"})
	lv.Done(done)
	testutil.ShowsForgedQuoted(t, "the live view", strings.ReplaceAll(live.String(), "\r\x1b[K", ""))
	if got := strings.Count(live.String(), "\x1b"); got != 3 {
		t.Errorf("the live view wrote %d escapes, want only its 3 redraws:\n%q", got, live.String())
	}
}

func TestFprintfQuotesStringsAndErrors(t *testing.T) {
	var out bytes.Buffer
	Fprintf(&out, "%s %s %v %d\n", forged, v1alpha1.Verdict(forged), errors.New(forged), 42)
	testutil.ShowsForgedQuoted(t, "Fprintf", out.String())
	if n := strings.Count(out.String(), `\x1b[2J`); n != 3 || !strings.HasSuffix(out.String(), " 42\n") {
		t.Errorf("Fprintf(%q) = %q, want three quoted arguments and the number", forged, out.String())
	}
	out.Reset()
	Fprintf(&out, "%s\t%s\n", "Verdict: SLOMet", "1.2s–1.7s ✓")
	if out.String() != "Verdict: SLOMet\t1.2s–1.7s ✓\n" {
		t.Errorf("printable text changed: %q", out.String())
	}
}
