package controllers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/controllers/canaryrun"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/targettest"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// crTarget is a real ragtarget behind a thin test gate over real HTTP. The
// gate is how the test knows the ground truth: the ragtarget sync that
// applies a revocation (ACL sync for a removed grant or membership, content
// sync for a deleted document) never ticks on its own; the test runs it, so
// it knows exactly when a revocation reached the index. It also records
// document deletions and group membership changes, can make persona calls
// fail after the revocation (fault injection) and can replace the target's
// capabilities reply.
type crTarget struct {
	*targettest.Target
	opts crTargetOptions

	// mu is held across every test-driven sync and while a revocation
	// request is noted, so no periodic sync can apply a revocation early.
	mu      sync.Mutex
	revoked bool
	// syncStart and syncEnd bracket the one sync that applied the revocation.
	syncStart, syncEnd time.Time
	// revocations counts revocation requests.
	revocations int
	// membership logs group membership requests as "PUT|DELETE group/principal".
	membership []string

	failing     atomic.Bool
	deletedDocs sync.Map // document ID → true
	// released lets a held revocation be applied (see crTargetOptions.hold).
	released atomic.Bool
	// streamDone is when each chat stream's finish chunk was written,
	// server side.
	streamDone []time.Time
}

// crTargetOptions shape a crTarget.
type crTargetOptions struct {
	// lag is how long after the revocation request the sync applying it runs.
	lag time.Duration
	// failAfterRevoke fails every persona call once the revocation was requested.
	failAfterRevoke bool
	// revokeSync is the sync that applies the revocation: SyncACL (default)
	// for a grant or membership, SyncContent for a deleted document.
	revokeSync ragtarget.SyncKind
	// capabilities, when set, is served as the GET /v1/capabilities reply.
	capabilities string
	// hold keeps the revocation from reaching the index until the test
	// calls release, so a test can act between request and exclusion
	// however slow the machine is.
	hold bool
}

// release lets a held revocation reach the index at the next sync tick.
func (tg *crTarget) release() { tg.released.Store(true) }

// startCRTarget serves cfg with ACL sync only when the test runs it. lag is
// how long after the revocation request the ACL sync applying it runs.
func startCRTarget(t *testing.T, cfg ragtarget.Config, lag time.Duration, failAfterRevoke bool) *crTarget {
	t.Helper()
	return startCRTargetWith(t, cfg, crTargetOptions{lag: lag, failAfterRevoke: failAfterRevoke})
}

// startCRTargetWith serves cfg with the revocation's sync only when the test
// runs it; see crTargetOptions.
func startCRTargetWith(t *testing.T, cfg ragtarget.Config, opts crTargetOptions) *crTarget {
	t.Helper()
	if opts.revokeSync == "" {
		opts.revokeSync = ragtarget.SyncACL
	}
	cfg.SourceToken = testSourceToken
	// Personas a test adds (cfg.Tokens) join the fixture's two.
	tokens := fixtureTokens()
	maps.Copy(tokens, cfg.Tokens)
	cfg.Tokens = tokens
	if cfg.ContentSyncInterval == 0 {
		cfg.ContentSyncInterval = 200 * time.Millisecond
	}
	cfg.ACLSyncInterval = targettest.Manual
	if opts.revokeSync == ragtarget.SyncContent {
		cfg.ContentSyncInterval = targettest.Manual
	}
	tg := &crTarget{opts: opts}
	tg.Target = targettest.Start(t, cfg, targettest.Wrap(tg.gate))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tg.driveSync(ctx)
	}()
	// Registered after the target's own cleanup, so it runs first: no sync
	// reaches a closed service.
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return tg
}

