package probe

import "github.com/ragcanary/ragcanary/api/v1alpha1"

// DefaultLimit applies when neither a corpus nor the operator sets a limit.
var DefaultLimit = Limit{RequestsPerSecond: 10, Burst: 20}

// CorpusLimit is the corpus's own rate limit, with def for any value the
// corpus leaves unset and DefaultLimit where def is unset too, so a caller
// built without defaults never ends up at one request per second by accident.
func CorpusLimit(c *v1alpha1.Corpus, def Limit) Limit {
	if def.RequestsPerSecond <= 0 {
		def.RequestsPerSecond = DefaultLimit.RequestsPerSecond
	}
	if def.Burst <= 0 {
		def.Burst = DefaultLimit.Burst
	}
	limit := Limit{RequestsPerSecond: c.Spec.RateLimit.RequestsPerSecond, Burst: c.Spec.RateLimit.Burst}
	if limit.RequestsPerSecond <= 0 {
		limit.RequestsPerSecond = def.RequestsPerSecond
	}
	if limit.Burst <= 0 {
		limit.Burst = def.Burst
	}
	return limit
}
