package metrics

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	rctestutil "github.com/ragcanary/ragcanary/internal/dev/testutil"
)

// scrapeTime is a Friday, 30 s before a 6-hourly cron time: a period taken
// from now would be 30 s.
var scrapeTime = time.Date(2026, 3, 6, 5, 59, 30, 0, time.UTC)

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func at(unix int64) *metav1.Time { return &metav1.Time{Time: time.Unix(unix, 0)} }

func ready(status metav1.ConditionStatus, reason string) []metav1.Condition {
	return []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: status, Reason: reason}}
}

func corpus(name string, slo time.Duration) *v1alpha1.Corpus {
	return &v1alpha1.Corpus{ObjectMeta: metav1.ObjectMeta{Namespace: "rag", Name: name},
		Spec: v1alpha1.CorpusSpec{Freshness: v1alpha1.Freshness{ExclusionSLO: dur(slo)}}}
}

// canary is a ready canary on corpus kb running every hour, created at
// Unix time 100; mutate shapes it.
func canary(name string, mutate func(*v1alpha1.RevocationCanary)) *v1alpha1.RevocationCanary {
	c := &v1alpha1.RevocationCanary{
		ObjectMeta: metav1.ObjectMeta{Namespace: "rag", Name: name, CreationTimestamp: *at(100)},
		Spec: v1alpha1.RevocationCanarySpec{
			Scheduling: v1alpha1.Scheduling{Schedule: v1alpha1.Schedule{Every: dur(time.Hour)}},
			CanarySpec: v1alpha1.CanarySpec{CorpusRef: v1alpha1.LocalObjectReference{Name: "kb"}},
		},
		Status: v1alpha1.RevocationCanaryStatus{Conditions: ready(metav1.ConditionTrue, "Scheduled")},
	}
	if mutate != nil {
		mutate(c)
	}
	return c
}

// run is a CanaryRun on corpus kb; canaryName "" makes it a hand-made run.
func run(name, canaryName string, phase v1alpha1.CanaryPhase, completed *metav1.Time, surfaces ...v1alpha1.SurfaceMeasurement) *v1alpha1.CanaryRun {
	r := &v1alpha1.CanaryRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: "rag", Name: name},
		Spec:       v1alpha1.CanaryRunSpec{CanarySpec: v1alpha1.CanarySpec{CorpusRef: v1alpha1.LocalObjectReference{Name: "kb"}}},
		Status:     v1alpha1.CanaryRunStatus{Phase: phase, CompletionTime: completed, Surfaces: surfaces},
	}
	if canaryName != "" {
		r.Labels = map[string]string{"ragcanary.dev/canary": canaryName}
	}
	return r
}

func newReader(t *testing.T, funcs *interceptor.Funcs, objs ...client.Object) client.WithWatch {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...)
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	return b.Build()
}

