package controllers

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/targettest"
	"github.com/ragcanary/ragcanary/internal/metrics"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
	"github.com/ragcanary/ragcanary/internal/schedule"
)

// testEveToken is a third persona's credential: a persona outside every
// access list in the union test.
const testEveToken = "test-eve-token"

// sentinelDigestInterval is how often the test target derives digests.
const sentinelDigestInterval = 500 * time.Millisecond

// digestCarrier is the digest ragtarget derives from collection rc, where
// every canary document lives.
const digestCarrier = "digest-rc"

// startSentinelTarget serves a ragtarget deriving a digest of collection rc
// every sentinelDigestInterval under rule, with eve as a third persona.
func startSentinelTarget(t *testing.T, rule ragtarget.DigestACL) *crTarget {
	t.Helper()
	return startCRTarget(t, ragtarget.Config{DigestInterval: sentinelDigestInterval, DigestACL: rule,
		Tokens: map[string]string{testEveToken: "eve@example.com"}}, 0, false)
}

// sentinelFixture is crFixture with eve and the Search (with hit text) and
// Answer surfaces declared on the assistant's own APIs.
func sentinelFixture(t *testing.T, tg *crTarget) string {
	t.Helper()
	ns := crFixture(t, tg.URL)
	crCreate(t, objects.CredentialSecret(ns, "eve-cred", testEveToken))
	crCreate(t, objects.Persona(ns, "eve", "eve@example.com"))
	crDeclareSurfaces(t, ns, tg)
	return ns
}

// sentinel is a sentinel on crFixture's corpus owned by alice, watched by
// controls for lifetime on Search and Answer, probing at least every 200ms
// and at most every second.
func sentinel(lifetime time.Duration, controls ...string) []objects.CanaryOption {
	return []objects.CanaryOption{onTarget, objects.Sentinel(lifetime), objects.Controls(controls...),
		objects.Timeouts(20*time.Second, 20*time.Second), objects.Probe(v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer),
		func(s *v1alpha1.CanarySpec) { s.Probing.MaxInterval = objects.Duration(time.Second) }}
}

func sentinelRun(t *testing.T, ns string, lifetime time.Duration, controls ...string) *v1alpha1.CanaryRun {
	t.Helper()
	run := objects.CanaryRun(ns, "sentinel", sentinel(lifetime, controls...)...)
	crCreate(t, run)
	return run
}

// carriedBy reports whether any of a sighting's carriers is a passage of doc.
func carriedBy(s v1alpha1.SentinelSighting, doc string) bool {
	return slices.ContainsFunc(s.Carriers, func(c string) bool { return strings.Split(c, "#")[0] == doc })
}

// assertDigestQuotes checks the test target's index holds the digest with
// the sentinel's payload readable by exactly acl: the derivation happened,
// so a test finding no sighting is not vacuous.
func assertDigestQuotes(t *testing.T, tg *crTarget, run *v1alpha1.CanaryRun, acl ...string) {
	t.Helper()
	payload := crTokenPair(t, run).Payload
	d, ok := tg.Indexed(digestCarrier)
	if !ok {
		t.Fatalf("the target never indexed %s", digestCarrier)
	}
	if !slices.ContainsFunc(d.Passages, func(p string) bool { return strings.Contains(p, payload) }) {
		t.Fatalf("%s does not quote the sentinel's payload", digestCarrier)
	}
	if !slices.Equal(d.ACL, acl) {
		t.Fatalf("%s readable by %v, want %v", digestCarrier, d.ACL, acl)
	}
}

