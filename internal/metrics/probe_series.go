package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ProbeSeries are the series one probe loop writes on every probe, looked
// up once per loop rather than by a fresh label map per probe: on a large
// fleet that look-up and its garbage show up in the manager's CPU profile
// (make bench-canaries). Probes of a round run concurrently,
// so it is safe for concurrent use. A loop must not outlive its canary's
// Forget or its run's completion, or its counts land in series no longer
// exported; the canary's finalizer stops its runs first, and a run stops
// its loop before it records its completion.
type ProbeSeries struct {
	run Run
	lag prometheus.Observer

	mu        sync.Mutex
	probes    map[probeKey]prometheus.Counter
	outcomes  map[string]prometheus.Counter // the canary's, by outcome
	durations map[string]prometheus.Observer
}

type probeKey struct{ surface, role, outcome string }

// NewProbeSeries returns the probe series of r. Series appear on first use,
// as before: a surface never probed has none.
func NewProbeSeries(r Run) *ProbeSeries {
	return &ProbeSeries{run: r, probes: map[probeKey]prometheus.Counter{}, outcomes: map[string]prometheus.Counter{},
		durations: map[string]prometheus.Observer{}, lag: ProbeSchedulingLag.WithLabelValues(r.Namespace, r.Corpus)}
}

// ObserveLag records how late a probe started.
func (s *ProbeSeries) ObserveLag(lag time.Duration) {
	s.lag.Observe(max(lag, 0).Seconds())
}

// ObserveProbe counts one probe for the corpus by surface, role and
// outcome, and for the canary by outcome. Durations are recorded for the
// persona's probes only, so they describe the measured path.
func (s *ProbeSeries) ObserveProbe(surface, role, outcome string, d time.Duration) {
	corpus, canary, duration := s.series(surface, role, outcome)
	corpus.Inc()
	canary.Inc()
	if duration != nil {
		duration.Observe(d.Seconds())
	}
}

func (s *ProbeSeries) series(surface, role, outcome string) (corpus, canary prometheus.Counter, _ prometheus.Observer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := probeKey{surface, role, outcome}
	corpus, ok := s.probes[key]
	if !ok {
		corpus = ProbesTotal.WithLabelValues(s.run.Namespace, s.run.Corpus, surface, role, outcome)
		s.probes[key] = corpus
	}
	canary, ok = s.outcomes[outcome]
	if !ok {
		canary = CanaryProbesTotal.WithLabelValues(s.run.Namespace, s.run.Canary, s.run.Corpus, outcome)
		s.outcomes[outcome] = canary
	}
	if role != RolePersona {
		return corpus, canary, nil
	}
	duration, ok := s.durations[surface]
	if !ok {
		duration = ProbeDuration.WithLabelValues(s.run.Namespace, s.run.Corpus, surface)
		s.durations[surface] = duration
	}
	return corpus, canary, duration
}

// forgetRunProbes deletes the canary's probe counts when its run
// finishes: nothing probes between runs, so they would only cost every
// scrape samples that cannot change. The run's loop has stopped by then;
// the next run's loop creates them again (rate() and increase() take the
// restart from zero as a counter reset). Runs made by hand share the
// canary="" series of their namespace and corpus and may overlap, so
// theirs stay: a live loop's cached counter must never be detached.
func forgetRunProbes(r Run) {
	if r.Canary == "" {
		return
	}
	CanaryProbesTotal.DeletePartialMatch(prometheus.Labels{LabelNamespace: r.Namespace, LabelCanary: r.Canary})
}
