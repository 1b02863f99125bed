package canaryrun

import (
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/probe"
)

// probeSchedule resolves spec.probing's schedule for a stage. Adaptive
// counts elapsed time from the request the stage's bounds count from (the
// share for visibility, the revocation for exclusion) and ends a probe just
// before each instant a verdict is decided at: every probed surface's SLO
// deadline and the stage timeout. Both are read from status, so a loop
// restarted after an operator restart keeps the same schedule.
func probeSchedule(run *v1alpha1.CanaryRun, corpus *v1alpha1.Corpus, stage probe.Stage) probe.Schedule {
	p := run.Spec.Probing
	if p.Schedule != v1alpha1.ScheduleAdaptive {
		return probe.Schedule{}
	}
	precision, err := probe.ParsePrecision(p.Precision)
	if err != nil {
		// The CRD rejects such a value; an object stored before it did is
		// probed at the default rather than not at all.
		precision = probe.DefaultPrecision
	}
	s := probe.Schedule{Adaptive: true, Precision: precision, MaxInterval: maxProbeInterval(run)}
	switch stage {
	case probe.StageVisibility:
		if t := run.Status.ShareRequestedTime; t != nil {
			s.Start = t.Time
			s.Deadlines = []time.Time{t.Add(visibilityTimeout(run))}
		}
	case probe.StageExclusion:
		if t := run.Status.RevokeRequestedTime; t != nil {
			s.Start = t.Time
			for _, surface := range probingSurfaces(run) {
				s.Deadlines = append(s.Deadlines, t.Add(exclusionSLO(run, corpus, surface)))
			}
		}
		if t := run.Status.RevokeAcknowledgedTime; t != nil {
			s.Deadlines = append(s.Deadlines, t.Add(exclusionTimeout(run)))
		}
	}
	return s
}

// maxProbeInterval is spec.probing.maxInterval, its CRD default when unset.
func maxProbeInterval(run *v1alpha1.CanaryRun) time.Duration {
	if d := run.Spec.Probing.MaxInterval.Duration; d > 0 {
		return d
	}
	return 10 * time.Minute
}
