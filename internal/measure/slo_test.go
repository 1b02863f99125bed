package measure

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// TestSurfaceSLO: the exclusion SLO's precedence, with the field that
// decided it — the CRD default, the corpus, the canary's override, and the
// corpus's per-surface SLOs for answers and in-flight streams, which win
// over the override.
func TestSurfaceSLO(t *testing.T) {
	d := func(x time.Duration) *metav1.Duration { return &metav1.Duration{Duration: x} }
	corpus := &v1alpha1.Corpus{Spec: v1alpha1.CorpusSpec{Freshness: v1alpha1.Freshness{
		ExclusionSLO: d(time.Minute), CacheInvalidationSLO: d(2 * time.Minute), PostRevocationDeliverySLO: d(3 * time.Second)}}}
	override := &v1alpha1.CanarySpec{ExclusionSLO: d(10 * time.Second)}
	plain := &v1alpha1.CanarySpec{}
	for _, tc := range []struct {
		name   string
		spec   *v1alpha1.CanarySpec
		corpus *v1alpha1.Corpus
		s      v1alpha1.Surface
		want   time.Duration
		source string
	}{
		{"corpus gone: the CRD default", plain, nil, v1alpha1.SurfaceSearch, 5 * time.Minute, "default (5m; corpus not found)"},
		{"corpus without an SLO: the CRD default", plain, &v1alpha1.Corpus{}, v1alpha1.SurfaceSearch, 5 * time.Minute, "default (5m)"},
		{"corpus", plain, corpus, v1alpha1.SurfaceSearch, time.Minute, "corpus freshness.exclusionSLO"},
		{"canary override", override, corpus, v1alpha1.SurfaceSearch, 10 * time.Second, "run spec.exclusionSLO"},
		{"answers: cache invalidation SLO over the override", override, corpus, v1alpha1.SurfaceAnswer, 2 * time.Minute, "corpus freshness.cacheInvalidationSLO"},
		{"in flight: post-revocation delivery SLO", override, corpus, v1alpha1.SurfaceInFlight, 3 * time.Second, "corpus freshness.postRevocationDeliverySLO"},
	} {
		if got, source := SurfaceSLO(tc.spec, tc.corpus, tc.s); got != tc.want || source != tc.source {
			t.Errorf("%s: %s (%s), want %s (%s)", tc.name, got, source, tc.want, tc.source)
		}
	}
}