// TestSentinelPublicDigestIsAViolationNamingTheDigest: a digest job that
// makes its digests public leaks the sentinel's lead sentence to everyone;
// the control persona's sighting names the digest, the persona and the
// surface, within a digest interval and a probe round of visibility.
func TestSentinelPublicDigestIsAViolationNamingTheDigest(t *testing.T) {
	t.Parallel()
	tg := startSentinelTarget(t, ragtarget.DigestPublic)
	ns := sentinelFixture(t, tg)
	run := sentinelRun(t, ns, 3*time.Second, "mallory")

	var watching *v1alpha1.CanaryRun
	testutil.Eventually(t, eventuallyTimeout, "a sighting persisted while watching", func() error {
		watching = crGet(t, run)
		if st := watching.Status.Sentinel; st == nil || st.TotalSightings == 0 {
			return fmt.Errorf("phase %s, no sighting yet (%s)", watching.Status.Phase, watching.Status.Message)
		}
		return nil
	})
	got := crWaitDone(t, run)
	if got.Status.Verdict != v1alpha1.VerdictIsolationViolation {
		t.Fatalf("verdict %s (%s), want IsolationViolation", got.Status.Verdict, got.Status.Message)
	}
	st := got.Status.Sentinel
	if st == nil || len(st.Sightings) == 0 || st.TotalSightings < int32(len(st.Sightings)) {
		t.Fatalf("sentinel status %+v, want sightings", st)
	}
	first := st.Sightings[0]
	for _, s := range st.Sightings {
		if s.Persona != "mallory" || s.OwnDocument || !carriedBy(s, digestCarrier) {
			t.Errorf("sighting %+v, want mallory through %s, never the sentinel's own document", s, digestCarrier)
		}
		if s.Time.Before(&first.Time) {
			first = s
		}
	}
	surfaces := map[v1alpha1.Surface]bool{}
	for _, s := range st.Sightings {
		surfaces[s.Surface] = true
	}
	if !surfaces[v1alpha1.SurfaceSearch] || !surfaces[v1alpha1.SurfaceAnswer] {
		t.Errorf("sightings on %v, want Search and Answer", surfaces)
	}
	detection := first.Time.Sub(got.Status.VisibleTime.Time)
	t.Logf("public digest: detected %s after visibility, %s after the share request (first sighting on %s through %v; %d sightings)",
		detection, first.Time.Sub(got.Status.ShareRequestedTime.Time), first.Surface, first.Carriers, st.TotalSightings)
	// A digest interval, the content and ACL syncs that index it (200ms,
	// 100ms), one probe gap (≤ 1s) and slack for a loaded machine.
	if limit := sentinelDigestInterval + 300*time.Millisecond + time.Second + time.Second; detection > limit {
		t.Errorf("detected %s after visibility, want within %s", detection, limit)
	}
	if !strings.Contains(got.Status.Message, digestCarrier) || !strings.Contains(got.Status.Message, "mallory") {
		t.Errorf("message %q does not name the carrier and the persona", got.Status.Message)
	}
	if !tg.deleted(got.Status.DocumentID) {
		t.Error("the sentinel document was not deleted")
	}
	assertSightingSignals(t, got, "mallory")
	crAssertNoToken(t, got)
}

// assertSightingSignals checks a sighting reached the metric (per persona
// and surface) and one Warning event naming the persona and the carrier.
func assertSightingSignals(t *testing.T, run *v1alpha1.CanaryRun, persona string) {
	t.Helper()
	var counted float64
	for _, s := range []v1alpha1.Surface{v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer} {
		counted += promtestutil.ToFloat64(metrics.SentinelSightingsTotal.With(prometheus.Labels{metrics.LabelNamespace: run.Namespace,
			metrics.LabelCanary: "", metrics.LabelCorpus: run.Spec.CorpusRef.Name, metrics.LabelPersona: persona, metrics.LabelSurface: string(s)}))
	}
	if counted == 0 || counted > float64(run.Status.Sentinel.TotalSightings) {
		t.Errorf("sentinel_sightings_total for %s = %v, want 1..%d", persona, counted, run.Status.Sentinel.TotalSightings)
	}
	var list eventsv1.EventList
	if err := k8sClient.List(context.Background(), &list, client.InNamespace(run.Namespace)); err != nil {
		t.Fatal(err)
	}
	var warned int
	for _, e := range list.Items {
		if e.Reason == v1alpha1.ReasonSentinelSighting && e.Regarding.Name == run.Name {
			warned++
			if e.Type != "Warning" || !strings.Contains(e.Note, persona) || !strings.Contains(e.Note, digestCarrier) {
				t.Errorf("event %s %q, want a Warning naming %s and %s", e.Type, e.Note, persona, digestCarrier)
			}
		}
	}
	if warned != 1 {
		t.Errorf("%d %s events, want one (the first sighting)", warned, v1alpha1.ReasonSentinelSighting)
	}
}

