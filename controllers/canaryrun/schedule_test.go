package canaryrun

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
	"github.com/ragcanary/ragcanary/internal/probe"
)

func TestProbeSchedule(t *testing.T) {
	share := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	requested, acknowledged := share.Add(time.Minute), share.Add(time.Minute+time.Second)
	micro := func(t time.Time) *metav1.MicroTime { return &metav1.MicroTime{Time: t} }
	corpus := &v1alpha1.Corpus{Spec: v1alpha1.CorpusSpec{Freshness: v1alpha1.Freshness{
		ExclusionSLO: objects.DurationPtr(2 * time.Minute), CacheInvalidationSLO: objects.DurationPtr(3 * time.Minute)}}}
	run := func(p v1alpha1.Probing) *v1alpha1.CanaryRun {
		r := &v1alpha1.CanaryRun{Spec: v1alpha1.CanaryRunSpec{CanarySpec: v1alpha1.CanarySpec{Probing: p}}}
		r.Status.ShareRequestedTime, r.Status.RevokeRequestedTime, r.Status.RevokeAcknowledgedTime = micro(share), micro(requested), micro(acknowledged)
		return r
	}
	adaptive := v1alpha1.Probing{Schedule: v1alpha1.ScheduleAdaptive, Precision: "5%", MaxInterval: objects.Duration(time.Hour),
		VisibilityTimeout: objects.Duration(10 * time.Minute), ExclusionTimeout: objects.Duration(30 * time.Minute),
		Surfaces: []v1alpha1.Surface{v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer}}
	tests := []struct {
		name  string
		run   *v1alpha1.CanaryRun
		stage probe.Stage
		// want is the resolved schedule.
		want probe.Schedule
	}{
		{name: "Fixed is the zero schedule", run: run(v1alpha1.Probing{Schedule: v1alpha1.ScheduleFixed}), stage: probe.StageExclusion},
		{name: "unset is Fixed", run: run(v1alpha1.Probing{}), stage: probe.StageExclusion},
		{name: "visibility counts from the share request to its timeout", run: run(adaptive), stage: probe.StageVisibility,
			want: probe.Schedule{Adaptive: true, Precision: 0.05, MaxInterval: time.Hour, Start: share, Deadlines: []time.Time{share.Add(10 * time.Minute)}}},
		{name: "exclusion: each surface's SLO from the request, the timeout from the acknowledgement", run: run(adaptive), stage: probe.StageExclusion,
			want: probe.Schedule{Adaptive: true, Precision: 0.05, MaxInterval: time.Hour, Start: requested,
				Deadlines: []time.Time{requested.Add(2 * time.Minute), requested.Add(3 * time.Minute), acknowledged.Add(30 * time.Minute)}}},
		{name: "defaults: 10% and 10m", run: run(v1alpha1.Probing{Schedule: v1alpha1.ScheduleAdaptive, VisibilityTimeout: objects.Duration(time.Minute)}), stage: probe.StageVisibility,
			want: probe.Schedule{Adaptive: true, Precision: 0.1, MaxInterval: 10 * time.Minute, Start: share, Deadlines: []time.Time{share.Add(time.Minute)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := probeSchedule(tc.run, corpus, tc.stage)
			if got.Adaptive != tc.want.Adaptive || got.Precision != tc.want.Precision || got.MaxInterval != tc.want.MaxInterval ||
				!got.Start.Equal(tc.want.Start) || !slices.EqualFunc(got.Deadlines, tc.want.Deadlines, time.Time.Equal) {
				t.Fatalf("probeSchedule = %+v, want %+v", got, tc.want)
			}
		})
	}
}
