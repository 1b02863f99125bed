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

// sentinelVerdicts are the verdicts a sentinel run can end with; a sentinel
// canary's runs_total is pre-created for these alone, and an ordinary
// canary never gets an Isolated series.
var sentinelVerdicts = []string{"Isolated", "IsolationViolation", "Inconclusive", "SetupFailed"}

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

// InitSentinel creates a ready sentinel canary's counters at zero, so the
// first sighting shows in increase(): its verdicts, its isolation
// violations and a sightings series per control persona and surface.
func InitSentinel(r Run, controls []string, probed ...string) {
	if len(probed) == 0 {
		probed = surfaces
	}
	IsolationViolationsTotal.With(r.isolationLabels()).Add(0)
	for _, v := range sentinelVerdicts {
		l := r.labels()
		l[LabelVerdict] = v
		RunsTotal.With(l).Add(0)
	}
	for _, c := range controls {
		for _, s := range probed {
			SentinelSightingsTotal.With(r.sightingLabels(c, s)).Add(0)
		}
	}
}