// TestSentinelMostRestrictiveDigestStaysIsolated: a digest readable only by
// who may read all its sources is derived from the sentinel and readable by
// its owner alone; over the whole lifetime the control persona sees
// nothing, with valid replies on every surface: Isolated.
func TestSentinelMostRestrictiveDigestStaysIsolated(t *testing.T) {
	t.Parallel()
	tg := startSentinelTarget(t, ragtarget.DigestMostRestrictive)
	ns := sentinelFixture(t, tg)
	run := sentinelRun(t, ns, 3*time.Second, "mallory")

	testutil.Eventually(t, eventuallyTimeout, "the digest derived from the sentinel", func() error {
		got := crGet(t, run)
		if got.Status.Phase != v1alpha1.PhaseWatching {
			return fmt.Errorf("phase %s", got.Status.Phase)
		}
		if _, ok := tg.Indexed(digestCarrier); !ok {
			return fmt.Errorf("no digest indexed")
		}
		return nil
	})
	watching := crGet(t, run)
	assertDigestQuotes(t, tg, watching, "alice@example.com")
	got := crWaitDone(t, run)
	if got.Status.Verdict != v1alpha1.VerdictIsolated {
		t.Fatalf("verdict %s (%s), want Isolated", got.Status.Verdict, got.Status.Message)
	}
	if st := got.Status.Sentinel; st == nil || st.TotalSightings != 0 || len(st.Sightings) != 0 || got.Status.IsolationViolations != 0 {
		t.Fatalf("sentinel status %+v, violations %d, want none", st, got.Status.IsolationViolations)
	}
	for _, s := range []v1alpha1.Surface{v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer} {
		assertControlAnswered(t, got, s)
	}
	t.Logf("most-restrictive: no sighting in %s; controls %+v; %s", 3*time.Second, got.Status.ControlProbes, got.Status.Message)
	if !strings.Contains(got.Status.Message, "mallory on Search") {
		t.Errorf("message %q does not give the control persona's counts", got.Status.Message)
	}
	crAssertNoToken(t, got)
}

// TestSentinelUnionDigestLeaksToTheUnionOnly: a digest readable by anyone
// allowed on any source leaks the sentinel to mallory, who may read another
// document of the collection, and not to eve, who may read none.
func TestSentinelUnionDigestLeaksToTheUnionOnly(t *testing.T) {
	t.Parallel()
	tg := startSentinelTarget(t, ragtarget.DigestUnion)
	ns := sentinelFixture(t, tg)
	putSourceDocument(t, tg, "rc-notes", "Notes for mallory. Nothing secret here.", "mallory@example.com")
	run := sentinelRun(t, ns, 3*time.Second, "mallory", "eve")

	got := crWaitDone(t, run)
	if got.Status.Verdict != v1alpha1.VerdictIsolationViolation {
		t.Fatalf("verdict %s (%s), want IsolationViolation", got.Status.Verdict, got.Status.Message)
	}
	st := got.Status.Sentinel
	if st == nil || len(st.Sightings) == 0 {
		t.Fatalf("sentinel status %+v, want sightings", st)
	}
	for _, s := range st.Sightings {
		if s.Persona != "mallory" || !carriedBy(s, digestCarrier) || s.OwnDocument {
			t.Errorf("sighting %+v, want mallory through %s only", s, digestCarrier)
		}
	}
	first := st.Sightings[0]
	t.Logf("union digest: detected %s after visibility, %s after the share request (first on %s through %v; %d sightings)",
		first.Time.Sub(got.Status.VisibleTime.Time), first.Time.Sub(got.Status.ShareRequestedTime.Time), first.Surface, first.Carriers, st.TotalSightings)
	for _, s := range []v1alpha1.Surface{v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer} {
		for _, c := range got.Status.ControlProbes {
			if c.Persona == "eve" && c.Surface == s && (c.Answered == 0 || c.Errors != 0) {
				t.Errorf("eve on %s: %+v, want valid replies (her silence must be tested)", s, c)
			}
		}
		eve := prometheus.Labels{metrics.LabelNamespace: ns, metrics.LabelCanary: "", metrics.LabelCorpus: "target",
			metrics.LabelPersona: "eve", metrics.LabelSurface: string(s)}
		if n := promtestutil.ToFloat64(metrics.SentinelSightingsTotal.With(eve)); n != 0 {
			t.Errorf("eve counted %v sightings on %s", n, s)
		}
	}
	assertSightingSignals(t, got, "mallory")
	crAssertNoToken(t, got)
}

