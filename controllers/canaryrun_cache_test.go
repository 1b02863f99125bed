package controllers

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/metrics"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// probeJitterPercent is the probe engine's jitter: a round is due between
// 0.9 and 1.1 intervals after the previous one (probe.jitterFraction).
const probeJitterPercent = 10

// TestCanaryRunAnswerBoundsContainCacheExpiry runs against a ragtarget with
// the stale-cache defect: the answer cache keeps answers for a TTL longer
// than the ACL lag and ignores the ACL change. The ACL sync that applies the
// revocation runs when the test releases it, at a moment the cached answer
// citing the canary still has more than half its TTL to live, so:
//   - the search surface is excluded at the ACL sync, and its bounds contain it;
//   - the answer surface keeps serving the canary after the sync until that
//     cache entry expires, and its bounds contain the expiry.
//
// Each surface's bound width, taken from the persisted timestamps, stays
// within one jittered probe interval plus the longest probe and the longest
// scheduling lag the run's own histograms observed.
func TestCanaryRunAnswerBoundsContainCacheExpiry(t *testing.T) {
	t.Parallel()
	const (
		persona  = "alice@example.com"
		lag      = 500 * time.Millisecond // least ACL lag after the revocation request
		cacheTTL = 4 * time.Second        // answer cache TTL, longer than the ACL lag
		interval = 200 * time.Millisecond // crRunSpec's probe interval
	)
	tg := startCRTargetWith(t, ragtarget.Config{AnswerCacheTTL: cacheTTL, CacheIgnoresACLChanges: true},
		crTargetOptions{lag: lag, hold: true})
	ns := crFixture(t, tg.URL)
	// Probing two surfaces as the persona and a control every 200ms is 20
	// requests a second, over the operator's default budget: a throttled
	// round would overrun its interval, which is not what this test measures.
	crRaiseRateLimit(t, ns, "target")
	run := crRun(t, ns, 30*time.Second, v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer)

	testutil.Eventually(t, eventuallyTimeout, "awaiting exclusion with the revocation held at the target", func() error {
		got := crGet(t, run)
		if got.Status.Phase != v1alpha1.PhaseAwaitingExclusion || tg.revocationRequests() == 0 {
			return fmt.Errorf("phase %q (%s), %d revocation requests", got.Status.Phase, got.Status.Message, tg.revocationRequests())
		}
		run = got
		return nil
	})
	token := crToken(t, run)

	// The index still shows the canary, so the cached answer cites it. Wait
	// for an entry that outlives the ACL sync by a wide margin, then let the
	// sync run.
	var expiry time.Time
	testutil.Eventually(t, eventuallyTimeout, "a cached answer with more than half its TTL left", func() error {
		e, ok := tg.AnswerCacheExpiry(persona, token)
		if !ok || time.Until(e) < cacheTTL/2 {
			return fmt.Errorf("cached %v, expires in %s", ok, time.Until(e))
		}
		expiry = e
		return nil
	})
	tg.release()
	testutil.Eventually(t, eventuallyTimeout, "the ACL sync applied the revocation", func() error {
		if s, _ := tg.appliedRevocation(); s.IsZero() {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	syncStart, syncEnd := tg.appliedRevocation()
	if !expiry.After(syncEnd) {
		t.Fatalf("the cached answer expired %s before the ACL sync ended; the answer surface would not lag the index", syncEnd.Sub(expiry))
	}
	// The entry holding the canary was stored before the sync and is only
	// replaced once it expires (the defect ignores the ACL change), so the
	// answer surface serves the canary until exactly expiry.
	if e, ok := tg.AnswerCacheExpiry(persona, token); ok && !e.Equal(expiry) && e.Before(expiry.Add(cacheTTL)) {
		t.Fatalf("the cached answer was replaced before its TTL: expiry %v, want %v", e, expiry)
	}

	got := crWaitDone(t, run)
	crAssertSLOMet(t, got)
	req, ack := got.Status.RevokeRequestedTime.Time, got.Status.RevokeAcknowledgedTime.Time
	search, answer := crSurface(t, got, v1alpha1.SurfaceSearch), crSurface(t, got, v1alpha1.SurfaceAnswer)
	t.Logf("ACL sync [%s, %s], cache expiry %s after the request (ack %s)", syncStart.Sub(req), syncEnd.Sub(req), expiry.Sub(req), ack.Sub(req))

	// Ground truth per surface: the search index excluded the canary during
	// the sync; the answer surface when the cached answer expired.
	crAssertContains(t, got, search, syncStart, syncEnd)
	crAssertContains(t, got, answer, expiry, expiry)
	// The cache served the revoked canary after the index had dropped it.
	if answer.LastPositiveStart == nil || !answer.LastPositiveStart.After(syncEnd) {
		t.Errorf("answer: last sighting %v is not after the ACL sync ended at %v: the stale cache was not observed", answer.LastPositiveStart, syncEnd)
	}
	if answer.Bounds.Lower.Duration <= search.Bounds.Upper.Duration-ack.Sub(req) {
		t.Errorf("answer lower bound %s does not lie beyond the search upper bound %s: the cache lag was not measured", answer.Bounds.Lower.Duration, search.Bounds.Upper.Duration)
	}

	// Bound width: the last positive and the first negative of a surface are
	// consecutive persona probes, due at most one jittered interval apart
	// (or one overrun round); each may start late by its scheduling lag and
	// the negative lasts its probe duration. The histograms give an upper bound on the longest of
	// each (the bound of the first bucket holding every observation).
	labels := prometheus.Labels{metrics.LabelNamespace: ns, metrics.LabelCorpus: "target"}
	maxLag := histogramMax(t, metrics.ProbeSchedulingLag, labels)
	// Status timestamps are floored/ceiled to the microsecond; the engine
	// takes a few more between the end of a round and the next due time.
	const slack = 10 * time.Millisecond
	for _, m := range []v1alpha1.SurfaceMeasurement{search, answer} {
		maxDuration := histogramMax(t, metrics.ProbeDuration, withLabel(labels, metrics.LabelSurface, string(m.Surface)))
		width := m.Bounds.Upper.Duration - m.Bounds.Lower.Duration - ack.Sub(req)
		// The next round is due one jittered interval after the previous
		// one was due, or when it ended if it overran on a loaded machine.
		spacing := max(interval+interval*probeJitterPercent/100, maxLag+maxDuration)
		limit := spacing + maxDuration + maxLag + slack
		t.Logf("%s: bounds [%s, %s], width %s (adjusted for ack−request %s) ≤ round spacing %s + longest probe ≤%s + longest lag ≤%s; probes %+v",
			m.Surface, m.Bounds.Lower.Duration, m.Bounds.Upper.Duration, width, ack.Sub(req), spacing, maxDuration, maxLag, m.Probes)
		if width > limit {
			t.Errorf("%s: bound width %s exceeds %s (round spacing %s + longest probe + longest scheduling lag + slack)", m.Surface, width, limit, spacing)
		}
		if m.Probes.Errors != 0 || m.Reappearances != 0 {
			t.Errorf("%s: %d probe errors, %d reappearances; want none", m.Surface, m.Probes.Errors, m.Reappearances)
		}
	}
}

// crAssertContains checks that a surface's interval-censored bounds contain
// a true exclusion that happened within [from, to]: the last sighting
// started no later than to, the first absence ended no earlier than from,
// and the persisted bounds are exactly those timestamps relative to the
// revocation's acknowledgement and request.
func crAssertContains(t *testing.T, run *v1alpha1.CanaryRun, m v1alpha1.SurfaceMeasurement, from, to time.Time) {
	t.Helper()
	if !m.Excluded || m.Bounds == nil || m.Bounds.Lower == nil || m.Bounds.Upper == nil || m.FirstNegativeEnd == nil {
		t.Fatalf("%s: not excluded with both bounds: %+v", m.Surface, m)
	}
	req, ack := run.Status.RevokeRequestedTime.Time, run.Status.RevokeAcknowledgedTime.Time
	lastSeen, firstGone := ack.Add(m.Bounds.Lower.Duration), req.Add(m.Bounds.Upper.Duration)
	if !firstGone.Equal(m.FirstNegativeEnd.Time) {
		t.Errorf("%s: upper bound %s is not firstNegativeEnd − revokeRequested", m.Surface, m.Bounds.Upper.Duration)
	}
	if m.LastPositiveStart != nil && m.LastPositiveStart.After(ack) && !lastSeen.Equal(m.LastPositiveStart.Time) {
		t.Errorf("%s: lower bound %s is not lastPositiveStart − revokeAcknowledged", m.Surface, m.Bounds.Lower.Duration)
	}
	if lastSeen.After(to) || firstGone.Before(from) {
		t.Errorf("%s: interval [%s, %s] after the request does not contain the true exclusion in [%s, %s]",
			m.Surface, lastSeen.Sub(req), firstGone.Sub(req), from.Sub(req), to.Sub(req))
	}
}

// crRaiseRateLimit lifts a corpus's request budget well above what one run
// probes.
func crRaiseRateLimit(t *testing.T, ns, name string) {
	t.Helper()
	var c v1alpha1.Corpus
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &c); err != nil {
		t.Fatal(err)
	}
	base := c.DeepCopy()
	c.Spec.RateLimit = v1alpha1.RateLimit{RequestsPerSecond: 200, Burst: 200}
	if err := k8sClient.Patch(context.Background(), &c, client.MergeFrom(base)); err != nil {
		t.Fatalf("raising the corpus rate limit: %v", err)
	}
}

func withLabel(l prometheus.Labels, name, value string) prometheus.Labels {
	out := prometheus.Labels{name: value}
	for k, v := range l {
		out[k] = v
	}
	return out
}

// histogramMax is an upper bound on the largest observation of one series:
// the upper bound of the first bucket that holds every observation.
func histogramMax(t *testing.T, vec *prometheus.HistogramVec, labels prometheus.Labels) time.Duration {
	t.Helper()
	obs, err := vec.GetMetricWith(labels)
	if err != nil {
		t.Fatal(err)
	}
	var m dto.Metric
	if err := obs.(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	h := m.GetHistogram()
	if h.GetSampleCount() == 0 {
		t.Fatalf("no observations in %v", labels)
	}
	for _, b := range h.GetBucket() {
		if b.GetCumulativeCount() == h.GetSampleCount() && !math.IsInf(b.GetUpperBound(), 1) {
			return time.Duration(b.GetUpperBound() * float64(time.Second))
		}
	}
	t.Fatalf("observations in %v exceed the largest bucket", labels)
	return 0
}
