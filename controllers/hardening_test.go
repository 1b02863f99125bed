package controllers

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/controllers/canaryrun"
	"github.com/ragcanary/ragcanary/controllers/revocationcanary"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/targettest"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
	"github.com/ragcanary/ragcanary/internal/schedule"
)

// Hardening tests: what a hostile, broken or slow target, a deleted
// dependency or a too eager schedule must not do to the operator.

// gatedTarget is a real ragtarget behind a gate: the gate may answer a
// request itself (the test's fault) and counts the calls on canary
// documents themselves (PUT and DELETE /v1/documents/rc-…, not grants).
type gatedTarget struct {
	*targettest.Target

	mu sync.Mutex
	// docCalls counts canary document calls by method.
	docCalls map[string]int
	// intercept, when it returns true, has answered the request instead of
	// the ragtarget.
	intercept func(w http.ResponseWriter, r *http.Request) bool
}

// startGatedTarget serves cfg (test tokens filled in) behind intercept,
// which may be nil.
func startGatedTarget(t *testing.T, cfg ragtarget.Config, intercept func(http.ResponseWriter, *http.Request) bool) *gatedTarget {
	t.Helper()
	g := &gatedTarget{docCalls: map[string]int{}, intercept: intercept}
	g.Target = targettest.Start(t, fixtureConfig(cfg), targettest.Wrap(g.gate))
	return g
}

