package controllers

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/pgtest"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/targettest"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
	"github.com/ragcanary/ragcanary/internal/target"
)

// watchedTarget is a real ragtarget that logs every request it serves as
// "METHOD path", so a test can tell which target a run talked to.
type watchedTarget struct {
	*targettest.Target

	mu       sync.Mutex
	requests []string
}

func startWatchedTarget(t *testing.T) *watchedTarget {
	t.Helper()
	wt := &watchedTarget{}
	wt.Target = targettest.Start(t, fixtureConfig(ragtarget.Config{}), targettest.Wrap(wt.log))
	return wt
}

// log notes every request as "METHOD path" before ragtarget serves it.
func (wt *watchedTarget) log(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wt.mu.Lock()
		wt.requests = append(wt.requests, r.Method+" "+r.URL.Path)
		wt.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// runRequests are the requests a run's steps and probes send: persona
// searches and answers, and anything naming the canary document.
func (wt *watchedTarget) runRequests(doc string) []string {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	var out []string
	for _, r := range wt.requests {
		if strings.Contains(r, doc) || strings.HasSuffix(r, "/v1/search") || strings.HasSuffix(r, "/v1/answer") {
			out = append(out, r)
		}
	}
	return out
}

// shown is at most the first five requests, and how many there were.
func shown(reqs []string) string {
	return fmt.Sprintf("%d requests, first %v", len(reqs), reqs[:min(len(reqs), 5)])
}

// waitPhase waits until the run is in phase and returns it.
func waitPhase(t *testing.T, run *v1alpha1.CanaryRun, phase v1alpha1.CanaryPhase) *v1alpha1.CanaryRun {
	t.Helper()
	var got *v1alpha1.CanaryRun
	testutil.Eventually(t, eventuallyTimeout, "run in "+string(phase), func() error {
		got = crGet(t, run)
		if got.Status.Phase != phase {
			return fmt.Errorf("phase %q (%s)", got.Status.Phase, got.Status.Message)
		}
		return nil
	})
	return got
}

// repointCorpus points the run's Corpus at url and waits until the
// manager's cache (the Corpus controller's check, which shares it with the
// run's controller) has seen the new spec.
func repointCorpus(t *testing.T, ns, url string) {
	t.Helper()
	key := client.ObjectKey{Namespace: ns, Name: "target"}
	var c v1alpha1.Corpus
	if err := k8sClient.Get(context.Background(), key, &c); err != nil {
		t.Fatal(err)
	}
	base := c.DeepCopy()
	c.Spec.Driver.HTTP.URL = url
	if err := k8sClient.Patch(context.Background(), &c, client.MergeFrom(base)); err != nil {
		t.Fatalf("repointing the Corpus: %v", err)
	}
	testutil.Eventually(t, eventuallyTimeout, "the Corpus controller saw the new target", func() error {
		var got v1alpha1.Corpus
		if err := k8sClient.Get(context.Background(), key, &got); err != nil {
			return err
		}
		if got.Status.ObservedGeneration != got.Generation {
			return fmt.Errorf("observed generation %d of %d", got.Status.ObservedGeneration, got.Generation)
		}
		return nil
	})
}

// targetChangedEvents counts the run's TargetChanged warnings.
func targetChangedEvents(t *testing.T, ns string) int {
	t.Helper()
	var list eventsv1.EventList
	if err := k8sClient.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range list.Items {
		if e.Reason == v1alpha1.ReasonTargetChanged && e.Type == corev1.EventTypeWarning {
			n++
		}
	}
	return n
}

// TestCanaryRunRetargetedCorpusKeepsThePlantedTarget: a run plants and
// shares its canary at A; while it awaits visibility (A's content sync is
// the test's to run) its Corpus is pointed at B, which never held the
// canary and would answer every probe with its absence. The revocation,
// every exclusion probe and cleanup must still go to A: the interval
// contains the moment A applied the revocation, B sees no probe and nothing
// naming the document, and A holds no canary afterwards.
func TestCanaryRunRetargetedCorpusKeepsThePlantedTarget(t *testing.T) {
	t.Parallel()
	a := startCRTarget(t, ragtarget.Config{ContentSyncInterval: time.Hour}, 0, false)
	b := startWatchedTarget(t)
	ns := crFixture(t, a.URL)
	run := crRun(t, ns, 20*time.Second, v1alpha1.SurfaceSearch)
	doc := waitPhase(t, run, v1alpha1.PhaseAwaitingVisibility).Status.DocumentID

	repointCorpus(t, ns, b.URL)
	if got := crGet(t, run); got.Status.Phase != v1alpha1.PhaseAwaitingVisibility {
		t.Fatalf("phase %s after repointing, want AwaitingVisibility: the canary is not indexed at A yet", got.Status.Phase)
	}
	if err := a.SyncNow(ragtarget.SyncContent); err != nil {
		t.Fatal(err)
	}
	got := crWaitDone(t, run)

	if got.Status.Verdict != v1alpha1.VerdictSLOMet {
		t.Fatalf("verdict %s (%s), want SLOMet measured at A", got.Status.Verdict, got.Status.Message)
	}
	if n := a.revocationRequests(); n == 0 {
		t.Error("the planted target never received the revocation")
	}
	if reqs := b.runRequests(doc); len(reqs) > 0 {
		t.Errorf("the run talked to the target it did not plant in: %s", shown(reqs))
	}
	s, _ := a.appliedRevocation()
	if s.IsZero() {
		t.Fatal("A never applied a revocation")
	}
	m := crSurface(t, got, v1alpha1.SurfaceSearch)
	if m.Bounds == nil || m.Bounds.Upper == nil || got.Status.RevokeRequestedTime.Add(m.Bounds.Upper.Duration).Before(s) {
		t.Errorf("bounds %+v put exclusion before A applied the revocation (%s after the request)",
			m.Bounds, s.Sub(got.Status.RevokeRequestedTime.Time))
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionTargetChanged); c == nil || c.Status != metav1.ConditionTrue ||
		!strings.Contains(c.Message, a.URL[len("http://"):]) || !strings.Contains(c.Message, b.URL[len("http://"):]) {
		t.Errorf("TargetChanged condition %+v, want True naming both targets", c)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionCleanupPending); c == nil || c.Reason != v1alpha1.ReasonCleanedUp {
		t.Errorf("CleanupPending condition %+v, want CleanedUp", c)
	}
	if !a.deleted(doc) {
		t.Error("cleanup did not delete the document at the planted target")
	}
	if _, left := a.SourceDocuments()[doc]; left {
		t.Error("the planted target still holds the canary document")
	}
	testutil.Eventually(t, eventuallyTimeout, "one TargetChanged warning", func() error {
		if n := targetChangedEvents(t, ns); n != 1 {
			return fmt.Errorf("%d TargetChanged warnings", n)
		}
		return nil
	})
	crAssertNoToken(t, got)
}

// retargetApplyDelay is how long the standby takes to apply the primary's
// WAL: the run waits that long for visibility, time to repoint its Corpus.
const retargetApplyDelay = 5 * time.Second

// TestPostgresRetargetedDatabaseKeepsThePlantedTarget: a Postgres run
// plants in database canary_a; while it awaits visibility the Corpus's
// Secrets are changed to database canary_b on the same servers (the spec
// does not change). The revocation and the probes stay with canary_a (the
// interval brackets the standby's apply delay there), and cleanup removes
// the document and its grant from canary_a before it reports CleanedUp.
func TestPostgresRetargetedDatabaseKeepsThePlantedTarget(t *testing.T) {
	t.Parallel()
	primary := pgtest.Start(t)
	primary.Exec(t,
		"create role writer login password '"+pgWriterPassword+"'",
		"create role reader login password '"+pgReaderPassword+"'",
		"create database canary_a", "create database canary_b",
		"grant create on database canary_a to writer", "grant create on database canary_b to writer",
		// The base backup starts with a spread checkpoint, slow while the
		// new databases' pages are dirty; a checkpoint now writes them at once.
		"checkpoint",
	)
	standby := primary.Standby(t, retargetApplyDelay)
	dsn := func(s *pgtest.Server, user, password, db string) string {
		return strings.Replace(s.DSN(user, password), "/postgres?", "/"+db+"?", 1)
	}
	ns := newNamespace(t)
	for _, db := range []string{"canary_a", "canary_b"} {
		createSecret(t, ns, dsnSecret("writer", db), "dsn", dsn(primary, "writer", pgWriterPassword, db))
		createSecret(t, ns, dsnSecret("reader", db), "dsn", dsn(standby, "reader", pgReaderPassword, db))
	}
	// One Corpus per database creates the reference schema in both, so the
	// second database is a working target that simply never held the canary.
	createPostgresCorpus(t, ns, "target", "canary_a")
	createPostgresCorpus(t, ns, "other", "canary_b")
	for _, name := range []string{"target", "other"} {
		waitCorpusReady(t, corpusKey(ns, name), metav1.ConditionTrue, v1alpha1.ReasonReachable)
	}
	for _, name := range []string{"alice", "mallory"} {
		crCreate(t, objects.Persona(ns, name, name, objects.Credential(name+"-never-created", objects.TokenKey)))
	}
	run := methodRun(ns, "run", pgInterval, v1alpha1.RevokeRemoveGrant, "")
	crCreate(t, run)
	doc := waitPhase(t, run, v1alpha1.PhaseAwaitingVisibility).Status.DocumentID
	if n := countRows(t, dsn(primary, "postgres", pgtest.SuperPassword, "canary_a"), doc); n.documents != 1 || n.grants != 1 {
		t.Fatalf("canary_a holds %+v after sharing, want the document and alice's grant", n)
	}

	// The Secrets now name canary_b; the Corpus's spec is unchanged.
	for _, kind := range []string{"writer", "reader"} {
		server := primary
		if kind == "reader" {
			server = standby
		}
		repointSecret(t, ns, dsnSecret(kind, "canary_a"), dsn(server, kind, map[string]string{"writer": pgWriterPassword, "reader": pgReaderPassword}[kind], "canary_b"))
	}
	repointed := time.Now()
	got := crWaitDone(t, run)
	if got.Status.RevokeRequestedTime == nil || got.Status.RevokeRequestedTime.Before(&metav1.MicroTime{Time: repointed}) {
		t.Fatalf("revocation requested at %v, before the Secrets changed at %s: the machine was too slow for the test", got.Status.RevokeRequestedTime, repointed)
	}

	if got.Status.Verdict != v1alpha1.VerdictSLOMet {
		t.Fatalf("verdict %s (%s), want SLOMet measured in canary_a", got.Status.Verdict, got.Status.Message)
	}
	m := crSurface(t, got, v1alpha1.SurfaceSearch)
	if m.Bounds == nil || m.Bounds.Upper == nil || m.Bounds.Upper.Duration < retargetApplyDelay {
		t.Errorf("bounds %+v: exclusion before the standby applied the revocation to canary_a (%s): the probes read elsewhere", m.Bounds, retargetApplyDelay)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionTargetChanged); c == nil || c.Status != metav1.ConditionTrue ||
		!strings.Contains(c.Message, "/canary_a") || !strings.Contains(c.Message, "/canary_b") || strings.Contains(c.Message, pgWriterPassword) {
		t.Errorf("TargetChanged condition %+v, want True naming both databases and no password", c)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionCleanupPending); c == nil || c.Reason != v1alpha1.ReasonCleanedUp {
		t.Errorf("CleanupPending condition %+v, want CleanedUp", c)
	}
	if n := countRows(t, dsn(primary, "postgres", pgtest.SuperPassword, "canary_a"), doc); n.documents != 0 || n.grants != 0 {
		t.Errorf("canary_a still holds %+v after the run reported its cleanup", n)
	}
	if n := countRows(t, dsn(primary, "postgres", pgtest.SuperPassword, "canary_b"), doc); n.documents != 0 || n.grants != 0 {
		t.Errorf("canary_b holds %+v: the run wrote where it did not plant", n)
	}
}

// dsnSecret names the Secret holding role's DSN for database db.
func dsnSecret(role, db string) string { return role + "-" + strings.ReplaceAll(db, "_", "-") }

// createPostgresCorpus creates a Postgres corpus reading and writing db
// through the Secrets dsnSecret("writer", db) and dsnSecret("reader", db).
func createPostgresCorpus(t *testing.T, ns, name, db string) {
	t.Helper()
	crCreate(t, postgresCorpus(ns, name, dsnSecret("writer", db), dsnSecret("reader", db)))
}

// repointSecret replaces a credential Secret's DSN.
func repointSecret(t *testing.T, ns, name, dsn string) {
	t.Helper()
	var s corev1.Secret
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &s); err != nil {
		t.Fatal(err)
	}
	base := s.DeepCopy()
	s.Data = map[string][]byte{"dsn": []byte(dsn)}
	if err := k8sClient.Patch(context.Background(), &s, client.MergeFrom(base)); err != nil {
		t.Fatalf("changing Secret %s: %v", name, err)
	}
}

