package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func TestDoubleProbes(t *testing.T) {
	tests := []struct {
		name   string
		probes []probe
		want   []string // canaries
	}{{
		// a hand-over: r-1's stream ends before r-2's begins
		name:   "hand-over",
		probes: []probe{{"ns/a", "r-1", at(0)}, {"ns/a", "r-1", at(5)}, {"ns/a", "r-2", at(20)}, {"ns/a", "r-2", at(25)}},
	}, {
		// r-2 probes between r-1's first and last probe
		name:   "interleaved",
		probes: []probe{{"ns/a", "r-1", at(0)}, {"ns/a", "r-2", at(3)}, {"ns/a", "r-1", at(5)}, {"ns/b", "r-1", at(0)}},
		want:   []string{"ns/a"},
	}, {
		// one stream inside the other's span counts too
		name:   "nested",
		probes: []probe{{"ns/a", "r-1", at(0)}, {"ns/a", "r-2", at(2)}, {"ns/a", "r-2", at(3)}, {"ns/a", "r-1", at(10)}},
		want:   []string{"ns/a"},
	}, {
		// the same replica's persona and control probes are one stream
		name:   "one replica",
		probes: []probe{{"ns/a", "r-1", at(0)}, {"ns/a", "r-1", at(0)}, {"ns/a", "r-1", at(5)}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, d := range doubleProbes(tc.probes) {
				got = append(got, d.canary)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("double-probed canaries = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestReprobes(t *testing.T) {
	kill := at(10)
	probes := []probe{
		{"ns/a", "r-1", at(8)}, {"ns/a", "r-2", at(30)}, {"ns/a", "r-2", at(35)},
		{"ns/b", "r-1", at(9)}, {"ns/b", "r-0", at(26)},
		// before the kill: not a re-probe
		{"ns/c", "r-0", at(5)},
		// a canary r-1 did not own
		{"ns/d", "r-0", at(12)},
	}
	got := reprobes(probes, "r-1", []string{"ns/a", "ns/b", "ns/c"}, kill)
	if want := []time.Duration{16 * time.Second, 20 * time.Second}; !slices.Equal(got.sinceKill, want) {
		t.Errorf("sinceKill = %v, want %v", got.sinceKill, want)
	}
	if want := []time.Duration{17 * time.Second, 22 * time.Second}; !slices.Equal(got.gap, want) {
		t.Errorf("gap = %v, want %v", got.gap, want)
	}
	if want := []string{"ns/c"}; !slices.Equal(got.never, want) {
		t.Errorf("never = %v, want %v", got.never, want)
	}
	if q := quantile(got.sinceKill, 0.99); q != 20*time.Second {
		t.Errorf("p99 = %v, want 20s", q)
	}
	if q := quantile(nil, 0.99); q >= 0 {
		t.Errorf("p99 of nothing = %v, want the n/a sentinel", q)
	}
}

func TestCheckRuns(t *testing.T) {
	before := []runRef{{"ns/a", "ns/a-now", "u1", "run-now"}, {"ns/b", "ns/b-now", "u2", "run-now"}, {"ns/c", "ns/c-now", "u3", "run-now"}}
	after := []runRef{
		{"ns/a", "ns/a-now", "u1", "run-now"},
		// b's run recreated under a new UID: lost, and a duplicate of its slot
		{"ns/b", "ns/b-now", "u9", "run-now"},
		// c's run gone; a scheduled run for a new slot
		{"ns/c", "ns/c-1767225600", "u4", "2026-01-01T00:00:00Z"},
	}
	got := checkRuns(before, after)
	if want := []string{"ns/b-now", "ns/c-now"}; !slices.Equal(got.lost, want) {
		t.Errorf("lost = %v, want %v", got.lost, want)
	}
	if want := []string{"ns/b-now"}; !slices.Equal(got.duplicated, want) {
		t.Errorf("duplicated = %v, want %v", got.duplicated, want)
	}
	if want := []string{"ns/c-1767225600"}; !slices.Equal(got.added, want) {
		t.Errorf("added = %v, want %v", got.added, want)
	}
}

func TestCheckBounds(t *testing.T) {
	atKill := map[string]boundState{
		"ok":     {phase: "AwaitingExclusion", lower: 10 * time.Second, hasLower: true, knownLag: 12 * time.Second},
		"upper":  {phase: "AwaitingExclusion", lower: 10 * time.Second, hasLower: true, knownLag: 12 * time.Second},
		"shrank": {phase: "AwaitingExclusion", lower: 10 * time.Second, hasLower: true, knownLag: 12 * time.Second},
		"gone":   {phase: "AwaitingExclusion", lower: 10 * time.Second, hasLower: true, knownLag: 12 * time.Second},
	}
	atEnd := map[string]boundState{
		// grew, and stays below the time since the revocation
		"ok":     {phase: "AwaitingExclusion", lower: 40 * time.Second, hasLower: true, knownLag: 45 * time.Second},
		"upper":  {phase: "Succeeded", lower: 10 * time.Second, hasLower: true, hasUpper: true, knownLag: 45 * time.Second},
		"shrank": {phase: "AwaitingExclusion", lower: 5 * time.Second, hasLower: true, knownLag: 45 * time.Second},
	}
	got := checkBounds(atKill, atEnd)
	if got.grew != 1 || got.ok() {
		t.Fatalf("grew %d, ok %t; want 1, false", got.grew, got.ok())
	}
	for name, l := range map[string][]string{"notAwaiting": got.notAwaiting, "withUpper": got.withUpper, "shrank": got.shrank, "missing": got.missing} {
		want := map[string]string{"notAwaiting": "upper", "withUpper": "upper", "shrank": "shrank", "missing": "gone"}[name]
		if !slices.Equal(l, []string{want}) {
			t.Errorf("%s = %v, want [%s]", name, l, want)
		}
	}
	if len(got.beyondLag) != 0 {
		t.Errorf("beyondLag = %v, want none", got.beyondLag)
	}
	if b := checkBounds(map[string]boundState{"x": atKill["ok"]}, map[string]boundState{"x": {phase: "AwaitingExclusion", lower: time.Minute, hasLower: true, knownLag: 30 * time.Second}}); !slices.Equal(b.beyondLag, []string{"x"}) {
		t.Errorf("a lower bound above the known lag was not caught: %v", b.beyondLag)
	}
}

func TestRecordsRoundTrip(t *testing.T) {
	var rec recorder
	rec.records = []probeRecord{{start: at(1).UnixNano(), end: at(1.5).UnixNano(), agent: rec.agents.id("ragcanary/devel (r-2)"), query: rec.queries.id("rch-abc")}}
	var b strings.Builder
	rec.write(&b)
	got, err := parseRecords(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !got[0].start.Equal(at(1)) || got[0].query != "rch-abc" || replicaOf(got[0].agent) != "r-2" {
		t.Fatalf("round trip = %+v", got)
	}
	for agent, want := range map[string]string{"ragcanary/v1.2.3 (r-0)": "r-0", "curl/8": "", "ragcanary/devel": ""} {
		if got := replicaOf(agent); got != want {
			t.Errorf("replicaOf(%q) = %q, want %q", agent, got, want)
		}
	}
}
