package metrics

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/measure"
	"github.com/ragcanary/ragcanary/internal/schedule"
)

// The gauges below restate what the objects already say: a canary's SLO and
// schedule, its last run's result, a suite's last verdict. They are built
// from the objects at every scrape instead of being set when a reconciler
// sees something happen, so a restarted manager exports them from its first
// scrape (no canary looks stale because this process has not yet seen one of
// its runs finish) and a deleted object's series go with it. Counters and
// histograms count events that no object records; they stay pushed.
var (
	// canaryRevocationPathDesc is an info series (always 1) that alerts
	// and panels join on (namespace, canary) to say which path a canary
	// measures when it is not the target itself: the group path through a
	// directory, or a permissions engine. Only those canaries have one, so
	// the common canary costs no series for it (a fleet scrape is held to
	// 5 MiB for 10,000 canaries).
	canaryRevocationPathDesc = newGaugeDesc("canary_revocation_path_info",
		"1 per canary whose revocation is made outside the target: its revocation method and where it is made (revoked_in: permissions, directory or issuer), from its spec and its corpus's; absent for a canary that revokes in the target itself, or whose corpus does not exist. Join on (namespace, canary).",
		append(slices.Clone(runLabels), LabelMethod, LabelRevokedIn))
	canaryStaleAfterDesc = newGaugeDesc("canary_stale_after_timestamp_seconds",
		"Unix time after which the canary has gone three schedule periods without completing a run, counted from its last run's completion or, before any, from its creation; absent while the canary is suspended or not ready.", runLabels)
	lastCompletedRunDesc = newGaugeDesc("last_completed_run_timestamp_seconds",
		"Unix time the newest finished CanaryRun created by hand (canary=\"\") finished, per namespace and corpus; a canary's runs are in canary_stale_after_timestamp_seconds.", runLabels)
	exclusionLowerBoundDesc = newGaugeDesc("last_run_exclusion_lower_bound_seconds",
		"Lower bound of time-to-exclusion of the canary's last finished run, per surface, when it is censored (no upper bound); absent when the upper bound was established.", surfaceLabels)
	exclusionUpperBoundDesc = newGaugeDesc("last_run_exclusion_upper_bound_seconds",
		"Upper bound of time-to-exclusion of the canary's last finished run, per surface; absent when exclusion was not established.", surfaceLabels)
	corpusSurfaceSLODesc = newGaugeDesc("corpus_surface_slo_seconds",
		"Exclusion SLO a canary of the corpus is judged by on a surface its canaries probe, unless canary_surface_slo_seconds gives the canary its own.", corpusSurfaceLabels)
	canarySurfaceSLODesc = newGaugeDesc("canary_surface_slo_seconds",
		"Exclusion SLO the canary's runs are judged by on a probed surface, only where it differs from corpus_surface_slo_seconds (the canary sets exclusionSLO); absent for content-freshness (UpdateContent) canaries.", surfaceLabels)
	canaryContentFreshnessSLODesc = newGaugeDesc("canary_content_freshness_slo_seconds",
		"Content-freshness SLO an UpdateContent canary's runs are judged by, per probed surface; every UpdateContent canary has it, which also tells the exclusion alerts to leave the canary to the freshness alert.", surfaceLabels)
	freshnessLowerBoundDesc = newGaugeDesc("last_run_content_freshness_lower_bound_seconds",
		"Lower bound of the time until the surface served only the new content, in the content-freshness canary's last finished run, when censored; absent when the upper bound was established.", surfaceLabels)
	freshnessUpperBoundDesc = newGaugeDesc("last_run_content_freshness_upper_bound_seconds",
		"Upper bound of the time until the surface served only the new content, in the content-freshness canary's last finished run; absent when censored.", surfaceLabels)
	postRevocationDeliveryDesc = newGaugeDesc("last_run_post_revocation_delivery_seconds",
		"Time from the revocation request to the last canary-bearing chunk that streams already in flight delivered, in the canary's last finished run (InFlight surface); 0 when none arrived after the request, absent when not established.", runLabels)
	postRevocationBytesDesc = newGaugeDesc("last_run_post_revocation_canary_bytes",
		"Content bytes streams already in flight delivered after the revocation request, up to their last canary-bearing chunk, in the canary's last finished run (InFlight surface); absent when not established.", runLabels)
	suiteLastRunPassedDesc = newGaugeDesc("suite_last_run_passed",
		"1 when the suite's latest finished run passed every gate, else 0; what the gate-failed alert watches.", suiteLabels)
	suiteLastCompletedRunDesc = newGaugeDesc("suite_last_completed_run_timestamp_seconds",
		"Unix time the suite's last run finished.", suiteLabels)
)