// fixture is a fleet covering each rule of the derived gauges. Nothing was
// ever pushed for it: everything exported comes from the objects.
func fixture() []client.Object {
	lastRun := &v1alpha1.RunSummary{
		Name: "hourly-1", Verdict: v1alpha1.VerdictSLOMet, CompletionTime: at(1000),
		Surfaces: []v1alpha1.SurfaceSummary{
			{Surface: v1alpha1.SurfaceSearch, Bounds: &v1alpha1.ExclusionBounds{Lower: dur(10 * time.Second), Upper: dur(12 * time.Second)}},
			// The answer surface never confirmed exclusion: a lower bound only.
			{Surface: v1alpha1.SurfaceAnswer, Bounds: &v1alpha1.ExclusionBounds{Lower: dur(50 * time.Second)}},
			// The conversation surface breached: RagcanaryRevocationSLOBreached
			// reads these series for every surface.
			{Surface: v1alpha1.SurfaceConversation, Bounds: &v1alpha1.ExclusionBounds{Lower: dur(70 * time.Second), Upper: dur(75 * time.Second)}},
		},
	}
	return []client.Object{
		corpus("kb", time.Minute),
		corpus("old", time.Minute),
		// Ready, with a finished run whose object the history limit removed.
		canary("hourly", func(c *v1alpha1.RevocationCanary) { c.Status.LastRun = lastRun }),
		// Suspended: its corpus's SLO still applies, but it never goes stale.
		canary("paused", func(c *v1alpha1.RevocationCanary) {
			c.Spec.Suspend = ptr.To(true)
			c.Status.Conditions = ready(metav1.ConditionTrue, "Suspended")
		}),
		// Not ready (a Persona is missing): it does not go stale, but its
		// last run stays reported.
		canary("broken", func(c *v1alpha1.RevocationCanary) {
			c.Status.Conditions = ready(metav1.ConditionFalse, "PersonaNotFound")
			c.Status.LastRun = &v1alpha1.RunSummary{Name: "gone", CompletionTime: at(900)}
		}),
		// Moved to corpus kb after its last run measured corpus old: the
		// run's series keep the corpus it measured. Its own SLO differs
		// from the corpus's, so it has its own SLO series.
		canary("moved", func(c *v1alpha1.RevocationCanary) {
			c.Spec.ExclusionSLO = dur(30 * time.Second)
			c.Status.LastRun = &v1alpha1.RunSummary{Name: "moved-1", CompletionTime: at(800)}
		}),
		func() client.Object {
			r := run("moved-1", "moved", v1alpha1.PhaseSucceeded, at(800))
			r.Spec.CorpusRef.Name = "old"
			return r
		}(),
		// Streams in flight delivered canary content 2.5 s after the
		// request; a second canary's delivery was not established: no series.
		canary("streaming", func(c *v1alpha1.RevocationCanary) {
			c.Spec.Probing.Surfaces = []v1alpha1.Surface{v1alpha1.SurfaceSearch, v1alpha1.SurfaceInFlight}
			c.Status.LastRun = &v1alpha1.RunSummary{Name: "streaming-1", CompletionTime: at(700),
				InFlight: &v1alpha1.InFlightSummary{PostRevocationDelivery: dur(2500 * time.Millisecond), CanaryBytesAfterRequest: 700}}
		}),
		canary("streamfail", func(c *v1alpha1.RevocationCanary) {
			c.Status.Conditions = ready(metav1.ConditionFalse, "PersonaNotFound")
			c.Status.LastRun = &v1alpha1.RunSummary{Name: "streamfail-1", CompletionTime: at(600), InFlight: &v1alpha1.InFlightSummary{Delivery: "?"}}
		}),
		// Six-hourly cron, never run: stale three periods of 6 h (not the
		// 30 s to the next time) after its creation.
		canary("cron", func(c *v1alpha1.RevocationCanary) {
			c.Spec.Schedule = v1alpha1.Schedule{Cron: "0 */6 * * *"}
		}),
		// The only canary of corpus quiet, being deleted: the corpus has
		// no SLO series either.
		corpus("quiet", time.Minute),
		canary("quitting", func(c *v1alpha1.RevocationCanary) {
			c.Spec.CorpusRef.Name = "quiet"
			c.Finalizers = []string{"ragcanary.dev/runs"}
			c.DeletionTimestamp = at(2000)
		}),
		// Being deleted: nothing, whatever its status says.
		canary("leaving", func(c *v1alpha1.RevocationCanary) {
			c.Finalizers = []string{"ragcanary.dev/runs"}
			c.DeletionTimestamp = at(2000)
			c.Status.LastRun = lastRun
		}),
		// Hand-made runs on kb: the newest finished one is reported under
		// canary=""; the running one and the canary's own run are not.
		run("manual-a", "", v1alpha1.PhaseSucceeded, at(1100),
			v1alpha1.SurfaceMeasurement{Surface: v1alpha1.SurfaceSearch, Bounds: &v1alpha1.ExclusionBounds{Lower: dur(time.Second), Upper: dur(2 * time.Second)}}),
		run("manual-b", "", v1alpha1.PhaseFailed, at(1200),
			v1alpha1.SurfaceMeasurement{Surface: v1alpha1.SurfaceSearch, Bounds: &v1alpha1.ExclusionBounds{Lower: dur(300 * time.Second)}}),
		run("manual-c", "", v1alpha1.PhaseAwaitingExclusion, nil),
		run("hourly-2", "hourly", v1alpha1.PhaseSucceeded, at(5000)),
		&v1alpha1.EvalSuite{ObjectMeta: metav1.ObjectMeta{Namespace: "rag", Name: "iso"},
			Spec:   v1alpha1.EvalSuiteSpec{CorpusRef: v1alpha1.LocalObjectReference{Name: "kb"}},
			Status: v1alpha1.EvalSuiteStatus{LastRun: &v1alpha1.SuiteRunSummary{Name: "iso-1", Passed: false, CompletionTime: at(1300)}}},
		// A suite that never finished a run has no verdict series at all.
		&v1alpha1.EvalSuite{ObjectMeta: metav1.ObjectMeta{Namespace: "rag", Name: "new"},
			Spec: v1alpha1.EvalSuiteSpec{CorpusRef: v1alpha1.LocalObjectReference{Name: "kb"}}},
	}
}

