package controllers

import (
	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/probe"
)

// limiterKey names a corpus's shared token bucket: canary probes and suite
// executions against the same corpus draw from one bucket.
func limiterKey(namespace, corpus string) string {
	return namespace + "/" + corpus
}

// corpusRateLimit is the corpus's own limit, with the operator's default for
// any value the corpus leaves unset. A reconciler built without defaults
// gets DefaultSettings, never a limit of one request per second by accident.
func corpusRateLimit(c *v1alpha1.Corpus, def probe.Limit) probe.Limit {
	fallback := DefaultSettings().RateLimit
	if def.RequestsPerSecond <= 0 {
		def.RequestsPerSecond = fallback.RequestsPerSecond
	}
	if def.Burst <= 0 {
		def.Burst = fallback.Burst
	}
	limit := probe.Limit{RequestsPerSecond: c.Spec.RateLimit.RequestsPerSecond, Burst: c.Spec.RateLimit.Burst}
	if limit.RequestsPerSecond <= 0 {
		limit.RequestsPerSecond = def.RequestsPerSecond
	}
	if limit.Burst <= 0 {
		limit.Burst = def.Burst
	}
	return limit
}
