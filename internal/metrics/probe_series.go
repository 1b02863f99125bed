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
// Forget, or its counts land in series no longer exported; the canary's
// finalizer stops its runs first.
type ProbeSeries struct {
	run Run
	lag prometheus.Observer

	mu        sync.Mutex
	probes    map[probeKey]prometheus.Counter
	durations map[string]prometheus.Observer
}

type probeKey struct{ surface, role, outcome string }

// NewProbeSeries returns the probe series of r. Series appear on first use,
// as before: a surface never probed has none.
func NewProbeSeries(r Run) *ProbeSeries {
	return &ProbeSeries{run: r, probes: map[probeKey]prometheus.Counter{}, durations: map[string]prometheus.Observer{},
		lag: ProbeSchedulingLag.WithLabelValues(r.Namespace, r.Corpus)}
}

// ObserveLag records how late a probe started.
func (s *ProbeSeries) ObserveLag(lag time.Duration) {
	s.lag.Observe(max(lag, 0).Seconds())
}

// ObserveProbe counts one probe by surface, role and outcome. Durations are
// recorded for the persona's probes only, so they describe the measured path.
func (s *ProbeSeries) ObserveProbe(surface, role, outcome string, d time.Duration) {
	counter, duration := s.series(surface, role, outcome)
	counter.Inc()
	if duration != nil {
		duration.Observe(d.Seconds())
	}
}

func (s *ProbeSeries) series(surface, role, outcome string) (prometheus.Counter, prometheus.Observer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := probeKey{surface, role, outcome}
	counter, ok := s.probes[key]
	if !ok {
		counter = ProbesTotal.WithLabelValues(s.run.Namespace, s.run.Canary, s.run.Corpus, surface, role, outcome)
		s.probes[key] = counter
	}
	if role != RolePersona {
		return counter, nil
	}
	duration, ok := s.durations[surface]
	if !ok {
		duration = ProbeDuration.WithLabelValues(s.run.Namespace, s.run.Corpus, surface)
		s.durations[surface] = duration
	}
	return counter, duration
}