func (tg *crTarget) gate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.Path
		if tg.isRevocation(r) {
			tg.mu.Lock()
			tg.revoked = true
			tg.revocations++
			tg.mu.Unlock()
			if tg.opts.failAfterRevoke {
				tg.failing.Store(true)
			}
		}
		switch {
		case r.Method == http.MethodGet && path == "/v1/capabilities" && tg.opts.capabilities != "":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(tg.opts.capabilities))
			return
		case strings.HasPrefix(path, "/v1/groups/"):
			tg.mu.Lock()
			tg.membership = append(tg.membership, r.Method+" "+strings.Replace(strings.TrimPrefix(path, "/v1/groups/"), "/members/", "/", 1))
			tg.mu.Unlock()
		case r.Method == http.MethodDelete && strings.HasPrefix(path, "/v1/documents/") && !strings.Contains(path, "/grants/"):
			tg.deletedDocs.Store(strings.TrimPrefix(path, "/v1/documents/"), true)
		case tg.failing.Load() && (path == "/v1/search" || path == "/v1/answer"):
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"code":"unavailable","message":"injected"}`))
			return
		}
		if strings.HasSuffix(path, "/chat/completions") {
			w = &doneRecorder{ResponseWriter: w, tg: tg}
		}
		next.ServeHTTP(w, r)
	})
}

// doneRecorder notes when a chat stream's finish chunk is written: one
// chunk interval after its last content chunk, as the server saw it.
type doneRecorder struct {
	http.ResponseWriter
	tg *crTarget
}

func (d *doneRecorder) Write(b []byte) (int, error) {
	n, err := d.ResponseWriter.Write(b)
	if bytes.Contains(b, []byte(`"finish_reason":"stop"`)) {
		d.tg.mu.Lock()
		d.tg.streamDone = append(d.tg.streamDone, time.Now())
		d.tg.mu.Unlock()
	}
	return n, err
}

// Unwrap lets http.ResponseController flush the stream.
func (d *doneRecorder) Unwrap() http.ResponseWriter { return d.ResponseWriter }

// streamEnds are the finish chunk times of the chat streams served so far.
func (tg *crTarget) streamEnds() []time.Time {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return slices.Clone(tg.streamDone)
}

// isRevocation reports whether r is the request the revocation method
// sends: removing a grant, removing a group member, or deleting a canary
// document. The corpus's credential check deletes another document ID.
func (tg *crTarget) isRevocation(r *http.Request) bool {
	if r.Method != http.MethodDelete {
		return false
	}
	path := r.URL.Path
	return strings.Contains(path, "/grants/") ||
		(strings.HasPrefix(path, "/v1/groups/") && strings.Contains(path, "/members/")) ||
		strings.HasPrefix(path, "/v1/documents/"+canaryrun.DocumentIDPrefix)
}

// driveSync syncs ACLs (and content, when a content sync applies the
// revocation) every 100ms until a revocation arrives, then applies it once
// with the revocation's sync, lag later, recording when.
func (tg *crTarget) driveSync(ctx context.Context) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var revokedSeen time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		tg.mu.Lock()
		switch {
		case !tg.revoked:
			_ = tg.SyncNow(ragtarget.SyncACL)
			if tg.opts.revokeSync == ragtarget.SyncContent {
				_ = tg.SyncNow(ragtarget.SyncContent)
			}
		case revokedSeen.IsZero():
			revokedSeen = time.Now()
		case tg.syncStart.IsZero() && time.Since(revokedSeen) >= tg.opts.lag && (!tg.opts.hold || tg.released.Load()):
			tg.syncStart = time.Now()
			_ = tg.SyncNow(tg.opts.revokeSync)
			tg.syncEnd = time.Now()
		}
		tg.mu.Unlock()
	}
}

// revocationRequests is how many revocation requests the target received.
func (tg *crTarget) revocationRequests() int {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return tg.revocations
}

// membershipLog is the group membership requests so far, in order.
func (tg *crTarget) membershipLog() []string {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return slices.Clone(tg.membership)
}

func (tg *crTarget) appliedRevocation() (start, end time.Time) {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return tg.syncStart, tg.syncEnd
}

func (tg *crTarget) deleted(doc string) bool {
	_, ok := tg.deletedDocs.Load(doc)
	return ok
}

// fixtureCorpus is the Corpus crFixture creates; onTarget points a canary
// at it.
const fixtureCorpus = "target"

var onTarget = objects.OnCorpus(fixtureCorpus)

// crFixture creates, in a fresh namespace, the corpus, personas and
// credentials a run needs, the corpus reaching the target at url.
func crFixture(t *testing.T, url string) string {
	t.Helper()
	ns := newNamespace(t)
	crFixtureIn(t, k8sClient, ns, url)
	return ns
}

// crFixtureIn creates the fixture in namespace ns through c.
func crFixtureIn(t *testing.T, c client.Client, ns, url string) {
	t.Helper()
	for _, s := range []struct{ name, value string }{
		{objects.SourceSecretName, testSourceToken}, {"alice-cred", testAliceToken}, {"mallory-cred", testMalloryToken},
	} {
		crCreateIn(t, c, objects.CredentialSecret(ns, s.name, s.value))
	}
	crCreateIn(t, c, objects.Corpus(ns, fixtureCorpus, url))
	crCreateIn(t, c, objects.Persona(ns, "alice", "alice@example.com"))
	crCreateIn(t, c, objects.Persona(ns, "mallory", "mallory@example.com"))
}

func crCreate(t *testing.T, obj client.Object) {
	t.Helper()
	crCreateIn(t, k8sClient, obj)
}

func crCreateIn(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// crRun creates a run probing every 200ms with two confirmations.
func crRun(t *testing.T, ns string, exclusionTimeout time.Duration, surfaces ...v1alpha1.Surface) *v1alpha1.CanaryRun {
	t.Helper()
	run := crRunSpec(ns, exclusionTimeout, surfaces...)
	crCreate(t, run)
	return run
}

// crRunSpec is the run "run" on crFixture's corpus with objects.CanarySpec's
// rules (alice's grant revoked, probes every 200ms with two confirmations,
// mallory as the control persona, a 30s SLO), visible within 20s and
// excluded within exclusionTimeout, on surfaces (Search when none).
func crRunSpec(ns string, exclusionTimeout time.Duration, surfaces ...v1alpha1.Surface) *v1alpha1.CanaryRun {
	return objects.CanaryRun(ns, "run", onTarget, objects.Timeouts(20*time.Second, exclusionTimeout), objects.Probe(surfaces...))
}

func crGet(t *testing.T, run *v1alpha1.CanaryRun) *v1alpha1.CanaryRun {
	t.Helper()
	return crGetIn(t, k8sClient, run)
}

func crGetIn(t *testing.T, c client.Client, run *v1alpha1.CanaryRun) *v1alpha1.CanaryRun {
	t.Helper()
	var got v1alpha1.CanaryRun
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(run), &got); err != nil {
		t.Fatalf("reading run: %v", err)
	}
	return &got
}

// crWaitDone waits until the run reached Succeeded or Failed and released
// its finalizer.
func crWaitDone(t *testing.T, run *v1alpha1.CanaryRun) *v1alpha1.CanaryRun {
	t.Helper()
	return crWaitDoneIn(t, k8sClient, run)
}

func crWaitDoneIn(t *testing.T, c client.Client, run *v1alpha1.CanaryRun) *v1alpha1.CanaryRun {
	t.Helper()
	var got *v1alpha1.CanaryRun
	testutil.Eventually(t, runWaitTimeout(run), "run finished", func() error {
		got = crGetIn(t, c, run)
		if !isTerminal(got.Status.Phase) {
			var conds []string
			for _, c := range got.Status.Conditions {
				{
					conds = append(conds, c.Type+"="+string(c.Status)+"/"+c.Reason+": "+c.Message)
				}
			}
			return fmt.Errorf("phase %q (%s) %v", got.Status.Phase, got.Status.Message, conds)
		}
		// The terminal status is written before the finalizer is removed,
		// in a second request: wait for both.
		if controllerutil.ContainsFinalizer(got, v1alpha1.FinalizerCanaryRun) {
			return fmt.Errorf("phase %q but the finalizer is still set", got.Status.Phase)
		}
		return nil
	})
	return got
}

// runWaitTimeout is how long a test waits for run to end: never less than
// the run's own visibility and exclusion timeouts, so a run that does not
// converge ends with its verdict and that verdict, not a wait, fails the
// test.
func runWaitTimeout(run *v1alpha1.CanaryRun) time.Duration {
	p := run.Spec.Probing
	return max(eventuallyTimeout, p.VisibilityTimeout.Duration+p.ExclusionTimeout.Duration+eventuallyTimeout)
}

// crToken reads the canary's handle, the query its probes send.
func crToken(t *testing.T, run *v1alpha1.CanaryRun) string {
	t.Helper()
	return crTokenPair(t, run).Handle
}

// crTokenPair reads the canary handle and payload from the run's Secret.
func crTokenPair(t *testing.T, run *v1alpha1.CanaryRun) canaryrun.CanaryToken {
	t.Helper()
	var s corev1.Secret
	key := client.ObjectKey{Namespace: run.Namespace, Name: run.Status.TokenSecretName}
	if err := k8sClient.Get(context.Background(), key, &s); err != nil {
		t.Fatalf("reading token Secret: %v", err)
	}
	if !metav1.IsControlledBy(&s, run) {
		t.Errorf("token Secret is not owned by the run")
	}
	return canaryrun.CanaryToken{Handle: string(s.Data[canaryrun.HandleSecretKey]), Payload: string(s.Data[canaryrun.PayloadSecretKey])}
}

// crAssertNoToken checks the handle and the payload appear neither in
// status nor in events.
func crAssertNoToken(t *testing.T, run *v1alpha1.CanaryRun) {
	t.Helper()
	pair := crTokenPair(t, run)
	status, err := json.Marshal(run.Status)
	if err != nil {
		t.Fatal(err)
	}
	var list eventsv1.EventList
	if err := k8sClient.List(context.Background(), &list, client.InNamespace(run.Namespace)); err != nil {
		t.Fatal(err)
	}
	for _, token := range []string{pair.Handle, pair.Payload} {
		if len(token) < 16 {
			t.Fatalf("token %d characters long, want a random token", len(token))
		}
		if strings.Contains(string(status), token) {
			t.Error("a canary secret appears in status")
		}
		if run.Status.TokenHash == "" || strings.Contains(token, run.Status.TokenHash) {
			t.Errorf("tokenHash %q is empty or part of a canary secret", run.Status.TokenHash)
		}
		for _, e := range list.Items {
			if strings.Contains(e.Note, token) {
				t.Errorf("event %s carries a canary secret", e.Reason)
			}
		}
	}
}

func crSurface(t *testing.T, run *v1alpha1.CanaryRun, s v1alpha1.Surface) v1alpha1.SurfaceMeasurement {
	t.Helper()
	for _, m := range run.Status.Surfaces {
		if m.Surface == s {
			return m
		}
	}
	t.Fatalf("no %s measurement in status", s)
	return v1alpha1.SurfaceMeasurement{}
}

// TestCanaryRunMeasuresExclusion drives a run against a ragtarget whose
// revocation reaches the index 2s after the request, at a moment the test
// controls, and checks the measured interval contains that moment.
func TestCanaryRunMeasuresExclusion(t *testing.T) {
	t.Parallel()
	tg := startCRTarget(t, ragtarget.Config{}, 2*time.Second, false)
	ns := crFixture(t, tg.URL)
	run := crRun(t, ns, 20*time.Second, v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer)

	got := crWaitDone(t, run)
	if got.Status.Phase != v1alpha1.PhaseSucceeded || got.Status.Verdict != v1alpha1.VerdictSLOMet {
		t.Fatalf("phase %s verdict %s (%s), want Succeeded SLOMet", got.Status.Phase, got.Status.Verdict, got.Status.Message)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionComplete); c == nil || c.Status != metav1.ConditionTrue || c.Reason != string(v1alpha1.VerdictSLOMet) {
		t.Errorf("Complete condition %+v", c)
	}
	if got.Status.DocumentID != "rc-"+string(got.UID) || got.Status.TimeToVisibility == nil || got.Status.IsolationViolations != 0 {
		t.Errorf("documentID %q ttv %v violations %d", got.Status.DocumentID, got.Status.TimeToVisibility, got.Status.IsolationViolations)
	}
	s, e := tg.appliedRevocation()
	if s.IsZero() {
		t.Fatal("the revocation was never applied by the test's ACL sync")
	}
	req, ack := got.Status.RevokeRequestedTime.Time, got.Status.RevokeAcknowledgedTime.Time
	for _, surface := range []v1alpha1.Surface{v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer} {
		m := crSurface(t, got, surface)
		if !m.Excluded || m.Bounds == nil || m.Bounds.Lower == nil || m.Bounds.Upper == nil {
			t.Fatalf("%s: not excluded with both bounds: %+v", surface, m)
		}
		lower, upper := m.Bounds.Lower.Duration, m.Bounds.Upper.Duration
		t.Logf("%s: applied [%s, %s] after request; measured lower %s (from ack %s) upper %s; probes %+v",
			surface, s.Sub(req), e.Sub(req), lower, ack.Sub(req), upper, m.Probes)
		// Exclusion happened inside [s, e]. ack+lower is the last positive
		// probe's start and req+upper the first negative's end, to the
		// microsecond status stores.
		if ack.Add(lower).After(e) {
			t.Errorf("%s: lower bound %s puts exclusion after the ACL sync ended", surface, lower)
		}
		if req.Add(upper).Before(s) {
			t.Errorf("%s: upper bound %s puts exclusion before the ACL sync started", surface, upper)
		}
		// And the interval is tight: within about one probe round either side.
		if ack.Add(lower).Before(s.Add(-time.Second)) || req.Add(upper).After(e.Add(1500*time.Millisecond)) {
			t.Errorf("%s: interval [%s, %s] is loose around the sync at %s", surface, lower, upper, s.Sub(req))
		}
		if m.Probes.Positive == 0 || m.Probes.Negative < 2 || m.Reappearances != 0 {
			t.Errorf("%s: probe counts %+v reappearances %d", surface, m.Probes, m.Reappearances)
		}
	}
	if controllerutil.ContainsFinalizer(got, v1alpha1.FinalizerCanaryRun) {
		t.Error("finalizer kept after cleanup")
	}
	if !tg.deleted(got.Status.DocumentID) {
		t.Error("the canary document was not deleted during CleaningUp")
	}
	crAssertNoToken(t, got)
}

// TestCanaryRunTargetFailingIsNeverExcluded: after the revocation every
// persona call fails. The content really is excluded at the target, but
// ragcanary could not observe it: errors must never count as absences.
func TestCanaryRunTargetFailingIsNeverExcluded(t *testing.T) {
	t.Parallel()
	tg := startCRTarget(t, ragtarget.Config{}, 0, true)
	ns := crFixture(t, tg.URL)
	run := crRun(t, ns, 3*time.Second, v1alpha1.SurfaceSearch)

	got := crWaitDone(t, run)
	if got.Status.Verdict == v1alpha1.VerdictSLOMet || got.Status.Verdict != v1alpha1.VerdictInconclusive {
		t.Fatalf("verdict %s (%s), want Inconclusive", got.Status.Verdict, got.Status.Message)
	}
	if got.Status.Phase != v1alpha1.PhaseFailed {
		t.Errorf("phase %s, want Failed", got.Status.Phase)
	}
	m := crSurface(t, got, v1alpha1.SurfaceSearch)
	if m.Excluded || m.Probes.Errors == 0 || m.Probes.Negative != 0 || (m.Bounds != nil && m.Bounds.Upper != nil) {
		t.Errorf("measurement %+v: want errors counted, no negatives, no upper bound", m)
	}
	if !tg.deleted(got.Status.DocumentID) {
		t.Error("cleanup did not run after an inconclusive run")
	}
}

// TestCanaryRunIsolationViolation: a target that ignores access lists shows
// the canary to the control persona, which outranks any timing result.
func TestCanaryRunIsolationViolation(t *testing.T) {
	t.Parallel()
	tg := startCRTarget(t, ragtarget.Config{FilterMode: ragtarget.FilterNone}, 0, false)
	ns := crFixture(t, tg.URL)
	run := crRun(t, ns, 2*time.Second, v1alpha1.SurfaceSearch)

	got := crWaitDone(t, run)
	if got.Status.Verdict != v1alpha1.VerdictIsolationViolation || got.Status.IsolationViolations == 0 {
		t.Fatalf("verdict %s violations %d (%s), want IsolationViolation", got.Status.Verdict, got.Status.IsolationViolations, got.Status.Message)
	}
	testutil.Eventually(t, eventuallyTimeout, "IsolationViolation event", func() error {
		var list eventsv1.EventList
		if err := k8sClient.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return err
		}
		if !slices.ContainsFunc(list.Items, func(e eventsv1.Event) bool {
			return e.Reason == string(v1alpha1.VerdictIsolationViolation) && e.Type == "Warning"
		}) {
			return fmt.Errorf("no IsolationViolation warning among %d events", len(list.Items))
		}
		return nil
	})
	crAssertNoToken(t, got)
}

// TestCanaryRunDeletedMidFlightRemovesDocument: a run deleted while it
// waits for visibility revokes and deletes its document before it goes.
func TestCanaryRunDeletedMidFlightRemovesDocument(t *testing.T) {
	t.Parallel()
	// Content never syncs on its own: the run stays in AwaitingVisibility.
	tg := startCRTarget(t, ragtarget.Config{ContentSyncInterval: time.Hour}, 0, false)
	ns := crFixture(t, tg.URL)
	run := crRun(t, ns, 20*time.Second, v1alpha1.SurfaceSearch)

	var doc string
	testutil.Eventually(t, eventuallyTimeout, "awaiting visibility with a finalizer", func() error {
		got := crGet(t, run)
		if got.Status.Phase != v1alpha1.PhaseAwaitingVisibility || !controllerutil.ContainsFinalizer(got, v1alpha1.FinalizerCanaryRun) {
			return fmt.Errorf("phase %q finalizers %v", got.Status.Phase, got.Finalizers)
		}
		doc = got.Status.DocumentID
		return nil
	})
	if err := k8sClient.Delete(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	waitGone(t, run)
	if !tg.deleted(doc) {
		t.Fatal("the finalizer did not delete the canary document")
	}
	// Had the document survived, alice (granted) would see it once content syncs.
	if err := tg.SyncNow(ragtarget.SyncContent); err != nil {
		t.Fatal(err)
	}
	hits, err := tg.Driver(t, 2*time.Second).Search(context.Background(), driver.Token(testAliceToken), "ragcanary revocation canary", 10)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(hits, func(h driver.Hit) bool { return h.DocumentID == doc }) {
		t.Error("the canary document is still retrievable after the run was deleted")
	}
}
