package controllers

import (
	"context"
	"fmt"
	"testing"

	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// TestCanaryInfoMetrics: a ready canary publishes its SLO and schedule period
// (what the alerts compare against), loses the period while suspended, and
// deleting it removes its series.
func TestCanaryInfoMetrics(t *testing.T) {
	f := newCanaryFixture(t, allCanaryRefs, nil)
	eventually(t, "canary info gauges", func() error {
		slo := canaryGauge(t, "ragcanary_canary_surface_slo_seconds", f.ns, f.canary.Name, "Search")
		period := canaryGauge(t, "ragcanary_canary_schedule_period_seconds", f.ns, f.canary.Name, "")
		if slo == nil || *slo != 30 || period == nil || *period != 3600 {
			return fmt.Errorf("slo=%v period=%v, want 30 and 3600", slo, period)
		}
		return nil
	})
	// Suspended on purpose: no period, so the stale alert stays quiet; the
	// SLO still applies to runs in flight.
	f.patchSpec(`{"suspend":true}`)
	eventually(t, "no period while suspended", func() error {
		slo := canaryGauge(t, "ragcanary_canary_surface_slo_seconds", f.ns, f.canary.Name, "Search")
		period := canaryGauge(t, "ragcanary_canary_schedule_period_seconds", f.ns, f.canary.Name, "")
		if slo == nil || *slo != 30 || period != nil {
			return fmt.Errorf("slo=%v period=%v, want 30 and absent", slo, period)
		}
		return nil
	})
	if err := k8sClient.Delete(context.Background(), f.canary); err != nil {
		t.Fatal(err)
	}
	eventually(t, "series removed after deletion", func() error {
		if n := countSeries(t, f.ns, f.canary.Name); n != 0 {
			return fmt.Errorf("%d series of the deleted canary remain", n)
		}
		return nil
	})
}

// countSeries counts exported series labelled with the canary.
func countSeries(t *testing.T, ns, canary string) int {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fam := range families {
		for _, m := range fam.GetMetric() {
			var gotNS, gotCanary string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "namespace":
					gotNS = l.GetValue()
				case "canary":
					gotCanary = l.GetValue()
				}
			}
			if gotNS == ns && gotCanary == canary {
				n++
			}
		}
	}
	return n
}
