package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/controllers/shared"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
	"github.com/ragcanary/ragcanary/internal/shard"
)

// inFlightChunkInterval paces ragtarget's streams in these tests: the
// canary's answer is about 16 content chunks, a few seconds of stream.
const inFlightChunkInterval = 150 * time.Millisecond

// inFlightRun starts a run measuring Search and InFlight against a
// ragtarget whose streams re-authorise as mode says, the revocation applied
// by the ACL sync lag after its request; the corpus's post-revocation
// delivery SLO is slo.
func inFlightRun(t *testing.T, mode ragtarget.ReauthorizeMode, lag time.Duration, slo time.Duration) (*crTarget, *v1alpha1.CanaryRun) {
	t.Helper()
	tg := startCRTarget(t, ragtarget.Config{StreamChunkInterval: inFlightChunkInterval,
		StreamReauthorize: ragtarget.StreamReauthorize{Mode: mode}}, lag, false)
	ns := crFixture(t, tg.URL)
	crDeclareSurfaces(t, ns, tg)
	var c v1alpha1.Corpus
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "target"}, &c); err != nil {
		t.Fatal(err)
	}
	base := c.DeepCopy()
	c.Spec.Freshness.PostRevocationDeliverySLO = &metav1.Duration{Duration: slo}
	if err := k8sClient.Patch(context.Background(), &c, client.MergeFrom(base)); err != nil {
		t.Fatalf("setting the post-revocation delivery SLO: %v", err)
	}
	return tg, crRun(t, ns, 20*time.Second, v1alpha1.SurfaceSearch, v1alpha1.SurfaceInFlight)
}

// inFlightStream is the run's only stream, checked for what every stream
// read across a revocation must have.
func inFlightStream(t *testing.T, run *v1alpha1.CanaryRun) v1alpha1.InFlightStream {
	t.Helper()
	m := run.Status.InFlight
	if m == nil || len(m.Streams) != 1 {
		t.Fatalf("status.inFlight %+v, want one stream", m)
	}
	s := m.Streams[0]
	if s.OpenedTime == nil || s.EndTime == nil || s.LastCanaryChunkTime == nil {
		t.Fatalf("stream %+v: want opened, end and last canary chunk times", s)
	}
	if !s.OpenedTime.Before(run.Status.RevokeRequestedTime) {
		t.Errorf("stream opened at %s, not before the revocation request at %s", s.OpenedTime, run.Status.RevokeRequestedTime)
	}
	if len(s.Timeline) == 0 || s.Timeline[0].OffsetMillis > 0 {
		t.Errorf("timeline %+v, want chunks from before the request", s.Timeline)
	}
	if m.SLO == nil || m.SLOSource != "corpus freshness.postRevocationDeliverySLO" {
		t.Errorf("slo %v from %q, want the corpus's postRevocationDeliverySLO", m.SLO, m.SLOSource)
	}
	t.Logf("stream: %s %s, %d chunks (%d canary, %d after the request), delivery %v, %d bytes after the request; run: %s",
		s.Outcome, s.EndReason, s.Chunks, s.CanaryChunks, s.CanaryChunksAfterRequest, s.PostRevocationDelivery, s.CanaryBytesAfterRequest, m.Delivery)
	return s
}

