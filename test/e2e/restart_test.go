package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/targettest"
	"github.com/ragcanary/ragcanary/internal/driver"
	httpdriver "github.com/ragcanary/ragcanary/internal/driver/http"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// Settings of the restart runs.
const (
	// restartInterval is the runs' probe interval; a round is due within
	// ±10% of it (the probe engine's jitter).
	restartInterval = 250 * time.Millisecond
	// restartLag is how long after the revocation reached the source the
	// ACL sync applying it runs (unless a phase holds it longer).
	restartLag = time.Second
	// canaryDocumentPrefix starts every canary document ID ("rc-<run UID>").
	canaryDocumentPrefix = "rc-"
	// restartSlack absorbs request durations and scheduling on a loaded
	// two-core machine in the width budget.
	restartSlack = 500 * time.Millisecond
)

// killPlan says in which phase a run loses its manager, by the request to
// the target that belongs to that phase.
type killPlan struct {
	// name names the subtest and the run's namespace.
	name string
	// phase is the run's persisted phase while the held request is in
	// flight; empty for the baseline run, which is never killed.
	phase v1alpha1.CanaryPhase
	// hold is the kind of request held (the first one of that kind).
	hold reqKind
	// afterRevocation holds a persona search only once the revocation
	// reached the source; otherwise only before.
	afterRevocation bool
	// syncAfter is how many revocation requests must have reached the
	// source before the ACL sync that applies the revocation may run.
	syncAfter int
	// syncOnRelease keeps that sync until the test lets it run.
	syncOnRelease bool
	// unwritten: while held, the run's status is not written yet (start's
	// and Planting's results wait for Sharing's write).
	unwritten bool
}

var killPlans = []killPlan{
	{name: "Baseline", syncAfter: 1},
	{name: "Planting", phase: v1alpha1.PhasePlanting, hold: reqPutDocument, syncAfter: 1, unwritten: true},
	{name: "Sharing", phase: v1alpha1.PhaseSharing, hold: reqPutGrant, syncAfter: 1},
	{name: "AwaitingVisibility", phase: v1alpha1.PhaseAwaitingVisibility, hold: reqPersonaSearch, syncAfter: 1},
	// The held revocation reaches the source while no manager runs; the new
	// manager sends it again (it never saw the acknowledgement), and the
	// index applies it a lag after that repeat.
	{name: "Revoking", phase: v1alpha1.PhaseRevoking, hold: reqDeleteGrant, syncAfter: 2},
	// The first exclusion probe is held; the index applies the revocation
	// while no manager runs.
	{name: "AwaitingExclusion", phase: v1alpha1.PhaseAwaitingExclusion, hold: reqPersonaSearch, afterRevocation: true, syncAfter: 1, syncOnRelease: true},
	{name: "CleaningUp", phase: v1alpha1.PhaseCleaningUp, hold: reqDeleteDocument, syncAfter: 1},
}