// derivedDescs lists every family the ObjectCollector builds.
var derivedDescs = []*prometheus.Desc{
	canaryRevocationPathDesc, canaryStaleAfterDesc, lastCompletedRunDesc,
	exclusionLowerBoundDesc, exclusionUpperBoundDesc,
	corpusSurfaceSLODesc, canarySurfaceSLODesc, canaryContentFreshnessSLODesc, freshnessLowerBoundDesc, freshnessUpperBoundDesc,
	postRevocationDeliveryDesc, postRevocationBytesDesc,
	suiteLastRunPassedDesc, suiteLastCompletedRunDesc,
}

func newGaugeDesc(name, help string, labels []string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(namespace, "", name), help, labels, nil)
}

// readTimeout bounds one scrape's reads. The cache answers from memory; the
// bound only matters for an informer that is not synced yet.
const readTimeout = 10 * time.Second

// ObjectCollector is a prometheus.Collector that builds the derived gauges
// from the objects a client.Reader (the manager's cache) holds at scrape
// time. As a manager Runnable it registers itself on controller-runtime's
// registry while its manager leads, and only then: a standby replica does
// not reconcile, and two replicas exporting the same series would break the
// alerts' one-to-one joins.
//
// The SLOs it exports are measure.JudgedSLO, the rule verdicts are decided
// by, and a run's series belong to the canary RunOf names: no decision is
// repeated here.
type ObjectCollector struct {
	reader client.Reader
	clock  clock.PassiveClock
}

// NewObjectCollector reads through reader; clock is the scheduling clock,
// which places a cron schedule's period.
func NewObjectCollector(reader client.Reader, clk clock.PassiveClock) *ObjectCollector {
	return &ObjectCollector{reader: reader, clock: clk}
}

// Describe sends the descriptors of every derived family.
func (c *ObjectCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range derivedDescs {
		ch <- d
	}
}

// Collect reads the objects and sends one gauge per derived series. A
// failed read fails the scrape rather than dropping the series: an alert
// must never take "could not read" for "no run completed".
func (c *ObjectCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	objs, err := readObjects(ctx, c.reader)
	if err != nil {
		for _, d := range derivedDescs {
			ch <- prometheus.NewInvalidMetric(d, err)
		}
		return
	}
	for _, s := range derive(objs, c.clock.Now()) {
		ch <- prometheus.MustNewConstMetric(s.desc, prometheus.GaugeValue, s.value, s.labels...)
	}
}

// Start registers the collector on controller-runtime's registry and
// unregisters it when the manager stops, so a later manager in the same
// process can register its own.
func (c *ObjectCollector) Start(ctx context.Context) error { return registerUntilDone(ctx, c) }

// registerUntilDone keeps c on controller-runtime's registry until ctx ends.
func registerUntilDone(ctx context.Context, c prometheus.Collector) error {
	if err := crmetrics.Registry.Register(c); err != nil {
		return err
	}
	<-ctx.Done()
	crmetrics.Registry.Unregister(c)
	return nil
}