const wantSeries = `
# HELP ragcanary_canary_stale_after_timestamp_seconds Unix time after which the canary has gone three schedule periods without completing a run, counted from its last run's completion or, before any, from its creation; absent while the canary is suspended or not ready.
# TYPE ragcanary_canary_stale_after_timestamp_seconds gauge
ragcanary_canary_stale_after_timestamp_seconds{canary="cron",corpus="kb",namespace="rag"} 64900
ragcanary_canary_stale_after_timestamp_seconds{canary="hourly",corpus="kb",namespace="rag"} 11800
ragcanary_canary_stale_after_timestamp_seconds{canary="moved",corpus="kb",namespace="rag"} 11600
ragcanary_canary_stale_after_timestamp_seconds{canary="streaming",corpus="kb",namespace="rag"} 11500
# HELP ragcanary_canary_surface_slo_seconds Exclusion SLO the canary's runs are judged by on a probed surface, only where it differs from corpus_surface_slo_seconds (the canary sets exclusionSLO); absent for content-freshness (UpdateContent) canaries.
# TYPE ragcanary_canary_surface_slo_seconds gauge
ragcanary_canary_surface_slo_seconds{canary="moved",corpus="kb",namespace="rag",surface="Search"} 30
# HELP ragcanary_corpus_surface_slo_seconds Exclusion SLO a canary of the corpus is judged by on a surface its canaries probe, unless canary_surface_slo_seconds gives the canary its own.
# TYPE ragcanary_corpus_surface_slo_seconds gauge
ragcanary_corpus_surface_slo_seconds{corpus="kb",namespace="rag",surface="InFlight"} 60
ragcanary_corpus_surface_slo_seconds{corpus="kb",namespace="rag",surface="Search"} 60
# HELP ragcanary_last_completed_run_timestamp_seconds Unix time the newest finished CanaryRun created by hand (canary="") finished, per namespace and corpus; a canary's runs are in canary_stale_after_timestamp_seconds.
# TYPE ragcanary_last_completed_run_timestamp_seconds gauge
ragcanary_last_completed_run_timestamp_seconds{canary="",corpus="kb",namespace="rag"} 1200
# HELP ragcanary_last_run_exclusion_lower_bound_seconds Lower bound of time-to-exclusion of the canary's last finished run, per surface, when it is censored (no upper bound); absent when the upper bound was established.
# TYPE ragcanary_last_run_exclusion_lower_bound_seconds gauge
ragcanary_last_run_exclusion_lower_bound_seconds{canary="",corpus="kb",namespace="rag",surface="Search"} 300
ragcanary_last_run_exclusion_lower_bound_seconds{canary="hourly",corpus="kb",namespace="rag",surface="Answer"} 50
# HELP ragcanary_last_run_exclusion_upper_bound_seconds Upper bound of time-to-exclusion of the canary's last finished run, per surface; absent when exclusion was not established.
# TYPE ragcanary_last_run_exclusion_upper_bound_seconds gauge
ragcanary_last_run_exclusion_upper_bound_seconds{canary="hourly",corpus="kb",namespace="rag",surface="Conversation"} 75
ragcanary_last_run_exclusion_upper_bound_seconds{canary="hourly",corpus="kb",namespace="rag",surface="Search"} 12
# HELP ragcanary_last_run_post_revocation_canary_bytes Content bytes streams already in flight delivered after the revocation request, up to their last canary-bearing chunk, in the canary's last finished run (InFlight surface); absent when not established.
# TYPE ragcanary_last_run_post_revocation_canary_bytes gauge
ragcanary_last_run_post_revocation_canary_bytes{canary="streaming",corpus="kb",namespace="rag"} 700
# HELP ragcanary_last_run_post_revocation_delivery_seconds Time from the revocation request to the last canary-bearing chunk that streams already in flight delivered, in the canary's last finished run (InFlight surface); 0 when none arrived after the request, absent when not established.
# TYPE ragcanary_last_run_post_revocation_delivery_seconds gauge
ragcanary_last_run_post_revocation_delivery_seconds{canary="streaming",corpus="kb",namespace="rag"} 2.5
# HELP ragcanary_suite_last_completed_run_timestamp_seconds Unix time the suite's last run finished.
# TYPE ragcanary_suite_last_completed_run_timestamp_seconds gauge
ragcanary_suite_last_completed_run_timestamp_seconds{corpus="kb",namespace="rag",suite="iso"} 1300
# HELP ragcanary_suite_last_run_passed 1 when the suite's latest finished run passed every gate, else 0; what the gate-failed alert watches.
# TYPE ragcanary_suite_last_run_passed gauge
ragcanary_suite_last_run_passed{corpus="kb",namespace="rag",suite="iso"} 0
`

