package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ragcanary/ragcanary/internal/dev/testutil"
)

// TestCanaryInfoMetrics: a ready canary publishes when it goes stale and
// the SLO it is judged by (what the alerts compare against): its own
// exclusionSLO as a series of its own, beside its corpus's per surface
// (the operator's 5m default here); it has no stale-after time while
// suspended; without an exclusionSLO of its own it has no SLO series, its
// corpus's judges it; deleting it removes its series.
func TestCanaryInfoMetrics(t *testing.T) {
	f := newCanaryFixture(t, allCanaryRefs, nil)
	// Never run: stale three hourly periods after its creation.
	wantStale := float64(f.get().CreationTimestamp.Add(3 * time.Hour).Unix())
	testutil.Eventually(t, eventuallyTimeout, "canary info gauges", func() error {
		slo := canaryGauge(t, "ragcanary_corpus_surface_slo_seconds", f.ns, "", "Search")
		own := canaryGauge(t, "ragcanary_canary_surface_slo_seconds", f.ns, f.canary.Name, "Search")
		stale := canaryGauge(t, "ragcanary_canary_stale_after_timestamp_seconds", f.ns, f.canary.Name, "")
		if slo == nil || *slo != 300 || own == nil || *own != 30 || stale == nil || *stale != wantStale {
			return fmt.Errorf("corpus slo=%v own slo=%v stale after=%v, want 300, 30 and %v", ptrText(slo), ptrText(own), ptrText(stale), wantStale)
		}
		return nil
	})
	// Suspended on purpose: no stale-after time, so the stale alert stays
	// quiet; the SLO still applies to runs in flight.
	f.patchSpec(`{"suspend":true}`)
	testutil.Eventually(t, eventuallyTimeout, "no stale-after time while suspended", func() error {
		own := canaryGauge(t, "ragcanary_canary_surface_slo_seconds", f.ns, f.canary.Name, "Search")
		stale := canaryGauge(t, "ragcanary_canary_stale_after_timestamp_seconds", f.ns, f.canary.Name, "")
		if own == nil || *own != 30 || stale != nil {
			return fmt.Errorf("own slo=%v stale after=%v, want 30 and absent", ptrText(own), ptrText(stale))
		}
		return nil
	})
	f.patchSpec(`{"exclusionSLO":null}`)
	testutil.Eventually(t, eventuallyTimeout, "judged by the corpus's SLO alone", func() error {
		slo := canaryGauge(t, "ragcanary_corpus_surface_slo_seconds", f.ns, "", "Search")
		own := canaryGauge(t, "ragcanary_canary_surface_slo_seconds", f.ns, f.canary.Name, "Search")
		if slo == nil || *slo != 300 || own != nil {
			return fmt.Errorf("corpus slo=%v own slo=%v, want 300 and absent", ptrText(slo), ptrText(own))
		}
		return nil
	})
	if err := k8sClient.Delete(context.Background(), f.canary); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, eventuallyTimeout, "series removed after deletion", func() error {
		if n := countSeries(t, f.ns, f.canary.Name); n != 0 {
			return fmt.Errorf("%d series of the deleted canary remain", n)
		}
		if slo := canaryGauge(t, "ragcanary_corpus_surface_slo_seconds", f.ns, "", "Search"); slo != nil {
			return fmt.Errorf("corpus slo=%v with no canary left, want absent", *slo)
		}
		return nil
	})
}

// ptrText prints a gauge read by canaryGauge: its value, or absent.
func ptrText(v *float64) string {
	if v == nil {
		return "absent"
	}
	return fmt.Sprint(*v)
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
