package measure

import (
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// DefaultExclusionSLO is the CRD default of freshness.exclusionSLO, used
// when the corpus cannot be read.
const DefaultExclusionSLO = 5 * time.Minute

// SurfaceSLO is the exclusion objective a surface is judged by: the
// canary's override, else the corpus's, and for answers the corpus's
// cache-invalidation SLO when set. corpus is nil when it cannot be read.
// source says which field decided, for reports. The controllers, the
// metrics collector, the kubectl plugin and the evidence report all use this
// one rule.
func SurfaceSLO(spec *v1alpha1.CanarySpec, corpus *v1alpha1.Corpus, s v1alpha1.Surface) (slo time.Duration, source string) {
	slo, source = DefaultExclusionSLO, "default (5m)"
	if corpus == nil {
		source = "default (5m; corpus not found)"
	}
	if corpus != nil && corpus.Spec.Freshness.ExclusionSLO != nil {
		slo, source = corpus.Spec.Freshness.ExclusionSLO.Duration, "corpus freshness.exclusionSLO"
	}
	if spec.ExclusionSLO != nil {
		slo, source = spec.ExclusionSLO.Duration, "run spec.exclusionSLO"
	}
	if s == v1alpha1.SurfaceAnswer && corpus != nil && corpus.Spec.Freshness.CacheInvalidationSLO != nil {
		slo, source = corpus.Spec.Freshness.CacheInvalidationSLO.Duration, "corpus freshness.cacheInvalidationSLO"
	}
	if s == v1alpha1.SurfaceInFlight && corpus != nil && corpus.Spec.Freshness.PostRevocationDeliverySLO != nil {
		slo, source = corpus.Spec.Freshness.PostRevocationDeliverySLO.Duration, "corpus freshness.postRevocationDeliverySLO"
	}
	return slo, source
}
