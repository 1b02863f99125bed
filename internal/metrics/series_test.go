package metrics

import (
	"testing"
)

// seriesBound is the most series a canary of the fleet may cost, by the
// table in docs/observability.md ("Series per canary"): N probed surfaces
// (InFlight apart), with the fleet's one verdict reached since the manager
// started and no isolation violation.
func seriesBound(m fleetMember) int {
	n := len(m.surfaces)
	bound := 1 + n // stale-after; one bound per surface
	if m.ownSLO || m.content {
		bound += n // its own SLO per surface, apart from its corpus's
	}
	if m.content {
		bound += n // the content-freshness bound
	}
	if m.inStreams {
		bound += 3 // the InFlight SLO (when its own), delivery and bytes
	}
	bound += 1 // runs_total of the verdict reached
	if m.inFlight {
		bound += 3 // canary_probes_total by outcome, while a run probes
	}
	if m.censored {
		bound += n // canary_censored_runs_total, per surface with a censored run
	}
	if m.inFlight {
		bound += n // live exposure, while a run probes past revocation
	}
	if m.sentinel {
		bound += len(m.controls) * n // sightings, created at zero
	}
	return bound
}

// TestSeriesPerCanary: every canary of a 1,000-canary fleet costs at most
// the series the documented table allows, and a plain search-only canary
// between runs exactly three; it fails when a change makes a canary cost
// more.
func TestSeriesPerCanary(t *testing.T) {
	resetAll(t)
	g, members := startFleet(1000)
	perCanary := map[string]int{}
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == LabelCanary && l.GetValue() != "" {
					// A histogram would be 21 series of the text format;
					// none is labelled with a canary.
					if f.GetType().String() == "HISTOGRAM" {
						t.Errorf("histogram %s carries the canary label", f.GetName())
					}
					perCanary[l.GetValue()]++
					total++
				}
			}
		}
	}
	for _, m := range members {
		got, bound := perCanary[m.run.Canary], seriesBound(m)
		if got > bound {
			t.Errorf("%s (%+v) has %d series, the documented bound is %d", m.run.Canary, m, got, bound)
		}
	}
	// canary-00045: Search only, no control persona, SLOMet, idle.
	if got := perCanary["canary-00045"]; got != 3 {
		t.Errorf("a plain search-only canary between runs has %d series, want 3", got)
	}
	// canary-00051: the same, with an exclusionSLO of its own.
	if got := perCanary["canary-00051"]; got != 4 {
		t.Errorf("a search-only canary with its own SLO has %d series, want 4", got)
	}
	if avg := float64(total) / float64(len(members)); avg > 5 {
		t.Errorf("the fleet averages %.2f series per canary, documented at most 5", avg)
	}
}