// TestInFlightWithoutReauthorizationDeliversAfterRevocation: a stream that
// never re-checks access runs to its end; the canary content it delivers
// after the request breaches an SLO of 0, and the delivery measured ends
// within one chunk interval of the stream's end as the server wrote it.
func TestInFlightWithoutReauthorizationDeliversAfterRevocation(t *testing.T) {
	t.Parallel()
	tg, run := inFlightRun(t, ragtarget.ReauthorizeNone, 200*time.Millisecond, 0)
	got := crWaitDone(t, run)
	if got.Status.Verdict != v1alpha1.VerdictSLOBreached {
		t.Fatalf("verdict %s (%s), want SLOBreached by the in-flight delivery", got.Status.Verdict, got.Status.Message)
	}
	s := inFlightStream(t, got)
	if s.Outcome != v1alpha1.InFlightCompleted || s.CanaryChunksAfterRequest == 0 || s.CanaryBytesAfterRequest == 0 || s.PostRevocationDelivery == nil {
		t.Fatalf("stream %+v, want Completed with canary content after the request", s)
	}
	ends := tg.streamEnds()
	if len(ends) == 0 {
		t.Fatal("the target wrote no finish chunk")
	}
	// The stream read across the revocation is the last one that finished
	// before the run's stream ended; its last content chunk was written one
	// chunk interval before its finish chunk: the stream's known end.
	var finish time.Time
	for _, e := range ends {
		if !e.After(s.EndTime.Time) {
			finish = e
		}
	}
	known := finish.Add(-inFlightChunkInterval)
	last := got.Status.RevokeRequestedTime.Add(s.PostRevocationDelivery.Duration)
	t.Logf("last canary chunk %s after the request; the stream's known end %s after it",
		s.PostRevocationDelivery.Duration, known.Sub(got.Status.RevokeRequestedTime.Time))
	if d := last.Sub(known); d < -inFlightChunkInterval || d > inFlightChunkInterval {
		t.Errorf("last canary chunk %s from the stream's known end, want within one chunk interval (%s)", d, inFlightChunkInterval)
	}
	if got.Status.InFlight.PostRevocationDelivery == nil || got.Status.InFlight.PostRevocationDelivery.Duration != s.PostRevocationDelivery.Duration {
		t.Errorf("run delivery %v, want the stream's %v", got.Status.InFlight.PostRevocationDelivery, s.PostRevocationDelivery)
	}
}

// TestInFlightPerChunkReauthorizationCutsAfterTheSync: a stream that
// re-checks before every chunk is cut with its declared end, its canary
// content stopping within one chunk interval of the ACL sync that applied
// the revocation; what it delivered before that (the sync's lag) is
// measured, within an SLO of 5s, and named: delivered, then cut.
func TestInFlightPerChunkReauthorizationCutsAfterTheSync(t *testing.T) {
	t.Parallel()
	tg, run := inFlightRun(t, ragtarget.ReauthorizePerChunk, 300*time.Millisecond, 5*time.Second)
	got := crWaitDone(t, run)
	if got.Status.Verdict != v1alpha1.VerdictSLOMet {
		t.Fatalf("verdict %s (%s), want SLOMet", got.Status.Verdict, got.Status.Message)
	}
	s := inFlightStream(t, got)
	if s.Outcome != v1alpha1.InFlightDeliveredThenCut || s.EndReason != "access_revoked" {
		t.Fatalf("stream %s %q, want DeliveredThenCut with access_revoked (canary content during the sync's lag)", s.Outcome, s.EndReason)
	}
	_, applied := tg.appliedRevocation()
	if applied.IsZero() {
		t.Fatal("the revocation was never applied by the test's ACL sync")
	}
	req := got.Status.RevokeRequestedTime.Time
	t.Logf("sync applied %s after the request; last canary chunk %s after it", applied.Sub(req), s.LastCanaryChunkTime.Sub(req))
	if s.LastCanaryChunkTime.After(applied.Add(inFlightChunkInterval)) {
		t.Errorf("canary content arrived %s after the sync applied the revocation, want within one chunk interval (%s)",
			s.LastCanaryChunkTime.Sub(applied), inFlightChunkInterval)
	}
	if s.PostRevocationDelivery == nil || s.CanaryChunksAfterRequest == 0 {
		t.Errorf("stream %+v: want the canary content delivered during the sync's lag measured", s)
	}
}