// gate counts canary document calls, then lets intercept answer or
// ragtarget serve.
func (g *gatedTarget) gate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isCanaryDocCall(r) {
			g.mu.Lock()
			g.docCalls[r.Method]++
			g.mu.Unlock()
		}
		if g.intercept != nil && g.intercept(w, r) {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isCanaryDocCall: a call on a canary document itself, not on its grants.
func isCanaryDocCall(r *http.Request) bool {
	id, ok := strings.CutPrefix(r.URL.Path, "/v1/documents/")
	return ok && strings.HasPrefix(id, canaryrun.DocumentIDPrefix) && !strings.Contains(id, "/")
}

func (g *gatedTarget) calls(method string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.docCalls[method]
}

// writeContractError answers with a contract error body.
func writeContractError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"code":%q,"message":"injected by the test"}`, code)
}

// hardFixture creates, in a fresh namespace, the corpus "target" at url
// (2s per-call timeout) and the personas alice and mallory with labelled
// credential Secrets; mallory's credential is malloryToken.
func hardFixture(t *testing.T, url, malloryToken string) string {
	t.Helper()
	ns := newNamespace(t)
	createSecret(t, ns, "source", "token", testSourceToken)
	createSecret(t, ns, "alice-cred", "token", testAliceToken)
	createSecret(t, ns, "mallory-cred", "token", malloryToken)
	crCreate(t, objects.Corpus(ns, fixtureCorpus, url, objects.CallTimeout(2*time.Second)))
	crCreate(t, objects.Persona(ns, "alice", "alice@example.com"))
	crCreate(t, objects.Persona(ns, "mallory", "mallory@example.com"))
	return ns
}

// holdsFor checks cond throughout d: a bounded observation of something
// that must not happen (the test's equivalent of gomega's Consistently).
func holdsFor(t *testing.T, d time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(testutil.PollInterval)
	defer tick.Stop()
	for {
		if err := cond(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if time.Now().After(deadline) {
			return
		}
		<-tick.C
	}
}

// deleteAndWait deletes obj and waits until the API server no longer has it.
func deleteAndWait(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8sClient.Delete(context.Background(), obj); client.IgnoreNotFound(err) != nil {
		t.Fatalf("deleting %T %s: %v", obj, obj.GetName(), err)
	}
	waitGone(t, obj)
}

func waitGone(t *testing.T, obj client.Object) {
	t.Helper()
	fresh := obj.DeepCopyObject().(client.Object)
	testutil.Eventually(t, eventuallyTimeout, fmt.Sprintf("%T %s gone", obj, obj.GetName()), func() error {
		err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(obj), fresh)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (finalizers %v): %v", fresh.GetFinalizers(), err)
	})
}

// listRuns lists the namespace's CanaryRuns with the direct client.
func listRuns(t *testing.T, ns string) []v1alpha1.CanaryRun {
	t.Helper()
	var list v1alpha1.CanaryRunList
	if err := k8sClient.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatalf("listing runs: %v", err)
	}
	return list.Items
}

// unfinished names the runs that are not Succeeded or Failed, also those
// being deleted: they still probe and hold Secrets until they are gone.
func unfinished(runs []v1alpha1.CanaryRun) []string {
	var names []string
	for _, r := range runs {
		if !isTerminal(r.Status.Phase) {
			names = append(names, r.Name)
		}
	}
	return names
}

// eventsWithReason lists the namespace's events with reason about name.
func eventsWithReason(t *testing.T, ns, name, reason string) []eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	if err := k8sClient.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatalf("listing events: %v", err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Reason == reason && e.Regarding.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// newHardCanary is a RevocationCanary of the fixture's corpus and personas.
func newHardCanary(ns string, policy v1alpha1.ConcurrencyPolicy, every time.Duration) *v1alpha1.RevocationCanary {
	canary := objects.RevocationCanary(ns, "canary", every, onTarget, objects.Timeouts(20*time.Second, 5*time.Minute))
	canary.Spec.Scheduling.ConcurrencyPolicy = policy
	return canary
}

// TestHardeningActiveRunCap: a canary with concurrencyPolicy Allow every
// second, whose runs never become visible (the target never syncs), would
// otherwise create a run, two Secrets and a probe loop every second. At
// most revocationcanary.MaxActiveRuns are unfinished at any step of the schedule; the hold
// shows as Ready reason TooManyActiveRuns with one Warning event, and a run
// finishing lets the held time run.
func TestHardeningActiveRunCap(t *testing.T) {
	// Neither content nor access lists sync within the test: every run
	// waits in AwaitingVisibility for its 2 minute visibility timeout.
	tg := startGatedTarget(t, ragtarget.Config{ContentSyncInterval: time.Hour, ACLSyncInterval: time.Hour}, nil)
	ns := hardFixture(t, tg.URL, testMalloryToken)
	canary := newHardCanary(ns, v1alpha1.AllowConcurrent, time.Second)
	canary.Spec.Probing.Interval = metav1.Duration{Duration: time.Second}
	canary.Spec.Probing.VisibilityTimeout = metav1.Duration{Duration: 2 * time.Minute}
	scheduleClock.SetTime(time.Now())
	crCreate(t, canary)
	t.Cleanup(func() { deleteAndWait(t, canary) })
	f := &canaryFixture{t: t, ns: ns, canary: canary, created: canary.CreationTimestamp.UTC()}
	f.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonScheduled)

	const steps = 12
	for k := 1; k <= steps; k++ {
		// Half a second past the k-th time; the status showing the time
		// after it proves a reconcile decided with this clock.
		f.at(time.Duration(k)*time.Second + 500*time.Millisecond)
		f.poke()
		f.waitNext(f.created.Add(time.Duration(k+1) * time.Second))
		if active := unfinished(listRuns(t, ns)); len(active) > revocationcanary.MaxActiveRuns {
			t.Fatalf("after %d due times: %d unfinished runs %v, want at most %d", k, len(active), active, revocationcanary.MaxActiveRuns)
		}
	}
	runs := listRuns(t, ns)
	var want []string
	for k := 1; k <= revocationcanary.MaxActiveRuns; k++ {
		want = append(want, f.scheduledName(time.Duration(k)*time.Second))
	}
	if got := unfinished(runs); len(runs) != revocationcanary.MaxActiveRuns || strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("runs %d, unfinished %v; want exactly the first %d scheduled runs %v", len(runs), got, revocationcanary.MaxActiveRuns, want)
	}
	got := f.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonTooManyActiveRuns)
	t.Logf("Ready while held: %s", got.Message)
	f.waitEvent(v1alpha1.ReasonTooManyActiveRuns)
	// Events mark transitions: seven held reconciles (and their requeues) gave one.
	if n := len(eventsWithReason(t, ns, canary.Name, v1alpha1.ReasonTooManyActiveRuns)); n != 1 {
		t.Errorf("%d TooManyActiveRuns events, want 1 for one hold", n)
	}

	// A run going away frees a place: the held (latest) time runs, and the
	// cap holds again.
	first := f.getRun(want[0])
	deleteAndWait(t, first)
	held := f.scheduledName(steps * time.Second)
	testutil.Eventually(t, eventuallyTimeout, "the held time runs once a run is gone", func() error {
		active := unfinished(listRuns(t, ns))
		if len(active) > revocationcanary.MaxActiveRuns {
			t.Fatalf("%d unfinished runs %v, want at most %d", len(active), active, revocationcanary.MaxActiveRuns)
		}
		if !strings.Contains(strings.Join(active, ","), held) {
			return fmt.Errorf("unfinished runs %v, want %s among them", active, held)
		}
		return nil
	})
	f.at((steps+1)*time.Second + 500*time.Millisecond)
	f.poke()
	f.waitNext(f.created.Add((steps + 2) * time.Second))
	if active := unfinished(listRuns(t, ns)); len(active) != revocationcanary.MaxActiveRuns {
		t.Errorf("after the freed place was used: %d unfinished runs %v, want %d", len(active), active, revocationcanary.MaxActiveRuns)
	}
}

// blackhole accepts TCP connections and never answers on them.
func blackhole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

// TestHardeningSlowCorpusDoesNotDelayOthers: eight corpora whose targets
// accept connections and never answer (2s per-call timeout) are checked
// first; a healthy corpus created right after is Ready within 5s, far
// below the 8 × 2 × 2s a single worker would take, and the blackholed ones
// end Unreachable.
func TestHardeningSlowCorpusDoesNotDelayOthers(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	healthyURL := targettest.Start(t, fixtureConfig(ragtarget.Config{})).URL
	// One Secret for all, created first: each corpus is checked once, on
	// its creation, not again when its Secret appears.
	createSecret(t, ns, "source", "token", testSourceToken)
	const blackholed = 8
	var slow []*v1alpha1.Corpus
	for i := range blackholed {
		c := objects.Corpus(ns, fmt.Sprintf("blackholed-%d", i), blackhole(t), objects.CallTimeout(2*time.Second))
		crCreate(t, c)
		slow = append(slow, c)
	}
	healthy := objects.Corpus(ns, "healthy", healthyURL, objects.CallTimeout(2*time.Second))
	created := time.Now()
	crCreate(t, healthy)
	const bound = 5 * time.Second
	testutil.Eventually(t, bound, "healthy corpus Ready next to blackholed ones", func() error {
		var got v1alpha1.Corpus
		if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(healthy), &got); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Ready is %+v", c)
		}
		return nil
	})
	t.Logf("healthy corpus Ready %s after creation, next to %d blackholed corpora (2s timeout each)",
		time.Since(created).Round(10*time.Millisecond), blackholed)
	for _, c := range slow {
		got := waitCorpusReady(t, c, metav1.ConditionFalse, v1alpha1.ReasonUnreachable)
		if got.Status.Capabilities != nil {
			t.Errorf("%s: capabilities %+v from a target that never answered", c.Name, got.Status.Capabilities)
		}
	}
}

// capsTarget is a ragtarget whose capabilities reply the test replaces:
// nil serves the real one.
func capsTarget(t *testing.T, reply *atomic.Pointer[string]) string {
	t.Helper()
	g := startGatedTarget(t, ragtarget.Config{}, func(w http.ResponseWriter, r *http.Request) bool {
		body := reply.Load()
		if body == nil || r.Method != http.MethodGet || r.URL.Path != "/v1/capabilities" {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(*body))
		return true
	})
	return g.URL
}

// TestHardeningHostileCapabilities: a capabilities reply naming a
// revocation method the contract does not define, or one method twice, is
// ContractMismatch with no capabilities in status — also when the same
// target was Ready=True with a valid reply before.
func TestHardeningHostileCapabilities(t *testing.T) {
	t.Parallel()
	const (
		unknown   = `{"contractVersion":"v1","answer":true,"revocationMethods":["RemoveGrant","Teleport"]}`
		duplicate = `{"contractVersion":"v1","answer":true,"revocationMethods":["RemoveGrant","RemoveGrant"]}`
	)
	ns := newNamespace(t)
	createSecret(t, ns, "source", "token", testSourceToken)
	newHostile := func(name string, reply *atomic.Pointer[string]) *v1alpha1.Corpus {
		c := objects.Corpus(ns, name, capsTarget(t, reply), objects.CallTimeout(2*time.Second), objects.HealthCheck(5*time.Second))
		crCreate(t, c)
		return c
	}
	assertRefused := func(c *v1alpha1.Corpus, want string) {
		t.Helper()
		got := waitCorpusReady(t, c, metav1.ConditionFalse, v1alpha1.ReasonContractMismatch)
		if got.Status.Capabilities != nil {
			t.Errorf("%s: capabilities %+v stand in status from a refused reply", c.Name, got.Status.Capabilities)
		}
		if msg := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady).Message; !strings.Contains(msg, want) {
			t.Errorf("%s: message %q does not say %q", c.Name, msg, want)
		}
	}

	var teleport, twice, turning atomic.Pointer[string]
	teleport.Store(ptr.To(unknown))
	twice.Store(ptr.To(duplicate))
	assertRefused(newHostile("teleport", &teleport), `"Teleport"`)
	assertRefused(newHostile("twice", &twice), "twice")

	// A target first healthy, then hostile: its next health check (5s)
	// must take Ready=True and the capabilities back.
	turned := newHostile("turning", &turning)
	got := waitCorpusReady(t, turned, metav1.ConditionTrue, v1alpha1.ReasonReachable)
	if got.Status.Capabilities == nil || len(got.Status.Capabilities.RevocationMethods) == 0 {
		t.Fatalf("healthy reply: capabilities %+v", got.Status.Capabilities)
	}
	turning.Store(ptr.To(unknown))
	assertRefused(turned, `"Teleport"`)
}

// TestHardeningSetupDeadline: a target that answers every canary document
// PUT with 503 fails the run as SetupFailed once its visibility timeout
// (the setup deadline) passes, instead of retrying forever; the run then
// cleans up and completes.
func TestHardeningSetupDeadline(t *testing.T) {
	t.Parallel()
	tg := startGatedTarget(t, ragtarget.Config{}, func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodPut && isCanaryDocCall(r) {
			writeContractError(w, http.StatusServiceUnavailable, "unavailable")
			return true
		}
		return false
	})
	ns := hardFixture(t, tg.URL, testMalloryToken)
	// Retries come every canaryrun.SourceRetry (2s) and the deadline counts from the
	// creation timestamp, which has whole seconds: it can fall up to 1s
	// early. With 3s, a first PUT half a second in left no room for a
	// retry (CI saw one PUT): leave room for a slow first PUT and a retry.
	const setupDeadline = 3*canaryrun.SourceRetry + 2*time.Second
	run := crRunSpec(ns, 10*time.Second, v1alpha1.SurfaceSearch)
	run.Spec.Probing.VisibilityTimeout = metav1.Duration{Duration: setupDeadline}
	crCreate(t, run)

	got := crWaitDone(t, run)
	if got.Status.Verdict != v1alpha1.VerdictSetupFailed || got.Status.Phase != canaryrun.PhaseFor(v1alpha1.VerdictSetupFailed) {
		t.Fatalf("phase %s verdict %s (%s), want %s SetupFailed", got.Status.Phase, got.Status.Verdict, got.Status.Message, canaryrun.PhaseFor(v1alpha1.VerdictSetupFailed))
	}
	if !strings.Contains(got.Status.Message, "planting") {
		t.Errorf("message %q does not name the step that kept failing", got.Status.Message)
	}
	puts, deletes := tg.calls(http.MethodPut), tg.calls(http.MethodDelete)
	t.Logf("setup deadline %s: completed %s after creation; %d document PUTs, %d DELETEs; %s",
		setupDeadline, got.Status.CompletionTime.Sub(got.CreationTimestamp.Time), puts, deletes, got.Status.Message)
	if puts < 2 {
		t.Errorf("%d document PUTs: the transient failure was not retried before the deadline", puts)
	}
	// Cleanup was attempted, though nothing was planted.
	if deletes == 0 {
		t.Error("no DELETE of the canary document: cleanup was not attempted")
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionCleanupPending); c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonCleanedUp {
		t.Errorf("CleanupPending %+v, want False/%s", c, v1alpha1.ReasonCleanedUp)
	}
}

// syncingTarget makes a canary visible and excluded within a few hundred
// milliseconds, so a run reaches cleanup quickly.
var syncingTarget = ragtarget.Config{ContentSyncInterval: 100 * time.Millisecond, ACLSyncInterval: 100 * time.Millisecond}

// TestHardeningCleanupNotFoundIsDone: a target answering 404 to deleting
// the canary document has nothing left to clean up: the run completes with
// CleanupPending False/CleanedUp.
func TestHardeningCleanupNotFoundIsDone(t *testing.T) {
	t.Parallel()
	tg := startGatedTarget(t, syncingTarget, func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodDelete && isCanaryDocCall(r) {
			writeContractError(w, http.StatusNotFound, "not_found")
			return true
		}
		return false
	})
	ns := hardFixture(t, tg.URL, testMalloryToken)
	run := crRun(t, ns, 10*time.Second, v1alpha1.SurfaceSearch)

	got := crWaitDone(t, run)
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionCleanupPending); c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonCleanedUp {
		t.Errorf("CleanupPending %+v, want False/%s", c, v1alpha1.ReasonCleanedUp)
	}
	// One DELETE, two if a status write conflicted: a 404 is final, not retried.
	if n := tg.calls(http.MethodDelete); n < 1 || n > 2 {
		t.Errorf("%d DELETEs of the canary document, want 1 (a 404 is final)", n)
	}
	t.Logf("phase %s verdict %s", got.Status.Phase, got.Status.Verdict)
}

// TestHardeningCleanupRejectedIsACondition: a target answering 400 to every
// delete of the canary document leaves the run CleanupPending=True/
// CleanupRejected, re-checked rarely rather than in a backoff loop; once
// the target accepts again, deleting the run removes the document.
func TestHardeningCleanupRejectedIsACondition(t *testing.T) {
	t.Parallel()
	var reject atomic.Bool
	reject.Store(true)
	tg := startGatedTarget(t, syncingTarget, func(w http.ResponseWriter, r *http.Request) bool {
		if reject.Load() && r.Method == http.MethodDelete && isCanaryDocCall(r) {
			writeContractError(w, http.StatusBadRequest, "bad_request")
			return true
		}
		return false
	})
	ns := hardFixture(t, tg.URL, testMalloryToken)
	run := crRun(t, ns, 10*time.Second, v1alpha1.SurfaceSearch)

	var got *v1alpha1.CanaryRun
	testutil.Eventually(t, eventuallyTimeout, "CleanupPending=True/CleanupRejected", func() error {
		got = crGet(t, run)
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionCleanupPending)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonCleanupRejected {
			return fmt.Errorf("phase %s, CleanupPending %+v", got.Status.Phase, c)
		}
		return nil
	})
	if got.Status.Phase != v1alpha1.PhaseCleaningUp || !controllerutil.ContainsFinalizer(got, v1alpha1.FinalizerCanaryRun) {
		t.Errorf("phase %s finalizers %v: a run whose document is still at the target must keep cleaning up", got.Status.Phase, got.Finalizers)
	}
	start := tg.calls(http.MethodDelete)
	const handful = 3
	holdsFor(t, 3*time.Second, "no cleanup hot loop", func() error {
		if n := tg.calls(http.MethodDelete) - start; n > handful {
			return fmt.Errorf("%d more DELETEs of the canary document in under 3s after the rejection", n)
		}
		return nil
	})
	t.Logf("DELETEs: %d until the rejection was reported, %d in the 3s after", start, tg.calls(http.MethodDelete)-start)
	testutil.Eventually(t, eventuallyTimeout, "CleanupRejected event", func() error {
		if len(eventsWithReason(t, ns, run.Name, v1alpha1.ReasonCleanupRejected)) == 0 {
			return fmt.Errorf("no %s event", v1alpha1.ReasonCleanupRejected)
		}
		return nil
	})

	// The target is fixed: deleting the run removes the document.
	doc := got.Status.DocumentID
	reject.Store(false)
	deleteAndWait(t, run)
	if _, left := tg.SourceDocuments()[doc]; left {
		t.Errorf("canary document %s is still at the target after the run was deleted", doc)
	}
}

// TestHardeningCleanupWithoutCorpusOrSecret: a run sits in
// AwaitingExclusion (the revocation is held at the target) when its Corpus
// and the Corpus's credential Secret are deleted, then its canary. The run's
// kept cleanup copy still removes the canary document; no run and no
// cleanup Secret are left.
func TestHardeningCleanupWithoutCorpusOrSecret(t *testing.T) {
	tg := startCRTargetWith(t, ragtarget.Config{}, crTargetOptions{hold: true})
	ns := crFixture(t, tg.URL)
	canary := newHardCanary(ns, v1alpha1.ForbidConcurrent, time.Hour)
	canary.Annotations = map[string]string{v1alpha1.AnnotationRunNow: "now"}
	scheduleClock.SetTime(time.Now())
	crCreate(t, canary)
	t.Cleanup(func() { deleteAndWait(t, canary) })
	key := client.ObjectKey{Namespace: ns, Name: schedule.RunNowName(canary.Name, "now")}

	var run v1alpha1.CanaryRun
	testutil.Eventually(t, eventuallyTimeout, "run awaiting exclusion", func() error {
		if err := k8sClient.Get(context.Background(), key, &run); err != nil {
			return err
		}
		if run.Status.Phase != v1alpha1.PhaseAwaitingExclusion {
			return fmt.Errorf("phase %q (%s)", run.Status.Phase, run.Status.Message)
		}
		return nil
	})
	doc := run.Status.DocumentID
	if _, planted := tg.SourceDocuments()[doc]; !planted {
		t.Fatalf("canary document %s is not at the target", doc)
	}
	recipe := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: canaryrun.RecipeSecretName(&run)}}
	if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(recipe), recipe); err != nil {
		t.Fatalf("reading the cleanup Secret: %v", err)
	}
	if !controllerutil.ContainsFinalizer(recipe, canaryrun.RecipeFinalizer) || !metav1.IsControlledBy(recipe, &run) {
		t.Fatalf("cleanup Secret finalizers %v, owners %v", recipe.Finalizers, recipe.OwnerReferences)
	}

	deleteAndWait(t, corpusKey(ns, fixtureCorpus))
	deleteAndWait(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "source"}})
	deleteAndWait(t, canary)

	if runs := listRuns(t, ns); len(runs) != 0 {
		t.Errorf("runs left after the canary was deleted: %d", len(runs))
	}
	if _, left := tg.SourceDocuments()[doc]; left {
		t.Errorf("canary document %s is still at the target: the kept copy did not clean up", doc)
	}
	if !tg.deleted(doc) {
		t.Errorf("the target saw no DELETE of canary document %s", doc)
	}
	waitGone(t, recipe)
}

// TestHardeningControlPersonaAlwaysFailing: the control persona's
// credential is unknown to the target, so every control probe gets 401.
// Isolation was never tested: the run is Inconclusive naming the control
// persona, never SLOMet, and status shows its errors and no answers.
func TestHardeningControlPersonaAlwaysFailing(t *testing.T) {
	t.Parallel()
	tg := startCRTarget(t, ragtarget.Config{}, 0, false)
	ns := hardFixture(t, tg.URL, "a-token-the-target-does-not-know")
	run := crRun(t, ns, 10*time.Second, v1alpha1.SurfaceSearch)

	got := crWaitDone(t, run)
	if got.Status.Verdict != v1alpha1.VerdictInconclusive || !strings.Contains(got.Status.Message, "mallory") {
		t.Fatalf("verdict %s (%s), want Inconclusive naming mallory", got.Status.Verdict, got.Status.Message)
	}
	if m := crSurface(t, got, v1alpha1.SurfaceSearch); !m.Excluded {
		t.Errorf("search surface %+v: the persona's exclusion should have been confirmed; only the control failed", m)
	}
	var mallory *v1alpha1.ControlProbeCounts
	for i := range got.Status.ControlProbes {
		if got.Status.ControlProbes[i].Persona == "mallory" {
			mallory = &got.Status.ControlProbes[i]
		}
	}
	if mallory == nil || mallory.Errors == 0 || mallory.Answered != 0 {
		t.Errorf("controlProbes %+v, want mallory with errors > 0 and answered 0", got.Status.ControlProbes)
	}
	t.Logf("phase %s: %s; controlProbes %+v", got.Status.Phase, got.Status.Message, got.Status.ControlProbes)
}