// TestManagerKilledInEachPhase SIGKILLs the manager while the request that
// belongs to one lifecycle phase is in flight at the target, lets that
// request reach the target after its client died, and starts a new manager
// with the same arguments. Every run must still finish with one canary
// document created and removed, and bounds that contain the true exclusion
// time, wider by at most the downtime, the new manager's start-up and a
// probe round.
//
// The target is a ragtarget behind a gate that holds the phase's request,
// records every request, and runs the ACL sync that applies the revocation
// itself, so the true exclusion time is known.
func TestManagerKilledInEachPhase(t *testing.T) {
	g := startRestartTarget(t)
	drv, err := httpdriver.New(httpdriver.Config{BaseURL: env.ragtargetURL + restartTargetPath, SourceToken: sourceToken, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range killPlans {
		t.Run(p.name, func(t *testing.T) { runKillPlan(t, g, drv, p) })
	}
}

func runKillPlan(t *testing.T, g *restartGate, drv *httpdriver.Driver, p killPlan) {
	ctx := context.Background()
	g.arm(p)
	t.Cleanup(func() {
		g.disarm()
		// Later tests share the manager: never leave it dead.
		if !env.manager.running() {
			if err := env.manager.restart(); err != nil {
				t.Errorf("restarting the manager after a failed phase: %v", err)
			}
		}
	})
	// Unique per attempt, so the test can run again in the same process (-count).
	ns := fmt.Sprintf("e2e-restart-%s-%d", strings.ToLower(p.name), restartAttempts.Add(1))
	for _, obj := range restartObjects(ns) {
		if err := env.client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
	run := restartRun(ns)
	if err := env.client.Create(ctx, run); err != nil {
		t.Fatalf("creating the run: %v", err)
	}

	var downtime, startup time.Duration
	if p.phase != "" {
		h := g.waitHeld(t, time.Minute)
		want := p.phase
		if p.unwritten {
			want = ""
		}
		if got := getRun(t, run); got.Status.Phase != want {
			t.Errorf("the %s request was held in persisted phase %q, want %q", p.hold, got.Status.Phase, want)
		}
		env.manager.kill()
		killedAt := time.Now()
		// The request reaches the target after its client died, as one
		// the source accepted just before the crash would.
		h.let()
		waitClosed(t, h.handled, 10*time.Second, "the held request handled")
		if p.syncOnRelease {
			g.letSync()
			testutil.Eventually(t, 10*time.Second, "the revocation applied while no manager runs", func() error {
				if s, _ := g.truth(); s.IsZero() {
					return fmt.Errorf("not yet")
				}
				return nil
			})
		}
		restartedAt := time.Now()
		if err := env.manager.restart(); err != nil {
			t.Fatal(err)
		}
		downtime = restartedAt.Sub(h.arrivedAt)
		// Start-up lasts until the new manager acts on the run again: its
		// first request for the canary at the target.
		testutil.Eventually(t, 30*time.Second, "the new manager's first request for the canary", func() error {
			first, ok := g.firstCanaryRequestAfter(restartedAt)
			if !ok {
				return fmt.Errorf("none yet")
			}
			startup = first.Sub(restartedAt)
			return nil
		})
		t.Logf("held %s at %s; killed %s later; down %s in all; start-up until the first canary request %s",
			p.hold, h.arrivedAt.Format("15:04:05.000"), killedAt.Sub(h.arrivedAt), downtime, startup)
	}

	got := waitRunDone(t, run, time.Minute)
	if got.Status.Phase != v1alpha1.PhaseSucceeded || got.Status.Verdict != v1alpha1.VerdictSLOMet {
		t.Fatalf("phase %s verdict %s (%s), want Succeeded SLOMet", got.Status.Phase, got.Status.Verdict, got.Status.Message)
	}
	doc := got.Status.DocumentID
	assertOneDocumentRemoved(t, g, drv, got)
	assertTokenGone(t, drv, got)

	// The interval contains the true exclusion time. Time-to-exclusion is
	// counted from the revocation request; the lower bound counts from the
	// acknowledgement, which can only make it smaller.
	m := searchMeasurement(t, got)
	syncStart, syncEnd := g.truth()
	if syncStart.IsZero() {
		t.Fatal("the revocation never reached the index through the test's ACL sync")
	}
	req, ack := got.Status.RevokeRequestedTime.Time, got.Status.RevokeAcknowledgedTime.Time
	lower, upper := m.Bounds.Lower.Duration, m.Bounds.Upper.Duration
	if m.LastPositiveStart != nil && m.LastPositiveStart.After(syncEnd) {
		t.Errorf("a probe started %s after the ACL sync ended saw the canary", m.LastPositiveStart.Sub(syncEnd))
	}
	if m.FirstNegativeEnd.Time.Before(syncStart) {
		t.Errorf("the first negative probe ended %s before the ACL sync started", syncStart.Sub(m.FirstNegativeEnd.Time))
	}
	if lower > syncEnd.Sub(req) || upper < syncStart.Sub(req) {
		t.Errorf("bounds [%s, %s] do not contain the exclusion during [%s, %s] after the request",
			lower, upper, syncStart.Sub(req), syncEnd.Sub(req))
	}
	// It is wider than a run without a restart (about one probe round and
	// the revocation call) by at most the downtime, the start-up and one
	// more probe round.
	round := restartInterval + restartInterval/10
	width, budget := upper-lower, downtime+startup+2*round+restartSlack
	ttv := time.Duration(0)
	if got.Status.TimeToVisibility != nil {
		ttv = got.Status.TimeToVisibility.Duration
	}
	t.Logf("%s: bounds [%s, %s] width %s (budget %s = down %s + start-up %s + 2 rounds + slack); exclusion at [%s, %s]; ack−request %s; time-to-visibility %s; probes %+v; document %s",
		p.name, lower, upper, width, budget, downtime, startup, syncStart.Sub(req), syncEnd.Sub(req), ack.Sub(req), ttv, m.Probes, doc)
	if width > budget {
		t.Errorf("bound width %s exceeds the downtime %s + start-up %s + two probe rounds + slack (%s)", width, downtime, startup, budget)
	}
}

// assertOneDocumentRemoved: exactly one canary document ID was written for
// the run (repeating the same PUT is idempotent), every grant was revoked
// again, and the document was deleted last and is gone from the source.
func assertOneDocumentRemoved(t *testing.T, g *restartGate, drv *httpdriver.Driver, run *v1alpha1.CanaryRun) {
	t.Helper()
	doc := run.Status.DocumentID
	entries := g.entries()
	created := map[string]int{}
	lastPutGrant, lastRevoke, lastDelete := -1, -1, -1
	for i, e := range entries {
		ok := e.status >= 200 && e.status < 300
		switch {
		case e.kind == reqPutDocument:
			created[e.doc]++
		case e.kind == reqPutGrant && e.doc == doc:
			lastPutGrant = i
		case e.kind == reqDeleteGrant && e.doc == doc && ok:
			lastRevoke = i
		case e.kind == reqDeleteDocument && e.doc == doc && ok:
			lastDelete = i
		}
	}
	if len(created) != 1 || created[doc] == 0 {
		t.Errorf("canary documents written at the target %v, want only %s", created, doc)
	}
	if lastPutGrant < 0 || lastRevoke < lastPutGrant {
		t.Errorf("grant requests at %d, last successful revocation at %d: a grant may be left", lastPutGrant, lastRevoke)
	}
	if lastDelete < 0 || lastDelete < lastRevoke {
		t.Errorf("the canary document was not deleted after its grants were revoked (delete at %d, revoke at %d)", lastDelete, lastRevoke)
	}
	if c := meta.FindStatusCondition(run.Status.Conditions, v1alpha1.ConditionCleanupPending); c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonCleanedUp {
		t.Errorf("CleanupPending condition %+v, want False/%s", c, v1alpha1.ReasonCleanedUp)
	}
	// A grant on a document the source no longer has is refused: the
	// document, and with it every grant, is gone.
	err := drv.Grant(context.Background(), doc, "nobody@example.com")
	if err == nil || !driver.IsPermanent(err) {
		t.Errorf("granting on the canary document after cleanup: %v, want not found", err)
	}
}

// assertTokenGone: searching as the persona for the token finds nothing
// once the deletion reached the index.
func assertTokenGone(t *testing.T, drv *httpdriver.Driver, run *v1alpha1.CanaryRun) {
	t.Helper()
	var secret corev1.Secret
	key := client.ObjectKey{Namespace: run.Namespace, Name: run.Status.TokenSecretName}
	if err := env.client.Get(context.Background(), key, &secret); err != nil {
		t.Fatalf("reading the token Secret: %v", err)
	}
	token := string(secret.Data["handle"]) // the query probes send
	if token == "" {
		t.Fatal("the token Secret holds no canary handle")
	}
	testutil.Eventually(t, 5*time.Second, "the token gone from the persona's search", func() error {
		hits, err := drv.Search(context.Background(), driver.Token(aliceToken), token, 10)
		if err != nil {
			return err
		}
		if len(hits) > 0 {
			return fmt.Errorf("%d hits, first %s", len(hits), hits[0].DocumentID)
		}
		return nil
	})
}

func searchMeasurement(t *testing.T, run *v1alpha1.CanaryRun) v1alpha1.SurfaceMeasurement {
	t.Helper()
	for _, m := range run.Status.Surfaces {
		if m.Surface == v1alpha1.SurfaceSearch {
			if !m.Excluded || m.Bounds == nil || m.Bounds.Lower == nil || m.Bounds.Upper == nil || m.FirstNegativeEnd == nil {
				t.Fatalf("search: not excluded with both bounds: %+v", m)
			}
			return m
		}
	}
	t.Fatalf("no search measurement in status: %+v", run.Status.Surfaces)
	return v1alpha1.SurfaceMeasurement{}
}

// restartObjects are a run's fixture in its own namespace: credentials, the
// corpus on the restart target, the persona and a control persona.
func restartObjects(ns string) []client.Object {
	secret := func(name, value string) *corev1.Secret { return objects.CredentialSecret(ns, name, value) }
	persona := func(name, subject string) *v1alpha1.Persona { return tokenPersona(ns, name, subject) }
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		secret("source", sourceToken), secret("alice", aliceToken), secret("mallory", malloryToken),
		scenarioCorpus(ns, "kb", env.ragtargetURL+restartTargetPath),
		persona("alice", "alice@example.com"), persona("mallory", "mallory@example.com"),
	}
}

// restartRun is a run created directly, so the test controls it: revoke
// alice's grant, probe search every restartInterval with two confirmations.
func restartRun(ns string) *v1alpha1.CanaryRun {
	ref := func(n string) v1alpha1.LocalObjectReference { return v1alpha1.LocalObjectReference{Name: n} }
	dur := func(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }
	return &v1alpha1.CanaryRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "run"},
		Spec: v1alpha1.CanaryRunSpec{CanarySpec: v1alpha1.CanarySpec{
			CorpusRef: ref("kb"), PersonaRef: ref("alice"),
			ControlPersonaRefs: []v1alpha1.LocalObjectReference{ref("mallory")},
			Revocation:         v1alpha1.Revocation{Method: v1alpha1.RevokeRemoveGrant},
			Probing: v1alpha1.Probing{
				Interval: dur(restartInterval), Confirmations: 2,
				VisibilityTimeout: dur(time.Minute), ExclusionTimeout: dur(time.Minute),
				Surfaces: []v1alpha1.Surface{v1alpha1.SurfaceSearch},
			},
		}},
	}
}

