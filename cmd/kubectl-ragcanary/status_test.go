package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ragcanary/ragcanary/internal/cli"
)

// TestStatusBreachedFleet: the fleet view of a namespace with a breached
// canary, a leaking suite and a run in flight, as people read it; exit 1.
func TestStatusBreachedFleet(t *testing.T) {
	fleetFixture(t, "fleet")
	res := ragcanary(testNow, "status", "-n", "fleet")
	if res.code != exitFailed {
		t.Errorf("exit code %d, want %d (a canary breached its SLO, a suite leaked); stderr: %s", res.code, exitFailed, res.stderr)
	}
	golden(t, "status_fleet.txt", res.stdout)
}

// TestStatusCalmFleet: nothing breached or violated exits 0.
func TestStatusCalmFleet(t *testing.T) {
	calmFixture(t, "calm")
	res := ragcanary(testNow, "status", "--namespace", "calm")
	if res.code != exitOK {
		t.Errorf("exit code %d, want 0; stdout:\n%s\nstderr: %s", res.code, res.stdout, res.stderr)
	}
	golden(t, "status_calm.txt", res.stdout)
	// In JSON an empty section is [], a known "none", never null.
	res = ragcanary(testNow, "status", "--namespace", "calm", "-o", "json")
	containsAll(t, "status -o json", res.stdout, `"inFlight": []`, `"problems": []`)
}

// TestStatusJSONHasExactValues: -o json carries the bounds to the
// microsecond, where the text rounds them.
func TestStatusJSONHasExactValues(t *testing.T) {
	fleetFixture(t, "fleet-json")
	res := ragcanary(testNow, "status", "-n", "fleet-json", "-o", "json")
	if res.code != exitFailed {
		t.Errorf("exit code %d, want %d with -o json too", res.code, exitFailed)
	}
	var f cli.Fleet
	if err := json.Unmarshal([]byte(res.stdout), &f); err != nil {
		t.Fatalf("-o json is not JSON: %v\n%s", err, res.stdout)
	}
	var docs *cli.CanaryState
	for i := range f.Canaries {
		if f.Canaries[i].Name == "docs-grant" {
			docs = &f.Canaries[i]
		}
	}
	if docs == nil || docs.LastRun == nil {
		t.Fatalf("no docs-grant canary with a last run in %+v", f.Canaries)
	}
	if v := docs.LastRun.TimeToVisibilitySeconds; v == nil || *v != 5.916485 {
		t.Errorf("timeToVisibilitySeconds %v, want exactly 5.916485", v)
	}
	if s := docs.LastRun.Surfaces[0]; s.UpperSeconds == nil || *s.UpperSeconds != 2.21 || s.SLOSeconds != 30 {
		t.Errorf("search bounds %+v, want upper 2.21 against SLO 30", s)
	}
	if len(f.Problems) != 2 {
		t.Errorf("problems %q, want the breached canary and the leaking suite", f.Problems)
	}
	if len(f.InFlight) != 1 || len(f.InFlight[0].Exposure) != 1 || f.InFlight[0].Exposure[0].Seconds != 12 {
		t.Errorf("in flight %+v, want one run exposed 12s on Search only", f.InFlight)
	}
}

// TestStatusAllNamespaces: -A lists every namespace with a namespace column.
func TestStatusAllNamespaces(t *testing.T) {
	calmFixture(t, "calm-a")
	calmFixture(t, "calm-b")
	res := ragcanary(testNow, "status", "-A")
	for _, ns := range []string{"calm-a", "calm-b"} {
		if !strings.Contains(res.stdout, ns+"  ") {
			t.Errorf("-A output lacks namespace %s:\n%s", ns, res.stdout)
		}
	}
	if !strings.Contains(res.stdout, "NAMESPACE") {
		t.Errorf("-A output has no NAMESPACE column:\n%s", res.stdout)
	}
}

// TestUsageErrorsExit2: a wrong invocation is told apart from a breach.
func TestUsageErrorsExit2(t *testing.T) {
	for _, args := range [][]string{
		{"status", "extra"},
		{"status", "-o", "yaml"},
		{"status", "--no-such-flag"},
		{"history"},
		{"run"},
		{"no-such-command"},
	} {
		if res := ragcanary(testNow, args...); res.code != exitInvalid {
			t.Errorf("%q: exit code %d, want %d; stderr: %s", args, res.code, exitInvalid, res.stderr)
		}
	}
}