// TestObjectCollectorDerivesGaugesFromObjects: a collector that never saw a
// run finish exports every derived series, with the values and labels the
// pushed gauges had, from the objects alone.
func TestObjectCollectorDerivesGaugesFromObjects(t *testing.T) {
	c := NewObjectCollector(newReader(t, nil, fixture()...), clocktesting.NewFakePassiveClock(scrapeTime))
	if err := testutil.CollectAndCompare(c, strings.NewReader(wantSeries)); err != nil {
		t.Error(err)
	}
}

// TestObjectCollectorDropsDeletedObjects: deleting a canary or a suite
// removes its series at the next scrape, with no Forget call.
func TestObjectCollectorDropsDeletedObjects(t *testing.T) {
	reader := newReader(t, nil, fixture()...)
	c := NewObjectCollector(reader, clocktesting.NewFakePassiveClock(scrapeTime))
	if n := seriesOf(t, c, "hourly", "iso"); n != 6 {
		t.Fatalf("before deletion: %d series of canary hourly and suite iso, want 6", n)
	}
	ctx := context.Background()
	for _, obj := range []client.Object{canary("hourly", nil), &v1alpha1.EvalSuite{ObjectMeta: metav1.ObjectMeta{Namespace: "rag", Name: "iso"}}} {
		if err := reader.Delete(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	if n := seriesOf(t, c, "hourly", "iso"); n != 0 {
		t.Errorf("after deletion: %d series of canary hourly and suite iso remain", n)
	}
	if n := testutil.CollectAndCount(c, "ragcanary_canary_stale_after_timestamp_seconds"); n != 3 {
		t.Errorf("other canaries' stale-after series = %d, want 3", n)
	}
}

// seriesOf counts collected series labelled canary=canaryName or suite=suiteName.
func seriesOf(t *testing.T, c prometheus.Collector, canaryName, suiteName string) int {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fam := range families {
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				if (l.GetName() == LabelCanary && l.GetValue() == canaryName) || (l.GetName() == LabelSuite && l.GetValue() == suiteName) {
					n++
				}
			}
		}
	}
	return n
}