// putSourceDocument writes a document readable by principals through the
// contract's source API.
func putSourceDocument(t *testing.T, tg *crTarget, id, body string, principals ...string) {
	t.Helper()
	quoted := make([]string, len(principals))
	for i, p := range principals {
		quoted[i] = fmt.Sprintf("%q", p)
	}
	doc := fmt.Sprintf(`{"title":"notes","body":%q,"principals":[%s]}`, body, strings.Join(quoted, ","))
	req, err := http.NewRequest(http.MethodPut, tg.URL+"/v1/documents/"+id, bytes.NewBufferString(doc))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testSourceToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("PUT %s: %s", id, resp.Status)
	}
}

// TestSentinelCanaryReplantsAndCleansUp: a sentinel canary's schedule
// plants a fresh sentinel (new document, new payload) once the last one's
// lifetime ended, and deleting the canary removes every sentinel document
// from the target.
func TestSentinelCanaryReplantsAndCleansUp(t *testing.T) {
	tg := targettest.Start(t, fixtureConfig(ragtarget.Config{ContentSyncInterval: 100 * time.Millisecond, ACLSyncInterval: 100 * time.Millisecond}))
	ns := crFixture(t, tg.URL)
	canary := objects.RevocationCanary(ns, "sentinel", time.Hour, append(sentinel(time.Second, "mallory"),
		objects.Probe(v1alpha1.SurfaceSearch))...)
	canary.Annotations = map[string]string{v1alpha1.AnnotationRunNow: "now"}
	scheduleClock.SetTime(time.Now())
	crCreate(t, canary)
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), canary) })
	created := canaryGet(t, canary).CreationTimestamp.UTC()

	first := &v1alpha1.CanaryRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: schedule.RunNowName(canary.Name, "now")}}
	testutil.Eventually(t, eventuallyTimeout, "the run-now sentinel created", func() error {
		return k8sClient.Get(context.Background(), client.ObjectKeyFromObject(first), first)
	})
	first = crWaitDone(t, first)
	if first.Status.Verdict != v1alpha1.VerdictIsolated {
		t.Fatalf("first sentinel: verdict %s (%s), want Isolated", first.Status.Verdict, first.Status.Message)
	}
	firstPayload := crTokenPair(t, first).Payload
	testutil.Eventually(t, eventuallyTimeout, "the canary's SLOMet condition reading the isolated sentinel", func() error {
		c := meta.FindStatusCondition(canaryGet(t, canary).Status.Conditions, v1alpha1.ConditionSLOMet)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != string(v1alpha1.VerdictIsolated) {
			return fmt.Errorf("SLOMet condition %+v", c)
		}
		return nil
	})

	// The next scheduled run is due an hour after creation.
	scheduleClock.SetTime(created.Add(time.Hour + time.Second))
	var second *v1alpha1.CanaryRun
	testutil.Eventually(t, eventuallyTimeout, "a second sentinel planted and watched", func() error {
		_ = k8sClient.Patch(context.Background(), canaryGet(t, canary), client.RawPatch("application/merge-patch+json",
			fmt.Appendf(nil, `{"metadata":{"annotations":{"test.ragcanary.dev/poke":"%d"}}}`, time.Now().UnixNano())))
		var runs v1alpha1.CanaryRunList
		if err := k8sClient.List(context.Background(), &runs, client.InNamespace(ns)); err != nil {
			return err
		}
		for i := range runs.Items {
			r := &runs.Items[i]
			if r.Name != first.Name && r.Status.Phase == v1alpha1.PhaseWatching {
				second = r
				return nil
			}
		}
		return fmt.Errorf("%d runs, none other than %s watching", len(runs.Items), first.Name)
	})
	if second.Status.DocumentID == first.Status.DocumentID || second.Status.TokenHash == first.Status.TokenHash ||
		crTokenPair(t, second).Payload == firstPayload {
		t.Fatalf("the second sentinel reuses the first's document or payload")
	}
	if _, ok := tg.SourceDocuments()[first.Status.DocumentID]; ok {
		t.Errorf("the first sentinel %s is still at the source", first.Status.DocumentID)
	}

	// Deleted mid-watch: the run's finalizer removes its sentinel.
	if err := k8sClient.Delete(context.Background(), canary); err != nil {
		t.Fatal(err)
	}
	waitGone(t, second)
	testutil.Eventually(t, eventuallyTimeout, "no sentinel left at the target", func() error {
		for _, doc := range []string{first.Status.DocumentID, second.Status.DocumentID} {
			if _, ok := tg.SourceDocuments()[doc]; ok {
				return fmt.Errorf("%s still at the source", doc)
			}
			if _, ok := tg.Indexed(doc); ok {
				return fmt.Errorf("%s still indexed", doc)
			}
		}
		return nil
	})
}