func getRun(t *testing.T, run *v1alpha1.CanaryRun) *v1alpha1.CanaryRun {
	t.Helper()
	var got v1alpha1.CanaryRun
	if err := env.client.Get(context.Background(), client.ObjectKeyFromObject(run), &got); err != nil {
		t.Fatalf("reading the run: %v", err)
	}
	return &got
}

// waitRunDone waits until the run is terminal and released its finalizer
// (written after the terminal status).
func waitRunDone(t *testing.T, run *v1alpha1.CanaryRun, timeout time.Duration) *v1alpha1.CanaryRun {
	t.Helper()
	var got *v1alpha1.CanaryRun
	testutil.Eventually(t, timeout, "the run finished", func() error {
		got = getRun(t, run)
		if got.Status.Phase != v1alpha1.PhaseSucceeded && got.Status.Phase != v1alpha1.PhaseFailed {
			return fmt.Errorf("phase %q (%s)", got.Status.Phase, got.Status.Message)
		}
		if controllerutil.ContainsFinalizer(got, v1alpha1.FinalizerCanaryRun) {
			return fmt.Errorf("phase %q with the finalizer still set", got.Status.Phase)
		}
		return nil
	})
	return got
}

func waitClosed(t *testing.T, ch <-chan struct{}, timeout time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(timeout):
		t.Fatalf("%s: not within %s", what, timeout)
	}
}

