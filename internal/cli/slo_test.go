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

// TestRunSLO: what the plugin adds to measure's SLO rule. A run is shown
// against the SLO its status kept with the verdict, not whatever the spec
// and corpus say today; a run still measuring falls back to the judged rule,
// which for an UpdateContent canary is the content-freshness SLO, not the
// exclusion SLO. The rule's own precedence is measure's to test.
func TestRunSLO(t *testing.T) {
	d := func(x time.Duration) *metav1.Duration { return &metav1.Duration{Duration: x} }
	corpus := &v1alpha1.Corpus{Spec: v1alpha1.CorpusSpec{Freshness: v1alpha1.Freshness{
		ExclusionSLO: d(time.Minute), ContentFreshnessSLO: d(7 * time.Second)}}}
	run := func(m v1alpha1.RevocationMethod) *v1alpha1.CanaryRun {
		r := &v1alpha1.CanaryRun{}
		r.Spec.Revocation.Method = m
		return r
	}
	for _, tc := range []struct {
		name string
		run  *v1alpha1.CanaryRun
		// m is the run's measurement of the surface shown.
		m    *v1alpha1.SurfaceMeasurement
		want time.Duration
	}{
		{"judged: the SLO kept in status, though the corpus now says 1m", run(v1alpha1.RevokeRemoveGrant),
			&v1alpha1.SurfaceMeasurement{Surface: v1alpha1.SurfaceSearch, SLO: d(30 * time.Second)}, 30 * time.Second},
		{"measuring: the corpus's exclusion SLO", run(v1alpha1.RevokeRemoveGrant),
			&v1alpha1.SurfaceMeasurement{Surface: v1alpha1.SurfaceSearch}, time.Minute},
		{"measuring an UpdateContent run: the content-freshness SLO", run(v1alpha1.RevokeUpdateContent),
			&v1alpha1.SurfaceMeasurement{Surface: v1alpha1.SurfaceSearch}, 7 * time.Second},
	} {
		if got := RunSLO(tc.run, corpus, tc.m); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