// TestInFlightDeliveredThenCutIsABreach: a stream that re-checks before
// every chunk goes on delivering the canary's content until the ACL sync
// applies the revocation, then is cut with a declared end. With an SLO of
// 0 that delivery breaches: the stream is DeliveredThenCut, never a bare
// Cut, the run SLOBreached, and the canary's summary counts it as such.
func TestInFlightDeliveredThenCutIsABreach(t *testing.T) {
	t.Parallel()
	_, run := inFlightRun(t, ragtarget.ReauthorizePerChunk, 300*time.Millisecond, 0)
	got := crWaitDone(t, run)
	s := inFlightStream(t, got)
	if s.EndReason != "access_revoked" || s.CanaryChunksAfterRequest == 0 || s.PostRevocationDelivery == nil || s.PostRevocationDelivery.Duration <= 0 {
		t.Fatalf("stream %+v, want canary content after the request and a declared cut", s)
	}
	if s.Outcome != v1alpha1.InFlightDeliveredThenCut {
		t.Errorf("stream outcome %s, want DeliveredThenCut: it delivered %d canary chunks (%d bytes) until %s after the request before its cut",
			s.Outcome, s.CanaryChunksAfterRequest, s.CanaryBytesAfterRequest, s.PostRevocationDelivery.Duration)
	}
	if got.Status.Verdict != v1alpha1.VerdictSLOBreached {
		t.Errorf("verdict %s (%s), want SLOBreached by the delivery before the cut", got.Status.Verdict, got.Status.Message)
	}
	if sum := shared.InFlightSummary(got.Status.InFlight); sum == nil || sum.Outcomes != "DeliveredThenCut=1" {
		t.Errorf("summary %+v, want outcomes DeliveredThenCut=1", sum)
	}
}

// TestInFlightIntervalReauthorizationCutsWithinItsInterval: a stream that
// re-checks access every 450ms is cut too, its canary content stopping no
// later than one re-check interval and one chunk after the ACL sync.
func TestInFlightIntervalReauthorizationCutsWithinItsInterval(t *testing.T) {
	t.Parallel()
	const every = 450 * time.Millisecond
	tg := startCRTarget(t, ragtarget.Config{StreamChunkInterval: inFlightChunkInterval,
		StreamReauthorize: ragtarget.StreamReauthorize{Mode: ragtarget.ReauthorizeInterval, Every: every}}, 300*time.Millisecond, false)
	ns := crFixture(t, tg.URL)
	crDeclareSurfaces(t, ns, tg)
	got := crWaitDone(t, crRun(t, ns, 20*time.Second, v1alpha1.SurfaceSearch, v1alpha1.SurfaceInFlight))
	m := got.Status.InFlight
	if m == nil || len(m.Streams) != 1 {
		t.Fatalf("verdict %s (%s), status.inFlight %+v, want one stream", got.Status.Verdict, got.Status.Message, m)
	}
	s := m.Streams[0]
	_, applied := tg.appliedRevocation()
	req := got.Status.RevokeRequestedTime.Time
	t.Logf("stream: %s %s, delivery %v (%d bytes after the request); sync applied %s after the request",
		s.Outcome, s.EndReason, s.PostRevocationDelivery, s.CanaryBytesAfterRequest, applied.Sub(req))
	// Cut by its declared end; delivered first when canary content
	// arrived after the request.
	want := v1alpha1.InFlightCut
	if s.CanaryChunksAfterRequest > 0 {
		want = v1alpha1.InFlightDeliveredThenCut
	}
	if s.Outcome != want || s.EndReason != "access_revoked" || applied.IsZero() || s.LastCanaryChunkTime == nil {
		t.Fatalf("stream %+v, want %s with access_revoked after the applied sync", s, want)
	}
	if s.LastCanaryChunkTime.After(applied.Add(every + inFlightChunkInterval)) {
		t.Errorf("canary content %s after the sync, want within the re-check interval and one chunk (%s)",
			s.LastCanaryChunkTime.Sub(applied), every+inFlightChunkInterval)
	}
}