// NeedLeaderElection keeps the collector to the leader, which is the
// replica whose reconcilers push the counters.
func (c *ObjectCollector) NeedLeaderElection() bool { return true }

// objects is one scrape's view of the cluster.
type objects struct {
	canaries []v1alpha1.RevocationCanary
	corpora  map[client.ObjectKey]*v1alpha1.Corpus
	runs     []v1alpha1.CanaryRun
	// runCorpus is the corpus each CanaryRun measured, by run.
	runCorpus map[client.ObjectKey]string
	suites    []v1alpha1.EvalSuite
}

// readObjects lists what the gauges derive from. The lists are shared
// with the cache, not copied: nothing here writes to them.
func readObjects(ctx context.Context, r client.Reader) (objects, error) {
	var (
		canaries v1alpha1.RevocationCanaryList
		corpora  v1alpha1.CorpusList
		runs     v1alpha1.CanaryRunList
		suites   v1alpha1.EvalSuiteList
	)
	err := errors.Join(
		r.List(ctx, &canaries, client.UnsafeDisableDeepCopy),
		r.List(ctx, &corpora, client.UnsafeDisableDeepCopy),
		r.List(ctx, &runs, client.UnsafeDisableDeepCopy),
		r.List(ctx, &suites, client.UnsafeDisableDeepCopy),
	)
	if err != nil {
		return objects{}, err
	}
	o := objects{canaries: canaries.Items, runs: runs.Items, suites: suites.Items,
		corpora: map[client.ObjectKey]*v1alpha1.Corpus{}, runCorpus: map[client.ObjectKey]string{}}
	for i := range corpora.Items {
		o.corpora[client.ObjectKeyFromObject(&corpora.Items[i])] = &corpora.Items[i]
	}
	for i := range runs.Items {
		o.runCorpus[client.ObjectKeyFromObject(&runs.Items[i])] = runs.Items[i].Spec.CorpusRef.Name
	}
	return o, nil
}

// sample is one series of a derived family.
type sample struct {
	desc   *prometheus.Desc
	value  float64
	labels []string
}

// derive builds every derived series from one view of the objects. Objects
// being deleted export nothing: the user has asked for them to go.
func derive(o objects, now time.Time) []sample {
	var out []sample
	for i := range o.canaries {
		if canary := &o.canaries[i]; canary.DeletionTimestamp.IsZero() {
			out = append(out, canarySamples(canary, o, now)...)
		}
	}
	out = append(out, corpusSLOSamples(o)...)
	out = append(out, handMadeRunSamples(o.runs)...)
	for i := range o.suites {
		if s := &o.suites[i]; s.DeletionTimestamp.IsZero() {
			out = append(out, suiteSamples(s)...)
		}
	}
	return out
}

// canarySamples: the SLOs a canary sets apart from its corpus's, when it
// is due to be stale, and its last finished run as status.lastRun
// summarises it (the summary outlives the run when the history limit
// deletes it).
func canarySamples(canary *v1alpha1.RevocationCanary, o objects, now time.Time) []sample {
	var out []sample
	corpus := o.corpora[client.ObjectKey{Namespace: canary.Namespace, Name: canary.Spec.CorpusRef.Name}]
	if corpus != nil {
		out = append(out, revocationPathSamples(canary, corpus)...)
		out = append(out, surfaceSLOSamples(canary, corpus)...)
	}
	if corpus != nil && meta.IsStatusConditionTrue(canary.Status.Conditions, v1alpha1.ConditionReady) {
		if at, ok := staleAfter(canary, now); ok {
			l := Run{Namespace: canary.Namespace, Canary: canary.Name, Corpus: corpus.Name}.values()
			out = append(out, sample{canaryStaleAfterDesc, float64(at.Unix()), l})
		}
	}
	last := canary.Status.LastRun
	if last == nil {
		return out
	}
	// The run's series carry the corpus it measured, which differs from the
	// canary's when spec.corpusRef changed since; once the run is gone the
	// canary's is the best left.
	corpusName, ok := o.runCorpus[client.ObjectKey{Namespace: canary.Namespace, Name: last.Name}]
	if !ok {
		corpusName = canary.Spec.CorpusRef.Name
	}
	r := Run{Namespace: canary.Namespace, Canary: canary.Name, Corpus: corpusName}
	var bounds, fresh []surfaceBounds
	for _, m := range last.Surfaces {
		bounds = append(bounds, surfaceBounds{string(m.Surface), m.Bounds})
		if m.ContentFreshness != nil {
			fresh = append(fresh, surfaceBounds{string(m.Surface), m.ContentFreshness})
		}
	}
	out = append(out, lastRunSamples(r, nil, bounds)...)
	out = append(out, inFlightSamples(r, last.InFlight)...)
	return append(out, freshnessSamples(r, fresh)...)
}

