package shared

import (
	"fmt"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/metrics"
)

// CanarySurfaces are the surfaces the canary's runs probe, Search when none
// are set, as metric label values.
func CanarySurfaces(canary *v1alpha1.RevocationCanary) []string {
	probed := v1alpha1.Probed(canary.Spec.Probing.Surfaces)
	out := make([]string, 0, len(probed))
	for _, s := range probed {
		out = append(out, string(s))
	}
	return out
}

// InFlightSummary is a run's in-flight result as its canary shows it; nil
// when the run read no streams.
func InFlightSummary(m *v1alpha1.InFlightMeasurement) *v1alpha1.InFlightSummary {
	if m == nil {
		return nil
	}
	counts := map[v1alpha1.InFlightOutcome]int{}
	for _, s := range m.Streams {
		counts[s.Outcome]++
	}
	outcomes := ""
	for _, o := range inFlightOutcomes {
		if counts[o] > 0 {
			outcomes += fmt.Sprintf(" %s=%d", o, counts[o])
		}
	}
	if outcomes != "" {
		outcomes = outcomes[1:]
	}
	return &v1alpha1.InFlightSummary{PostRevocationDelivery: m.PostRevocationDelivery.DeepCopy(),
		CanaryBytesAfterRequest: m.CanaryBytesAfterRequest, Delivery: m.Delivery, Outcomes: outcomes, SLO: m.SLO.DeepCopy()}
}

// InitCanaryMetrics creates at zero the few series whose first increase an
// alert or panel must see and that no guard can recover: a sentinel's
// sightings, an ordinary canary's per-corpus reappearances.
func InitCanaryMetrics(canary *v1alpha1.RevocationCanary) {
	r := metrics.Run{Namespace: canary.Namespace, Canary: canary.Name, Corpus: canary.Spec.CorpusRef.Name}
	if canary.Spec.Sentinel == nil {
		metrics.InitCanary(r, CanarySurfaces(canary)...)
		return
	}
	controls := make([]string, 0, len(canary.Spec.ControlPersonaRefs))
	for _, c := range canary.Spec.ControlPersonaRefs {
		controls = append(controls, c.Name)
	}
	metrics.InitSentinel(r, controls, CanarySurfaces(canary)...)
}

// inFlightOutcomes in the order people read them.
var inFlightOutcomes = []v1alpha1.InFlightOutcome{v1alpha1.InFlightCut, v1alpha1.InFlightDeliveredThenCut,
	v1alpha1.InFlightReauthorized, v1alpha1.InFlightCompleted, v1alpha1.InFlightEndedBeforeRevocation, v1alpha1.InFlightError}
