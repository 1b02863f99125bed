package cli

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// TestContentCanaryShowsFreshness: the fleet view of a content-freshness
// canary shows each surface's freshness against the content-freshness SLO,
// never the old content's exclusion against the exclusion SLO.
func TestContentCanaryShowsFreshness(t *testing.T) {
	d := func(s float64) *metav1.Duration {
		return &metav1.Duration{Duration: time.Duration(s * float64(time.Second))}
	}
	spec := &v1alpha1.CanarySpec{Revocation: v1alpha1.Revocation{Method: v1alpha1.RevokeUpdateContent},
		Probing: v1alpha1.Probing{Surfaces: []v1alpha1.Surface{v1alpha1.SurfaceSearch}}}
	corpus := &v1alpha1.Corpus{Spec: v1alpha1.CorpusSpec{Freshness: v1alpha1.Freshness{
		ExclusionSLO: d(1), ContentFreshnessSLO: d(20)}}}
	last := &v1alpha1.RunSummary{
		TimeToExclusion:  &v1alpha1.ExclusionBounds{Lower: d(1), Upper: d(2)},
		ContentFreshness: []v1alpha1.SurfaceBounds{{Surface: v1alpha1.SurfaceSearch, Bounds: &v1alpha1.ExclusionBounds{Lower: d(3), Upper: d(4)}}},
	}
	got := summarySurfaces(spec, corpus, last, nil)
	if len(got) != 1 {
		t.Fatalf("surfaces %+v, want Search only", got)
	}
	if got[0].SLOSeconds != 20 || got[0].LowerSeconds == nil || *got[0].LowerSeconds != 3 || *got[0].UpperSeconds != 4 {
		t.Errorf("search shows %+v, want freshness 3s–4s against the 20s content-freshness SLO", got[0])
	}
}