// rowCounts are what a database holds of one canary document.
type rowCounts struct{ documents, grants int }

// countRows reads, as the superuser on the primary, the canary's rows in
// the reference schema of the database dsn names.
func countRows(t *testing.T, dsn, doc string) rowCounts {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(ctx) }()
	var n rowCounts
	if err := conn.QueryRow(ctx, "select (select count(*) from rag.documents where id = $1), (select count(*) from rag.document_acl where document_id = $1)", doc).
		Scan(&n.documents, &n.grants); err != nil {
		t.Fatal(err)
	}
	return n
}

// startOperatorAllowing starts an operator (see startTestOperator) whose
// door admits only the given target URLs.
func startOperatorAllowing(t *testing.T, cfg *rest.Config, urls ...string) *testOperator {
	t.Helper()
	allow, err := target.ParseAllowlist(urls)
	if err != nil {
		t.Fatal(err)
	}
	return startOperatorWith(t, cfg, time.Second, func(r client.Reader, l *target.Limiters) *target.Door {
		return &target.Door{Reader: r, Allow: allow, Limiters: l}
	})
}

// TestCanaryRunRetargetedAcrossRestartToATargetNoLongerAllowed: the run
// plants at A; the operator stops; the Corpus is pointed at B and the
// operator comes back allowing only B, so the run's kept copy cannot reach
// the planted target. Nothing measured at B is about the canary: the run
// ends Inconclusive with TargetChanged, sends B nothing, and its cleanup
// stays pending (A still holds the document) instead of reporting it
// removed; once A is allowed again, cleanup removes the document at A.
func TestCanaryRunRetargetedAcrossRestartToATargetNoLongerAllowed(t *testing.T) {
	t.Parallel() // its own API server and operator
	cfg, c := startOwnAPIServer(t)
	a := startCRTarget(t, ragtarget.Config{ContentSyncInterval: time.Hour}, 0, false)
	b := startWatchedTarget(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "retarget-"}}
	crCreateIn(t, c, ns)
	crFixtureIn(t, c, ns.Name, a.URL)
	run := crRunSpec(ns.Name, 20*time.Second, v1alpha1.SurfaceSearch)
	crCreateIn(t, c, run)

	first := startOperatorAllowing(t, cfg, a.URL, b.URL)
	var doc string
	testutil.Eventually(t, eventuallyTimeout, "awaiting visibility at A", func() error {
		got := crGetIn(t, c, run)
		if got.Status.Phase != v1alpha1.PhaseAwaitingVisibility {
			return fmt.Errorf("phase %q (%s)", got.Status.Phase, got.Status.Message)
		}
		doc = got.Status.DocumentID
		return nil
	})
	first.stop()
	var corpus v1alpha1.Corpus
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns.Name, Name: "target"}, &corpus); err != nil {
		t.Fatal(err)
	}
	base := corpus.DeepCopy()
	corpus.Spec.Driver.HTTP.URL = b.URL
	if err := c.Patch(context.Background(), &corpus, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}

	second := startOperatorAllowing(t, cfg, b.URL)
	var got *v1alpha1.CanaryRun
	testutil.Eventually(t, eventuallyTimeout, "Inconclusive with the cleanup pending", func() error {
		got = crGetIn(t, c, run)
		cleanup := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionCleanupPending)
		if got.Status.Verdict == "" || cleanup == nil {
			return fmt.Errorf("phase %q verdict %q (%s), cleanup %+v", got.Status.Phase, got.Status.Verdict, got.Status.Message, cleanup)
		}
		return nil
	})
	if got.Status.Verdict != v1alpha1.VerdictInconclusive || !strings.Contains(got.Status.Message, "cannot reach the planted target") {
		t.Errorf("verdict %s (%s), want Inconclusive because the planted target cannot be reached", got.Status.Verdict, got.Status.Message)
	}
	if cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionTargetChanged); cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != v1alpha1.ReasonTargetChanged {
		t.Errorf("TargetChanged condition %+v, want True", cond)
	}
	if cleanup := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionCleanupPending); cleanup.Status != metav1.ConditionTrue || cleanup.Reason == v1alpha1.ReasonCleanedUp {
		t.Errorf("CleanupPending %+v while A still holds the document, want True", cleanup)
	}
	if isTerminal(got.Status.Phase) {
		t.Errorf("phase %s: the run finished with its document left at A", got.Status.Phase)
	}
	if _, left := a.SourceDocuments()[doc]; !left {
		t.Error("the document is gone from A, though no operator could reach A")
	}
	second.stop()
	if reqs := b.runRequests(doc); len(reqs) > 0 {
		t.Errorf("the run talked to the target it did not plant in: %s", shown(reqs))
	}

	startOperatorAllowing(t, cfg, a.URL, b.URL)
	done := crWaitDoneIn(t, c, run)
	if cleanup := meta.FindStatusCondition(done.Status.Conditions, v1alpha1.ConditionCleanupPending); cleanup == nil || cleanup.Reason != v1alpha1.ReasonCleanedUp {
		t.Errorf("CleanupPending %+v, want CleanedUp", cleanup)
	}
	if _, left := a.SourceDocuments()[doc]; left || !a.deleted(doc) {
		t.Error("cleanup did not remove the document at the planted target")
	}
	if done.Status.Verdict != v1alpha1.VerdictInconclusive {
		t.Errorf("verdict %s after cleanup, want Inconclusive kept", done.Status.Verdict)
	}
}
