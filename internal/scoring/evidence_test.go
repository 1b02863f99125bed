package scoring

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// frozenRun is a small run's evidence: two personas, one errored execution.
func frozenRun(t *testing.T) *Evidence {
	t.Helper()
	lat := 42.0
	cases := []CaseV2{answerCase("a", "employee"), blockCase("b", "contractor"), answerCase("c", "contractor")}
	ev := &Evidence{
		Suite: "default/travel", Run: "travel-1", Cases: cases,
		Options:  EvidenceOptions{K: 5},
		Personas: []PersonaSnapshot{{Name: "employee", Subject: "user-123", Groups: []string{"employees"}}, {Name: "contractor", Subject: "c-9"}},
		Corpus:   &CorpusSnapshot{Name: "travel", Generation: 3, Capabilities: []string{"answer", "search"}},
		Executions: []Execution{
			{CaseID: "a", Persona: "employee", RetrievedIDs: []string{"doc-a"}, CitedIDs: []string{"doc-a"}, Response: ActionAnswer, LatencyMS: &lat},
			// Retrieved faq, which the annotation allows, and declared a block.
			{CaseID: "b", Persona: "contractor", RetrievedIDs: []string{"faq"}, CitedIDs: []string{}, Response: ActionBlock},
			{CaseID: "c", Persona: "contractor", ErrorClass: "timeout"},
		},
	}
	rep, err := Replay(ev)
	if err != nil {
		t.Fatal(err)
	}
	rep.Replay = nil
	ev.Report = &rep
	return ev
}

// TestReplayReproducesVerdict: a written and re-read report rescores to the
// verdict and summary it recorded, and an execution without a reply is
// never scored but fails the probe-errors gate.
func TestReplayReproducesVerdict(t *testing.T) {
	ev := frozenRun(t)
	var buf bytes.Buffer
	if err := WriteEvidence(&buf, ev); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "token") || !strings.Contains(buf.String(), `"format": "ragcanary.dev/eval-evidence/v1"`) {
		t.Fatalf("unexpected evidence document:\n%s", buf.String())
	}
	back, err := ReadEvidence(&buf)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Replay(back)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Passed != ev.Report.Passed || !reflect.DeepEqual(rep.Summary, ev.Report.Summary) || !reflect.DeepEqual(rep.Gates, ev.Report.Gates) {
		t.Errorf("replay differs from the recorded report\n got: %+v\nwant: %+v", rep, ev.Report)
	}
	if rep.Passed || rep.Replay.ProbeErrors != 1 || rep.Replay.CasesChanged || *rep.Replay.RecordedPassed {
		t.Errorf("replay = passed %v, info %+v", rep.Passed, rep.Replay)
	}
	if g := rep.Gates[len(rep.Gates)-1]; g.Name != GateProbeErrors || g.Passed {
		t.Errorf("last gate = %+v, want a failed %s", g, GateProbeErrors)
	}
	if len(rep.Cases) != 2 {
		t.Errorf("scored %d cases, want 2 (the errored one is not scored)", len(rep.Cases))
	}
}

// TestReplayCorrectedAnnotation: correcting one annotation — faq is not in
// fact allowed for the contractor — changes exactly the counts that case
// touches: its justified block becomes a disclosure.
func TestReplayCorrectedAnnotation(t *testing.T) {
	ev := frozenRun(t)
	before := *ev.Report
	ev.Cases[1].Expected.AllowedEvidence = []string{}
	after, err := Replay(ev)
	if err != nil {
		t.Fatal(err)
	}
	if !after.Replay.CasesChanged || after.Replay.CasesHash == ev.CasesHash {
		t.Errorf("replay info = %+v, want the changed cases noticed", after.Replay)
	}
	// Undo the expected change on both sides; everything else must match.
	b, a := before.Summary.Personas["contractor"], after.Summary.Personas["contractor"]
	if b.Disclosures != 0 || a.Disclosures != 1 || b.JustifiedBlocks != 1 || a.JustifiedBlocks != 0 || a.Leaks != 1 || a.AffectedAnswers != 1 {
		t.Fatalf("contractor before %+v\nafter %+v", b, a)
	}
	normalise := func(s Stats) Stats {
		s.Disclosures, s.JustifiedBlocks, s.Leaks, s.AffectedAnswers = 0, 0, 0, 0
		s.DisclosureRate = Ratio{}
		return s
	}
	if !reflect.DeepEqual(normalise(a), normalise(b)) {
		t.Errorf("other contractor counts changed\nbefore %+v\nafter  %+v", b, a)
	}
	if !reflect.DeepEqual(after.Summary.Personas["employee"], before.Summary.Personas["employee"]) {
		t.Error("the employee's counts changed, but no employee case was touched")
	}
	checkRatio(t, "contractor disclosure rate", a.DisclosureRate, frac(1, 1))
	if after.Gates[0].Passed || !before.Gates[0].Passed {
		t.Errorf("no_forbidden before %v after %v; want pass then fail", before.Gates[0].Passed, after.Gates[0].Passed)
	}
}

func TestReadEvidenceStrict(t *testing.T) {
	for _, tt := range []struct{ in, msg string }{
		{`{"format":"other/v9","cases_hash":"","cases":[],"options":{"k":1},"personas":[],"executions":[]}`, `has format "other/v9"`},
		{`{"format":"ragcanary.dev/eval-evidence/v1","cases":[],"options":{"k":1},"personas":[],"executions":[],"token":"x"}`, `unknown field "token"`},
		{`{"format":"ragcanary.dev/eval-evidence/v1"} {}`, "unexpected data after the report"},
	} {
		if _, err := ReadEvidence(strings.NewReader(tt.in)); err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("ReadEvidence(%s) = %v, want %q", tt.in, err, tt.msg)
		}
	}
}
