package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// SentinelSightingsTotal counts control-persona probes that saw a
// sentinel's payload, by the persona and surface: the persona label is
// bounded by a canary's controlPersonaRefs (at most 16). The carrier is
// not a label: its IDs are chosen by the target, unbounded, and belong in
// the run's status.
var SentinelSightingsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: namespace, Name: "sentinel_sightings_total",
	Help: "Sentinel canary sightings: probes by a persona outside the sentinel's access list that saw its payload, through any document.",
}, []string{LabelNamespace, LabelCanary, LabelCorpus, LabelPersona, LabelSurface})

func init() {
	crmetrics.Registry.MustRegister(SentinelSightingsTotal)
	all = append(all, SentinelSightingsTotal)
}

// AddSentinelSighting counts one sentinel sighting by a control persona.
func AddSentinelSighting(r Run, persona, surface string) {
	SentinelSightingsTotal.With(r.sightingLabels(persona, surface)).Inc()
}

func (r Run) sightingLabels(persona, surface string) prometheus.Labels {
	l := r.withSurface(surface)
	l[LabelPersona] = persona
	return l
}

// InitSentinel creates a ready sentinel canary's sightings at zero, one per
// control persona and probed surface, so the first sighting shows in
// increase(): watching for that sighting is all a sentinel is for, and a
// sentinel's control personas are bounded (at most 16). Its verdicts and
// isolation violations appear with their first event, as an ordinary
// canary's do.
func InitSentinel(r Run, controls []string, probed ...string) {
	if len(probed) == 0 {
		probed = surfaces
	}
	for _, c := range controls {
		for _, s := range probed {
			SentinelSightingsTotal.With(r.sightingLabels(c, s)).Add(0)
		}
	}
}