// TestObjectCollectorReadErrorFailsScrape: when the objects cannot be read
// the scrape fails; it never reports the canaries as having no runs.
func TestObjectCollectorReadErrorFailsScrape(t *testing.T) {
	failing := &interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if _, ok := list.(*v1alpha1.CanaryRunList); ok {
			return errors.New("cache not synced")
		}
		return c.List(ctx, list, opts...)
	}}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewObjectCollector(newReader(t, failing, fixture()...), clocktesting.NewFakePassiveClock(scrapeTime)))
	families, err := reg.Gather()
	if err == nil || !strings.Contains(err.Error(), "cache not synced") {
		t.Errorf("gather error = %v, want the read error", err)
	}
	for _, fam := range families {
		if len(fam.GetMetric()) > 0 {
			t.Errorf("family %s exported %d series from a failed read", fam.GetName(), len(fam.GetMetric()))
		}
	}
}

// TestObjectCollectorRegistersWhileRunning: as a manager runnable the
// collector serves on controller-runtime's registry until its manager
// stops, and then leaves room for the next manager's collector.
func TestObjectCollectorRegistersWhileRunning(t *testing.T) {
	reader := newReader(t, nil, fixture()...)
	clk := clocktesting.NewFakePassiveClock(scrapeTime)
	const family = "ragcanary_suite_last_run_passed"
	for round := 1; round <= 2; round++ {
		c := NewObjectCollector(reader, clk)
		if !c.NeedLeaderElection() {
			t.Fatal("the collector must run on the leader only")
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Start(ctx) }()
		rctestutil.Eventually(t, 10*time.Second, fmt.Sprintf("round %d: %s served", round, family), func() error {
			if n := gatheredSeries(t, family); n != 1 {
				return fmt.Errorf("%d series", n)
			}
			return nil
		})
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("round %d: Start returned %v", round, err)
		}
		if n := gatheredSeries(t, family); n != 0 {
			t.Errorf("round %d: %d series still served after the manager stopped", round, n)
		}
	}
}

func gatheredSeries(t *testing.T, name string) int {
	t.Helper()
	n, err := testutil.GatherAndCount(crmetrics.Registry, name)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSchedulePeriod(t *testing.T) {
	friday10 := time.Date(2026, 3, 6, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		// schedule and suspend are the canary's spec.
		schedule v1alpha1.Schedule
		suspend  *bool
		// now is the scrape time.
		now  time.Time
		want time.Duration
	}{
		{name: "every", schedule: v1alpha1.Schedule{Every: dur(15 * time.Minute)}, now: scrapeTime, want: 15 * time.Minute},
		{name: "@every in cron", schedule: v1alpha1.Schedule{Cron: "@every 2h"}, now: scrapeTime, want: 2 * time.Hour},
		{name: "cron just before a time", schedule: v1alpha1.Schedule{Cron: "0 * * * *"}, now: scrapeTime, want: time.Hour},
		// The gap after the next time: Monday 09:00 to Tuesday 09:00.
		{name: "weekday cron over a weekend", schedule: v1alpha1.Schedule{Cron: "0 9 * * 1-5"}, now: friday10, want: 24 * time.Hour},
		{name: "suspended", schedule: v1alpha1.Schedule{Every: dur(time.Hour)}, suspend: ptr.To(true), now: scrapeTime, want: 0},
		{name: "explicitly not suspended", schedule: v1alpha1.Schedule{Every: dur(time.Hour)}, suspend: ptr.To(false), now: scrapeTime, want: time.Hour},
		{name: "invalid schedule", schedule: v1alpha1.Schedule{Cron: "61 * * * *"}, now: scrapeTime, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := canary("c", func(c *v1alpha1.RevocationCanary) {
				c.Spec.Schedule, c.Spec.Suspend = tt.schedule, tt.suspend
			})
			if got := schedulePeriod(c, tt.now); got != tt.want {
				t.Errorf("period = %s, want %s", got, tt.want)
			}
		})
	}
}