// revocationPathSamples is the canary's path info when its corpus makes
// its revocation outside the target: its method (the API's default when
// it names none) and where.
func revocationPathSamples(canary *v1alpha1.RevocationCanary, corpus *v1alpha1.Corpus) []sample {
	m := canary.Spec.Revocation.Method
	if m == "" {
		m = v1alpha1.RevokeRemoveGrant
	}
	in := corpus.Spec.RevokedIn(m)
	if in == v1alpha1.RevokedInTarget {
		return nil
	}
	l := Run{Namespace: canary.Namespace, Canary: canary.Name, Corpus: corpus.Name}.values()
	return []sample{{canaryRevocationPathDesc, 1, append(l, string(m), string(in))}}
}

// inFlightSamples: the last run's post-revocation delivery and bytes, when
// established (an unknown delivery is no series, never 0).
func inFlightSamples(r Run, m *v1alpha1.InFlightSummary) []sample {
	if m == nil || m.PostRevocationDelivery == nil {
		return nil
	}
	l := r.values()
	return []sample{
		{postRevocationDeliveryDesc, m.PostRevocationDelivery.Seconds(), l},
		{postRevocationBytesDesc, float64(m.CanaryBytesAfterRequest), l},
	}
}

// surfaceSLOSamples: per probed surface, the SLO the canary's runs are
// judged by where its corpus's (corpusSLOSamples) is not that SLO. A
// content-freshness canary always has its own, in the freshness family, so
// an alert never judges a content update by the exclusion SLO; an
// ordinary canary has one only where it sets exclusionSLO. That keeps the
// SLO out of most canaries' series: it was one per canary and surface, a
// fifth of a 10,000-canary scrape.
func surfaceSLOSamples(canary *v1alpha1.RevocationCanary, corpus *v1alpha1.Corpus) []sample {
	content := canary.Spec.Revocation.Method == v1alpha1.RevokeUpdateContent
	desc := canarySurfaceSLODesc
	if content {
		desc = canaryContentFreshnessSLODesc
	}
	var out []sample
	for _, s := range probedSurfaces(canary) {
		slo, _ := measure.JudgedSLO(&canary.Spec.CanarySpec, corpus, s)
		if !content && slo == corpusSLO(corpus, s) {
			continue
		}
		l := Run{Namespace: canary.Namespace, Canary: canary.Name, Corpus: corpus.Name}.values()
		out = append(out, sample{desc, slo.Seconds(), append(l, string(s))})
	}
	return out
}

// probedSurfaces are the surfaces a canary's runs measure: Search when it
// names none.
func probedSurfaces(canary *v1alpha1.RevocationCanary) []v1alpha1.Surface {
	if len(canary.Spec.Probing.Surfaces) == 0 {
		return []v1alpha1.Surface{v1alpha1.SurfaceSearch}
	}
	return canary.Spec.Probing.Surfaces
}

// corpusSLO is the exclusion SLO a canary of corpus that sets none of its
// own is judged by on surface s.
func corpusSLO(corpus *v1alpha1.Corpus, s v1alpha1.Surface) time.Duration {
	slo, _ := measure.JudgedSLO(&v1alpha1.CanarySpec{}, corpus, s)
	return slo
}

