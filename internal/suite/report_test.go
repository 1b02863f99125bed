package suite

import (
	"encoding/json"
	"testing"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/scoring"
)

// TestReportDataCarriesTheRunVerdict: a run whose only scored execution
// passes but whose other execution got no reply failed, and its stored
// report must say so, listing the gate that decided it.
func TestReportDataCarriesTheRunVerdict(t *testing.T) {
	execs := []Execution{
		{CaseID: "c", Persona: "alice", Stratum: "hr", Hits: []string{"a#0"}},
		{CaseID: "c", Persona: "mallory", Stratum: "hr", Err: driver.NewError(driver.Transient, "Search", 503, "unavailable", nil)},
	}
	res, err := scoreCases(t, []v1alpha1.EvalCase{twoPersonaCase}, execs, 5, Gates{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Report.Passed || res.Passed {
		t.Fatalf("engine passed=%v run passed=%v: the fixture needs a passing engine report on a failed run",
			res.Report.Passed, res.Passed)
	}
	data, err := ReportData(res, 0)
	if err != nil {
		t.Fatal(err)
	}
	var stored scoring.Report
	if err := json.Unmarshal([]byte(data[v1alpha1.ReportKeyReport]), &stored); err != nil {
		t.Fatalf("report.json: %v", err)
	}
	if stored.Passed {
		t.Error("report.json says passed on a run that failed on a probe error")
	}
	want := []string{scoring.GateNoForbidden, scoring.GateCitationValidity, scoring.GateNoFailedToAbstain, GateProbeErrors}
	if len(stored.Gates) != len(want) {
		t.Fatalf("report.json gates = %+v, want %v", stored.Gates, want)
	}
	for i, g := range stored.Gates {
		if g.Name != want[i] {
			t.Errorf("gate %d = %q, want %q", i, g.Name, want[i])
		}
	}
	last := stored.Gates[len(stored.Gates)-1]
	if last.Passed || last.Value == nil || *last.Value != 1 {
		t.Errorf("%s = %+v, want failing with value 1", GateProbeErrors, last)
	}
	// status.gates lists exactly the stored report's gates.
	status := GateResults(res)
	if len(status) != len(stored.Gates) {
		t.Fatalf("status gates %+v differ from report gates %+v", status, stored.Gates)
	}
	for i, g := range status {
		if g.Name != stored.Gates[i].Name || g.Passed != stored.Gates[i].Passed {
			t.Errorf("status gate %+v differs from report gate %+v", g, stored.Gates[i])
		}
	}
	// FinalReport must not write through to the engine's gates.
	if len(res.Report.Gates) != len(want)-1 || !res.Report.Passed {
		t.Errorf("FinalReport modified res.Report: gates %+v passed %v", res.Report.Gates, res.Report.Passed)
	}
}

// TestReportDataAllProbeErrors: no execution replied, so nothing was scored;
// the stored report fails on the probe-error gate rather than listing no
// gate at all.
func TestReportDataAllProbeErrors(t *testing.T) {
	execs := []Execution{{CaseID: "c", Persona: "alice", Err: driver.NewError(driver.Transient, "Search", 503, "unavailable", nil)}}
	res, err := scoreCases(t, []v1alpha1.EvalCase{twoPersonaCase}, execs, 5, Gates{})
	if err != nil {
		t.Fatal(err)
	}
	got := FinalReport(res)
	if got.Passed || len(got.Gates) != 1 || got.Gates[0].Name != GateProbeErrors || got.Gates[0].Passed {
		t.Errorf("FinalReport = passed %v gates %+v, want failing on %s only", got.Passed, got.Gates, GateProbeErrors)
	}
}