// reqKind names the requests to the target the gate tells apart.
type reqKind string

const (
	reqOther          reqKind = ""
	reqPutDocument    reqKind = "PUT document"
	reqDeleteDocument reqKind = "DELETE document"
	reqPutGrant       reqKind = "PUT grant"
	reqDeleteGrant    reqKind = "DELETE grant"
	reqPersonaSearch  reqKind = "persona search"
)

// classify names a request and the canary document it addresses. Only
// canary documents count: the corpus's credential check deletes another ID.
func classify(r *http.Request) (reqKind, string) {
	if r.Method == http.MethodPost && r.URL.Path == "/v1/search" {
		if r.Header.Get("Authorization") == "Bearer "+aliceToken {
			return reqPersonaSearch, ""
		}
		return reqOther, ""
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/documents/")
	if !ok || !strings.HasPrefix(rest, canaryDocumentPrefix) {
		return reqOther, ""
	}
	doc, _, grant := strings.Cut(rest, "/grants/")
	switch {
	case grant && r.Method == http.MethodPut:
		return reqPutGrant, doc
	case grant && r.Method == http.MethodDelete:
		return reqDeleteGrant, doc
	case r.Method == http.MethodPut:
		return reqPutDocument, doc
	case r.Method == http.MethodDelete:
		return reqDeleteDocument, doc
	}
	return reqOther, doc
}

// restartGate stands in front of a ragtarget whose syncs it runs itself.
// Until a revocation arrives it syncs content and ACLs every 100ms; then no
// sync runs until the plan allows the one ACL sync that applies the
// revocation, whose start and end are the true exclusion time; after it,
// syncs resume so the cleanup reaches the index. It holds the plan's
// request until the test lets it go, and records every request.
type restartGate struct {
	svc  *ragtarget.Service
	next http.Handler

	mu   sync.Mutex
	plan killPlan
	held *heldRequest
	log  []gateEntry
	// revocationsSeen counts revocation requests that arrived (they stop
	// the periodic syncs), revocationsApplied those the source accepted.
	revocationsSeen, revocationsApplied int
	lastRevocation                      time.Time
	syncReleased                        bool
	syncStart, syncEnd                  time.Time
	heldCh                              chan *heldRequest
}

type gateEntry struct {
	kind    reqKind
	doc     string
	status  int
	arrived time.Time
}

// heldRequest is a request the gate keeps from the target until let.
type heldRequest struct {
	arrivedAt time.Time
	release   chan struct{}
	once      sync.Once
	// handled is closed once the target answered it.
	handled chan struct{}
}

func (h *heldRequest) let() { h.once.Do(func() { close(h.release) }) }

// startRestartTarget mounts a gated ragtarget under restartTargetPath for
// the test's lifetime. Its own schedules never tick: the gate syncs.
func startRestartTarget(t *testing.T) *restartGate {
	t.Helper()
	// Manual schedules: the gate syncs. The service closes after the
	// cleanup below, which targettest registered before it.
	svc := targettest.Run(t, ragtarget.Config{
		SourceToken: sourceToken,
		Tokens:      map[string]string{aliceToken: "alice@example.com", malloryToken: "mallory@example.com"},
	})
	ctx, cancel := context.WithCancel(context.Background())
	g := &restartGate{svc: svc, next: svc.Handler()}
	unmount := env.restartTarget.set(g)
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.driveSync(ctx)
	}()
	t.Cleanup(func() {
		g.disarm()
		unmount()
		cancel()
		<-done
	})
	return g
}