// corpusSLOSamples: per corpus, the exclusion SLO of each surface some
// canary of the corpus probes (canaries being deleted export nothing, as in
// derive).
func corpusSLOSamples(o objects) []sample {
	type key struct {
		corpus  client.ObjectKey
		surface v1alpha1.Surface
	}
	seen := map[key]bool{}
	var out []sample
	for i := range o.canaries {
		canary := &o.canaries[i]
		ck := client.ObjectKey{Namespace: canary.Namespace, Name: canary.Spec.CorpusRef.Name}
		corpus := o.corpora[ck]
		if corpus == nil || !canary.DeletionTimestamp.IsZero() {
			continue
		}
		for _, s := range probedSurfaces(canary) {
			if seen[key{ck, s}] {
				continue
			}
			seen[key{ck, s}] = true
			out = append(out, sample{corpusSurfaceSLODesc, corpusSLO(corpus, s).Seconds(), []string{ck.Namespace, ck.Name, string(s)}})
		}
	}
	return out
}

// freshnessSamples: each established content-freshness bound of a last
// run; a censored surface has its lower bound only.
func freshnessSamples(r Run, bounds []surfaceBounds) []sample {
	var out []sample
	for _, b := range bounds {
		if b.bounds == nil {
			continue
		}
		l := append(r.values(), b.surface)
		if d, upper := censoredOrUpper(b.bounds); upper {
			out = append(out, sample{freshnessUpperBoundDesc, d, l})
		} else if b.bounds.Lower != nil {
			out = append(out, sample{freshnessLowerBoundDesc, d, l})
		}
	}
	return out
}

// staleAfterPeriods is how many schedule periods a canary may go without
// completing a run before it is stale (RagcanaryCanaryStale).
const staleAfterPeriods = 3

// staleAfter is when the canary will have gone staleAfterPeriods without a
// completed run: from its last run's completion, or from its creation
// before any. ok is false while it is suspended or its schedule does not
// parse. One timestamp instead of the period and the last completion (two
// series per canary, a sixth of a 10,000-canary scrape each) is all the
// stale alert needs.
func staleAfter(canary *v1alpha1.RevocationCanary, now time.Time) (time.Time, bool) {
	p := schedulePeriod(canary, now)
	if p <= 0 {
		return time.Time{}, false
	}
	from := canary.CreationTimestamp.Time
	if last := canary.Status.LastRun; last != nil && last.CompletionTime != nil {
		from = last.CompletionTime.Time
	}
	return from.Add(staleAfterPeriods * p), true
}

// schedulePeriod is the gap between the next two scheduled runs; 0 while
// the canary is suspended or its schedule does not parse. For a cron
// schedule it is measured between scheduled times, never from now.
func schedulePeriod(canary *v1alpha1.RevocationCanary, now time.Time) time.Duration {
	if canary.Spec.Suspend != nil && *canary.Spec.Suspend {
		return 0
	}
	sched, err := schedule.Parse(canary.Spec.Schedule)
	if err != nil {
		return 0
	}
	next := sched.Next(now, now)
	if next.IsZero() {
		return 0
	}
	return sched.Period(next)
}

// surfaceBounds is one surface's interval; nil when the run did not
// measure the surface.
type surfaceBounds struct {
	surface string
	bounds  *v1alpha1.ExclusionBounds
}

// lastRunSamples: the completion time (when given) and each established
// bound. A bound that was not established has no series, never a stand-in
// value.
func lastRunSamples(r Run, completed *metav1.Time, bounds []surfaceBounds) []sample {
	var out []sample
	if completed != nil {
		out = append(out, sample{lastCompletedRunDesc, float64(completed.Unix()), r.values()})
	}
	for _, b := range bounds {
		if b.bounds == nil {
			continue
		}
		l := append(r.values(), b.surface)
		if d, upper := censoredOrUpper(b.bounds); upper {
			out = append(out, sample{exclusionUpperBoundDesc, d, l})
		} else if b.bounds.Lower != nil {
			out = append(out, sample{exclusionLowerBoundDesc, d, l})
		}
	}
	return out
}