// TestInFlightRestartMidStreamIsAnError stops the operator while a stream
// it opened before the revocation is still delivering: a fresh operator
// holds no stream, so what it delivered after the request is unknown. The
// stream is reported as an Error and the run Inconclusive, never as a cut
// or as nothing delivered; the Search surface is still measured.
func TestInFlightRestartMidStreamIsAnError(t *testing.T) {
	t.Parallel() // its own API server and operator
	cfg, c := startOwnAPIServer(t)
	tg := startCRTargetWith(t, ragtarget.Config{StreamChunkInterval: inFlightChunkInterval},
		crTargetOptions{hold: true})
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "restart-inflight-"}}
	crCreateIn(t, c, ns)
	crFixtureIn(t, c, ns.Name, tg.URL)
	crDeclareSurfacesIn(t, c, ns.Name, tg)
	run := crRunSpec(ns.Name, 20*time.Second, v1alpha1.SurfaceSearch, v1alpha1.SurfaceInFlight)
	crCreateIn(t, c, run)

	first := startTestOperator(t, cfg, 250*time.Millisecond)
	testutil.Eventually(t, eventuallyTimeout, "the revocation requested while the stream delivers", func() error {
		if got := crGetIn(t, c, run); got.Status.Phase != v1alpha1.PhaseAwaitingExclusion {
			return fmt.Errorf("phase %q (%s)", got.Status.Phase, got.Status.Message)
		}
		return nil
	})
	first.stop()
	tg.release()
	startTestOperator(t, cfg, 250*time.Millisecond)

	got := crWaitDoneIn(t, c, run)
	if got.Status.Verdict != v1alpha1.VerdictInconclusive || !strings.Contains(got.Status.Message, "in-flight stream failed") {
		t.Fatalf("verdict %s (%s), want Inconclusive for the lost stream", got.Status.Verdict, got.Status.Message)
	}
	m := got.Status.InFlight
	if m == nil || len(m.Streams) != 1 || m.Streams[0].Outcome != v1alpha1.InFlightError ||
		!strings.Contains(m.Streams[0].Message, "restarted") || m.PostRevocationDelivery != nil || m.Delivery != "?" {
		t.Fatalf("status.inFlight %+v, want one Error stream and no delivery", m)
	}
	if s := crSurface(t, got, v1alpha1.SurfaceSearch); !s.Excluded {
		t.Errorf("Search %+v, want still measured to exclusion", s)
	}
}

// TestInFlightMeasurementSurvivesAFailedDecisionWrite: the status write
// that records a run's verdict (entering CleaningUp) fails once, so the run
// decides again from the stored status. Its streams' measurement is the
// one they delivered, not "the operator restarted" (the error reported
// when the streams were let go before their measurement was stored).
func TestInFlightMeasurementSurvivesAFailedDecisionWrite(t *testing.T) {
	t.Parallel() // its own API server and operator
	cfg, c := startOwnAPIServer(t)
	tg := startCRTarget(t, ragtarget.Config{StreamChunkInterval: inFlightChunkInterval,
		StreamReauthorize: ragtarget.StreamReauthorize{Mode: ragtarget.ReauthorizePerChunk}}, 300*time.Millisecond, false)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "inflight-write-"}}
	crCreateIn(t, c, ns)
	crFixtureIn(t, c, ns.Name, tg.URL)
	crDeclareSurfacesIn(t, c, ns.Name, tg)
	var failed atomic.Bool
	funcs := interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, kc client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			if run, ok := obj.(*v1alpha1.CanaryRun); ok && sub == "status" && run.Status.Phase == v1alpha1.PhaseCleaningUp && failed.CompareAndSwap(false, true) {
				return errors.New("injected: the API server did not take the write")
			}
			return kc.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	}
	startConflictOperator(t, cfg, shard.Replica{}, &funcs)
	run := crRunSpec(ns.Name, 20*time.Second, v1alpha1.SurfaceSearch, v1alpha1.SurfaceInFlight)
	crCreateIn(t, c, run)
	got := crWaitDoneIn(t, c, run)
	if !failed.Load() {
		t.Fatal("no write failed: the test tests nothing")
	}
	m := got.Status.InFlight
	if m == nil || len(m.Streams) != 1 {
		t.Fatalf("verdict %s (%s), status.inFlight %+v, want one stream", got.Status.Verdict, got.Status.Message, m)
	}
	if s := m.Streams[0]; s.Outcome == v1alpha1.InFlightError || s.OpenedTime == nil {
		t.Fatalf("stream %+v: the measurement was lost with the failed write", s)
	}
}