// TestSentinelRestartWhileWatchingKeepsItsEvidence: the operator stops
// while a sentinel is watched and already seen through a public digest; a
// fresh operator rebuilds the run from status: the watch window is the one
// persisted before watching began, the sightings persisted before the stop
// are kept as they were, and the lifetime ends in the violation.
func TestSentinelRestartWhileWatchingKeepsItsEvidence(t *testing.T) {
	t.Parallel() // its own API server and operator
	cfg, c := startOwnAPIServer(t)
	tg := startSentinelTarget(t, ragtarget.DigestPublic)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sentinel-restart-"}}
	crCreateIn(t, c, ns)
	crFixtureIn(t, c, ns.Name, tg.URL)
	// The contract's answer surface: its citations name the carrier.
	run := objects.CanaryRun(ns.Name, "sentinel", append(sentinel(6*time.Second, "mallory"), objects.Probe(v1alpha1.SurfaceAnswer))...)
	crCreateIn(t, c, run)

	first := startTestOperator(t, cfg, 250*time.Millisecond)
	var before *v1alpha1.CanaryRun
	// Entering Watching and fixing the window are two writes (the window
	// is derived from the persisted visibility time, so a restart between
	// them fixes the same one): wait for both, so the restart tests a
	// window that was stored.
	testutil.Eventually(t, eventuallyTimeout, "a sighting persisted while watching, the window fixed", func() error {
		before = crGetIn(t, c, run)
		if st := before.Status.Sentinel; before.Status.Phase != v1alpha1.PhaseWatching || st == nil || len(st.Sightings) == 0 || st.WatchStartTime == nil {
			return fmt.Errorf("phase %s, sentinel %+v", before.Status.Phase, before.Status.Sentinel)
		}
		return nil
	})
	first.stop()
	before = crGetIn(t, c, run)
	if before.Status.Phase != v1alpha1.PhaseWatching {
		t.Fatalf("the lifetime ended before the restart could be tested: phase %s", before.Status.Phase)
	}
	startTestOperator(t, cfg, 250*time.Millisecond)
	got := crWaitDoneIn(t, c, run)

	b, a := before.Status.Sentinel, got.Status.Sentinel
	if !a.WatchStartTime.Equal(b.WatchStartTime) || !a.WatchUntil.Equal(b.WatchUntil) {
		t.Errorf("watch window moved across the restart: [%v, %v] → [%v, %v]", b.WatchStartTime, b.WatchUntil, a.WatchStartTime, a.WatchUntil)
	}
	if a.TotalSightings < b.TotalSightings || len(a.Sightings) < len(b.Sightings) {
		t.Fatalf("sightings went from %d to %d across the restart", b.TotalSightings, a.TotalSightings)
	}
	for i := range b.Sightings {
		if !equalSighting(a.Sightings[i], b.Sightings[i]) {
			t.Errorf("sighting %d changed across the restart: %+v → %+v", i, b.Sightings[i], a.Sightings[i])
		}
	}
	if got.Status.Verdict != v1alpha1.VerdictIsolationViolation || !carriedBy(a.Sightings[0], digestCarrier) {
		t.Fatalf("verdict %s (%s), first sighting %+v", got.Status.Verdict, got.Status.Message, a.Sightings[0])
	}
	t.Logf("restart while watching: %d sightings before the stop, %d at the end; window kept", b.TotalSightings, a.TotalSightings)
}

func equalSighting(a, b v1alpha1.SentinelSighting) bool {
	return a.Persona == b.Persona && a.Surface == b.Surface && a.OwnDocument == b.OwnDocument &&
		slices.Equal(a.Carriers, b.Carriers) && a.Time.Equal(&b.Time)
}
