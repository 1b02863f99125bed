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
	last := &v1alpha1.RunSummary{Surfaces: []v1alpha1.SurfaceSummary{{Surface: v1alpha1.SurfaceSearch,
		Bounds:           &v1alpha1.ExclusionBounds{Lower: d(1), Upper: d(2)},
		ContentFreshness: &v1alpha1.ExclusionBounds{Lower: d(3), Upper: d(4)}}}}
	got := summarySurfaces(spec, corpus, last)
	if len(got) != 1 {
		t.Fatalf("surfaces %+v, want Search only", got)
	}
	if got[0].SLOSeconds != 20 || got[0].LowerSeconds == nil || *got[0].LowerSeconds != 3 || *got[0].UpperSeconds != 4 {
		t.Errorf("search shows %+v, want freshness 3s–4s against the 20s content-freshness SLO", got[0])
	}
}

// TestSummaryShowsTheJudgedSLO: a summary that kept the SLO its run was
// judged by is shown against that, not against the corpus as it is now.
func TestSummaryShowsTheJudgedSLO(t *testing.T) {
	d := func(s float64) *metav1.Duration {
		return &metav1.Duration{Duration: time.Duration(s * float64(time.Second))}
	}
	spec := &v1alpha1.CanarySpec{}
	changed := &v1alpha1.Corpus{Spec: v1alpha1.CorpusSpec{Freshness: v1alpha1.Freshness{ExclusionSLO: d(5)}}}
	last := &v1alpha1.RunSummary{Surfaces: []v1alpha1.SurfaceSummary{{Surface: v1alpha1.SurfaceSearch,
		Bounds: &v1alpha1.ExclusionBounds{Lower: d(1), Upper: d(2)}, SLO: d(30), SLOSource: "corpus freshness.exclusionSLO"}}}
	got := summarySurfaces(spec, changed, last)
	if len(got) != 1 || got[0].SLOSeconds != 30 {
		t.Errorf("surfaces %+v, want Search against the 30s it was judged by", got)
	}
	// A surface beyond the known ones is shown too, after them.
	last.Surfaces = append(last.Surfaces, v1alpha1.SurfaceSummary{Surface: "Stream", Bounds: &v1alpha1.ExclusionBounds{Lower: d(1)}})
	if got := summarySurfaces(spec, changed, last); len(got) != 2 || got[1].Surface != "Stream" {
		t.Errorf("surfaces %+v, want Search then Stream", got)
	}
}