// censoredOrUpper is the one bound a last run exports per surface: the
// upper bound when it was established, else (censored) the lower. Every
// alert and panel reads the bound the verdict turns on — an established
// upper bound, or the lower bound of a surface that has none — and a lower
// bound beside an upper one was a series per canary and surface (a tenth
// of a 10,000-canary scrape) that only the run's status needs to keep.
func censoredOrUpper(b *v1alpha1.ExclusionBounds) (seconds float64, upper bool) {
	if b.Upper != nil {
		return b.Upper.Seconds(), true
	}
	if b.Lower != nil {
		return b.Lower.Seconds(), false
	}
	return 0, false
}

// handMadeRunSamples reports runs created by hand, which no canary
// summarises, under canary="": per namespace and corpus, the newest
// finished run.
func handMadeRunSamples(runs []v1alpha1.CanaryRun) []sample {
	latest := map[Run]*v1alpha1.CanaryRun{}
	var order []Run
	for i := range runs {
		run := &runs[i]
		if !finishedRun(run) || !run.DeletionTimestamp.IsZero() || RunOf(run).Canary != "" {
			continue
		}
		key := Run{Namespace: run.Namespace, Corpus: run.Spec.CorpusRef.Name}
		prev, seen := latest[key]
		if !seen {
			order = append(order, key)
		}
		if !seen || finishedAfter(run, prev) {
			latest[key] = run
		}
	}
	var out []sample
	for _, key := range order {
		run := latest[key]
		var bounds, fresh []surfaceBounds
		for i := range run.Status.Surfaces {
			m := &run.Status.Surfaces[i]
			bounds = append(bounds, surfaceBounds{string(m.Surface), m.Bounds})
			if m.NewContent != nil {
				fresh = append(fresh, surfaceBounds{string(m.Surface), measure.Freshness(m)})
			}
		}
		out = append(out, lastRunSamples(key, run.Status.CompletionTime, bounds)...)
		out = append(out, freshnessSamples(key, fresh)...)
	}
	return out
}

func finishedRun(run *v1alpha1.CanaryRun) bool {
	phase := run.Status.Phase
	return (phase == v1alpha1.PhaseSucceeded || phase == v1alpha1.PhaseFailed) && run.Status.CompletionTime != nil
}

// finishedAfter orders finished runs by completion, then by name, so the
// same objects always give the same series.
func finishedAfter(a, b *v1alpha1.CanaryRun) bool {
	if c := a.Status.CompletionTime.Compare(b.Status.CompletionTime.Time); c != 0 {
		return c > 0
	}
	return a.Name > b.Name
}

// suiteSamples: the verdict and completion time of the suite's latest
// finished run, as status.lastRun summarises it.
func suiteSamples(s *v1alpha1.EvalSuite) []sample {
	last := s.Status.LastRun
	if last == nil {
		return nil
	}
	l := Suite{Namespace: s.Namespace, Suite: s.Name, Corpus: s.Spec.CorpusRef.Name}.values()
	out := []sample{{suiteLastRunPassedDesc, boolToFloat(last.Passed), l}}
	if last.CompletionTime != nil {
		out = append(out, sample{suiteLastCompletedRunDesc, float64(last.CompletionTime.Unix()), l})
	}
	return out
}

// values are the run's label values in the order of runLabels.
func (r Run) values() []string { return []string{r.Namespace, r.Canary, r.Corpus} }

// values are the suite's label values in the order of suiteLabels.
func (s Suite) values() []string { return []string{s.Namespace, s.Suite, s.Corpus} }