// BenchmarkDerive is one scrape's work for a fleet of 1,000 canaries with
// six retained runs each and 100 suites, once the lists are read.
func BenchmarkDerive(b *testing.B) {
	var o objects
	o.corpora = map[client.ObjectKey]*v1alpha1.Corpus{{Namespace: "rag", Name: "kb"}: corpus("kb", time.Minute)}
	o.runCorpus = map[client.ObjectKey]string{}
	for i := range 1000 {
		name := fmt.Sprintf("canary-%d", i)
		o.canaries = append(o.canaries, *canary(name, func(c *v1alpha1.RevocationCanary) {
			c.Status.LastRun = &v1alpha1.RunSummary{Name: name + "-5", CompletionTime: at(1000),
				Surfaces: []v1alpha1.SurfaceSummary{{Surface: v1alpha1.SurfaceSearch,
					Bounds: &v1alpha1.ExclusionBounds{Lower: dur(time.Second), Upper: dur(2 * time.Second)}}}}
		}))
		for j := range 6 {
			r := run(fmt.Sprintf("%s-%d", name, j), name, v1alpha1.PhaseSucceeded, at(int64(1000+j)))
			o.runs = append(o.runs, *r)
			o.runCorpus[client.ObjectKeyFromObject(r)] = "kb"
		}
	}
	for i := range 100 {
		o.suites = append(o.suites, v1alpha1.EvalSuite{ObjectMeta: metav1.ObjectMeta{Namespace: "rag", Name: fmt.Sprintf("suite-%d", i)},
			Status: v1alpha1.EvalSuiteStatus{LastRun: &v1alpha1.SuiteRunSummary{Passed: true, CompletionTime: at(1000)}}})
	}
	b.ReportAllocs()
	for b.Loop() {
		if n := len(derive(o, scrapeTime)); n != 5200 {
			b.Fatalf("%d series, want 5200", n)
		}
	}
}

// TestRevocationPathInfo: a canary whose revocation leaves the target has
// one path series naming its method and where (the group path through a
// directory, a permissions engine, an OAuth2 authorization server); one that revokes in the target itself,
// or whose corpus is gone, has none.
func TestRevocationPathInfo(t *testing.T) {
	dir := corpus("dir", time.Minute)
	dir.Spec.Directory = &v1alpha1.Directory{Type: v1alpha1.DirectoryLDAP}
	engine := corpus("engine", time.Minute)
	engine.Spec.Permissions = &v1alpha1.Permissions{Type: v1alpha1.PermissionsSpiceDB}
	on := func(corpusName string, m v1alpha1.RevocationMethod) func(*v1alpha1.RevocationCanary) {
		return func(c *v1alpha1.RevocationCanary) {
			c.Spec.CorpusRef.Name = corpusName
			c.Spec.Revocation.Method = m
		}
	}
	objs := []client.Object{corpus("kb", time.Minute), dir, engine,
		canary("plain", nil),
		canary("synced", on("dir", v1alpha1.RevokeRemoveFromGroup)),
		canary("granted", on("dir", v1alpha1.RevokeRemoveGrant)),
		canary("tuples", on("engine", "")),
		canary("orphan", on("gone", v1alpha1.RevokeRemoveFromGroup)),
		canary("client", on("kb", v1alpha1.RevokeCredential)),
	}
	c := NewObjectCollector(newReader(t, nil, objs...), clocktesting.NewFakePassiveClock(scrapeTime))
	want := `
# HELP ragcanary_canary_revocation_path_info 1 per canary whose revocation is made outside the target: its revocation method and where it is made (revoked_in: permissions, directory or issuer), from its spec and its corpus's; absent for a canary that revokes in the target itself, or whose corpus does not exist. Join on (namespace, canary).
# TYPE ragcanary_canary_revocation_path_info gauge
ragcanary_canary_revocation_path_info{canary="client",corpus="kb",method="RevokeCredential",namespace="rag",revoked_in="issuer"} 1
ragcanary_canary_revocation_path_info{canary="synced",corpus="dir",method="RemoveFromGroup",namespace="rag",revoked_in="directory"} 1
ragcanary_canary_revocation_path_info{canary="tuples",corpus="engine",method="RemoveGrant",namespace="rag",revoked_in="permissions"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "ragcanary_canary_revocation_path_info"); err != nil {
		t.Error(err)
	}
}
