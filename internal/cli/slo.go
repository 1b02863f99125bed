package cli

import (
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/format"
	"github.com/ragcanary/ragcanary/internal/measure"
)

// SurfaceSLO is the objective of a surface, by the one rule the
// controllers judge runs with (measure.JudgedSLO): the exclusion SLO, or a
// content-freshness canary's content-freshness SLO.
func SurfaceSLO(spec *v1alpha1.CanarySpec, corpus *v1alpha1.Corpus, s v1alpha1.Surface) time.Duration {
	slo, _ := measure.JudgedSLO(spec, corpus, s)
	return slo
}

// AgainstSLO writes an interval next to its objective with the relation
// the bounds establish, and no more: "1.2s–1.7s ≤ 30s" (met), "40s–41s > 30s"
// (certainly breached), "20s–40s ≰ 30s" (the upper bound is over: breached
// by the SLO rule, though exclusion may have come in time), ">30m > 5m"
// (still visible past the SLO) and "? vs 30s" when nothing relates them.
func AgainstSLO(b *v1alpha1.ExclusionBounds, slo time.Duration) string {
	return format.Interval(b) + " " + relation(b, slo) + " " + format.HumanDuration(slo)
}

func relation(b *v1alpha1.ExclusionBounds, slo time.Duration) string {
	switch {
	case b == nil:
		return "vs"
	case b.Lower != nil && b.Lower.Duration > slo:
		return ">"
	case b.Upper == nil:
		return "vs"
	case b.Upper.Duration <= slo:
		return "≤"
	}
	return "≰"
}

// RunSLO is what a run was judged by on a surface: the SLO its status
// kept with the verdict, else (a run still measuring) the rule applied to
// the current spec and corpus.
func RunSLO(run *v1alpha1.CanaryRun, corpus *v1alpha1.Corpus, m *v1alpha1.SurfaceMeasurement) time.Duration {
	if m != nil && m.SLO != nil {
		return m.SLO.Duration
	}
	return SurfaceSLO(&run.Spec.CanarySpec, corpus, m.Surface)
}