// arm starts a phase: fresh records, and p's request to hold.
func (g *restartGate) arm(p killPlan) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.plan, g.held, g.log, g.heldCh = p, nil, nil, make(chan *heldRequest, 1)
	g.revocationsSeen, g.revocationsApplied, g.lastRevocation = 0, 0, time.Time{}
	g.syncReleased, g.syncStart, g.syncEnd = false, time.Time{}, time.Time{}
}

// disarm lets a held request go and holds nothing more.
func (g *restartGate) disarm() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.plan.hold = reqOther
	if g.held != nil {
		g.held.let()
	}
}

func (g *restartGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	kind, doc := classify(r)
	arrived := time.Now()
	// A held request must reach the target whole after its client died.
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "reading the request body", http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))

	g.mu.Lock()
	revocation := kind == reqDeleteGrant && g.syncStart.IsZero()
	if revocation {
		g.revocationsSeen++
	}
	h := g.holdLocked(kind, arrived)
	g.mu.Unlock()
	if h != nil {
		select {
		case <-h.release:
		case <-time.After(2 * time.Minute): // never wedge the server
		}
		// Its client may be dead by now; the target still handles it whole,
		// like a request the source accepted just before the crash.
		r = r.WithContext(context.WithoutCancel(r.Context()))
	}
	// The reply is buffered so the records are updated before the client
	// can act on it.
	rec := httptest.NewRecorder()
	g.next.ServeHTTP(rec, r)
	g.mu.Lock()
	g.log = append(g.log, gateEntry{kind: kind, doc: doc, status: rec.Code, arrived: arrived})
	if revocation && rec.Code < 300 {
		g.revocationsApplied++
		g.lastRevocation = time.Now()
	}
	g.mu.Unlock()
	if h != nil {
		close(h.handled)
	}
	maps.Copy(w.Header(), rec.Header())
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

