package cli

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// TestAgainstSLO: the relation shown is only what the bounds establish.
func TestAgainstSLO(t *testing.T) {
	const none = -1
	slo := 30 * time.Second
	for _, tc := range []struct {
		name string
		b    *v1alpha1.ExclusionBounds
		want string
	}{
		{"met", bounds(1200*time.Millisecond, 1700*time.Millisecond), "1.2s–1.7s ≤ 30s"},
		{"upper exactly at the SLO is met", bounds(29*time.Second, 30*time.Second), "29s–30s ≤ 30s"},
		{"certain breach", bounds(40*time.Second, 41*time.Second), "40s–41s > 30s"},
		{"upper over, lower within: not ≤, not certainly >", bounds(20*time.Second, 40*time.Second), "20s–40s ≰ 30s"},
		{"still visible past the SLO", bounds(2*time.Minute, none), ">2m > 30s"},
		{"errors: lower within, no upper", bounds(5*time.Second, none), ">5s vs 30s"},
		{"nothing established", nil, "? vs 30s"},
	} {
		if got := AgainstSLO(tc.b, slo); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestSurfaceSLO follows the controller's rule: canary override, else the
// corpus, and the corpus's cache-invalidation SLO for answers.
func TestSurfaceSLO(t *testing.T) {
	d := func(x time.Duration) *metav1.Duration { return &metav1.Duration{Duration: x} }
	corpus := &v1alpha1.Corpus{Spec: v1alpha1.CorpusSpec{Freshness: v1alpha1.Freshness{ExclusionSLO: d(time.Minute), CacheInvalidationSLO: d(2 * time.Minute)}}}
	override := &v1alpha1.CanarySpec{ExclusionSLO: d(10 * time.Second)}
	plain := &v1alpha1.CanarySpec{}
	for _, tc := range []struct {
		name   string
		spec   *v1alpha1.CanarySpec
		corpus *v1alpha1.Corpus
		s      v1alpha1.Surface
		want   time.Duration
	}{
		{"corpus gone: the CRD default", plain, nil, v1alpha1.SurfaceSearch, 5 * time.Minute},
		{"corpus", plain, corpus, v1alpha1.SurfaceSearch, time.Minute},
		{"canary override", override, corpus, v1alpha1.SurfaceSearch, 10 * time.Second},
		{"answers: cache invalidation SLO", override, corpus, v1alpha1.SurfaceAnswer, 2 * time.Minute},
	} {
		if got := SurfaceSLO(tc.spec, tc.corpus, tc.s); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