// holdLocked returns a new held request when r is the plan's first request
// of its kind.
func (g *restartGate) holdLocked(kind reqKind, arrived time.Time) *heldRequest {
	p := g.plan
	if kind == reqOther || kind != p.hold || g.held != nil {
		return nil
	}
	if kind == reqPersonaSearch && p.afterRevocation != (g.revocationsApplied > 0) {
		return nil
	}
	g.held = &heldRequest{arrivedAt: arrived, release: make(chan struct{}), handled: make(chan struct{})}
	g.heldCh <- g.held
	return g.held
}

// waitHeld waits until the plan's request is held.
func (g *restartGate) waitHeld(t *testing.T, timeout time.Duration) *heldRequest {
	t.Helper()
	g.mu.Lock()
	ch := g.heldCh
	g.mu.Unlock()
	select {
	case h := <-ch:
		return h
	case <-time.After(timeout):
		t.Fatalf("the %s request did not arrive within %s", g.plan.hold, timeout)
		return nil
	}
}

// letSync lets the ACL sync applying the revocation run (syncOnRelease).
func (g *restartGate) letSync() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.syncReleased = true
}

func (g *restartGate) driveSync(ctx context.Context) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		g.mu.Lock()
		p := g.plan
		switch {
		case g.revocationsSeen == 0 || !g.syncStart.IsZero():
			_ = g.svc.SyncNow(ragtarget.SyncContent)
			_ = g.svc.SyncNow(ragtarget.SyncACL)
		case g.revocationsApplied >= p.syncAfter && time.Since(g.lastRevocation) >= restartLag && (!p.syncOnRelease || g.syncReleased):
			g.syncStart = time.Now()
			_ = g.svc.SyncNow(ragtarget.SyncACL)
			g.syncEnd = time.Now()
		}
		g.mu.Unlock()
	}
}

// truth is when the ACL sync that applied the revocation ran; zero before.
func (g *restartGate) truth() (start, end time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.syncStart, g.syncEnd
}

func (g *restartGate) entries() []gateEntry {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.log)
}

// firstCanaryRequestAfter is the earliest arrival of a request about the
// canary after t.
func (g *restartGate) firstCanaryRequestAfter(t time.Time) (time.Time, bool) {
	var first time.Time
	for _, e := range g.entries() {
		if e.kind != reqOther && e.arrived.After(t) && (first.IsZero() || e.arrived.Before(first)) {
			first = e.arrived
		}
	}
	return first, !first.IsZero()
}

// restartAttempts numbers the phase namespaces.
var restartAttempts atomic.Int64
