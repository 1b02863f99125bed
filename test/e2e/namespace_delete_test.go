package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/targettest"
	"github.com/ragcanary/ragcanary/internal/driver"
	httpdriver "github.com/ragcanary/ragcanary/internal/driver/http"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// nsDeleteGroup is the group the RemoveFromGroup canary shares through.
const nsDeleteGroup = "e2e-ns-delete-readers"

// TestNamespaceDeletedWhileAwaitingExclusion deletes a canary's namespace
// while its run waits for the revocation to reach the index, as a user
// removing a whole team's setup would. Kubernetes deletes the Corpus,
// Personas and credential Secrets alongside the run; the run must still
// take its document, grants and group membership out of the target before
// it lets go, and the namespace must end.
//
// Which the namespace controller deletes first is up to it. With the
// manager down during the deletion, the run's Corpus and Secrets are
// certainly gone before the manager sees the run deleted.
//
// Each case's target is a ragtarget of its own whose ACL sync runs only
// right after a grant or a membership is added: sharing becomes visible at
// once, a revocation never does, so the run stays in AwaitingExclusion
// until the namespace goes.
func TestNamespaceDeletedWhileAwaitingExclusion(t *testing.T) {
	cases := []struct {
		name   string
		method v1alpha1.RevocationMethod
		// managerDown stops the manager from before the deletion until
		// the Corpus, Personas and credential Secrets are gone.
		managerDown bool
	}{
		{name: "RemoveGrant", method: v1alpha1.RevokeRemoveGrant},
		{name: "RemoveFromGroup", method: v1alpha1.RevokeRemoveFromGroup},
		{name: "RemoveFromGroupManagerDown", method: v1alpha1.RevokeRemoveFromGroup, managerDown: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runNamespaceDelete(t, tc.method, tc.managerDown) })
	}
}

func runNamespaceDelete(t *testing.T, method v1alpha1.RevocationMethod, managerDown bool) {
	ctx := context.Background()
	tgt := startNamespaceDeleteTarget(t)
	// Unique per attempt, so the test can run again in the same process (-count).
	ns := fmt.Sprintf("e2e-nsdelete-%s-%d", strings.ToLower(string(method)), nsDeleteAttempts.Add(1))
	for _, obj := range nsDeleteObjects(ns, method) {
		if err := env.client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}

	var run v1alpha1.CanaryRun
	testutil.Eventually(t, 2*time.Minute, "a run awaiting exclusion", func() error {
		var runs v1alpha1.CanaryRunList
		if err := env.client.List(ctx, &runs, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(runs.Items) != 1 {
			return fmt.Errorf("%d runs", len(runs.Items))
		}
		run = runs.Items[0]
		if run.Status.Phase != v1alpha1.PhaseAwaitingExclusion {
			return fmt.Errorf("phase %q (%s)", run.Status.Phase, run.Status.Message)
		}
		return nil
	})
	doc := run.Status.DocumentID
	if _, ok := tgt.svc.SourceDocuments()[doc]; !ok {
		t.Fatalf("the run awaits exclusion but the target has no document %s", doc)
	}
	handle := readHandle(t, &run)

	if managerDown {
		env.manager.kill()
		t.Cleanup(func() {
			// Later tests share the manager: never leave it dead.
			if !env.manager.running() {
				if err := env.manager.restart(); err != nil {
					t.Errorf("restarting the manager: %v", err)
				}
			}
		})
	}
	if err := env.client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatalf("deleting the namespace: %v", err)
	}
	if managerDown {
		testutil.Eventually(t, 2*time.Minute, "the run's corpus, personas and secrets gone", func() error { return userObjectsGone(ctx, ns) })
		if err := env.manager.restart(); err != nil {
			t.Fatal(err)
		}
	}
	seen := watchUntilNamespaceGone(t, ns, run.Name, 2*time.Minute)

	// The source is the system of record: what is left there stays
	// readable to whoever holds a grant, whatever the index shows.
	var left []string
	for id, principals := range tgt.svc.SourceDocuments() {
		if strings.HasPrefix(id, canaryDocumentPrefix) {
			left = append(left, fmt.Sprintf("document %s granted to %v", id, principals))
		}
	}
	for _, m := range tgt.members() {
		left = append(left, "group membership "+m)
	}
	if len(left) > 0 {
		// The run's events are gone with the namespace (and one recorded
		// while it terminates is refused), so the manager's log says why.
		t.Errorf("after the namespace was deleted the target still holds %s\n%s\nmanager log about %s:\n%s",
			strings.Join(left, "; "), seen, ns, managerLogAbout(ns, 20))
	}
	// And the index stops serving the document once the deletion synced.
	drv, err := httpdriver.New(httpdriver.Config{BaseURL: env.ragtargetURL + restartTargetPath, SourceToken: sourceToken, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the canary document gone from the persona's search", func() error {
		hits, err := drv.Search(ctx, driver.Token(aliceToken), handle, 10)
		if err != nil {
			return err
		}
		for _, h := range hits {
			if h.DocumentID == doc {
				return fmt.Errorf("searching by the handle still finds %s", doc)
			}
		}
		return nil
	})
	t.Logf("%s: the run in %s let go and the namespace ended\n%s", method, ns, seen)
}

// managerLogAbout is the last n lines of the manager's log mentioning s.
func managerLogAbout(s string, n int) string {
	data, err := os.ReadFile(env.manager.logPath)
	if err != nil {
		return err.Error()
	}
	var lines []string
	for line := range strings.SplitSeq(string(data), "\n") {
		if strings.Contains(line, s) {
			lines = append(lines, line)
		}
	}
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// userObjectsGone is nil once the objects the test created for the run's
// cleanup to read are gone: the Corpus, the Personas and the credential
// Secrets. (What the manager keeps for itself under its own finalizers may
// stay until it is back.)
func userObjectsGone(ctx context.Context, ns string) error {
	for _, obj := range nsDeleteObjects(ns, v1alpha1.RevokeRemoveGrant) {
		switch obj.(type) {
		case *v1alpha1.Corpus, *v1alpha1.Persona, *corev1.Secret:
		default:
			continue
		}
		if err := gone(ctx, obj); err != nil {
			return err
		}
	}
	return nil
}

// gone is nil once obj is not found; an error reading it is not absence.
func gone(ctx context.Context, obj client.Object) error {
	err := env.client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	default:
		return fmt.Errorf("%T %s still exists", obj, obj.GetName())
	}
}

// readHandle reads the run's query handle while its Secret still exists.
func readHandle(t *testing.T, run *v1alpha1.CanaryRun) string {
	t.Helper()
	var secret corev1.Secret
	key := client.ObjectKey{Namespace: run.Namespace, Name: run.Status.TokenSecretName}
	if err := env.client.Get(context.Background(), key, &secret); err != nil {
		t.Fatalf("reading the token Secret: %v", err)
	}
	handle := string(secret.Data["handle"])
	if handle == "" {
		t.Fatal("the token Secret holds no handle")
	}
	return handle
}

// watchUntilNamespaceGone waits, bounded, until the namespace no longer
// exists, and returns what it saw of the run on the way (its last status
// and its events), which are gone with the namespace.
func watchUntilNamespaceGone(t *testing.T, ns, runName string, timeout time.Duration) string {
	t.Helper()
	ctx := context.Background()
	var lastStatus string
	events := map[string]bool{}
	var order []string
	describe := func() string {
		return fmt.Sprintf("run's last status: %s\nrun's events:\n  %s", lastStatus, strings.Join(order, "\n  "))
	}
	testutil.Eventually(t, timeout, "namespace "+ns+" gone", func() error {
		var run v1alpha1.CanaryRun
		if err := env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: runName}, &run); err == nil {
			lastStatus = fmt.Sprintf("phase %s verdict %q message %q deleting %v conditions %s",
				run.Status.Phase, run.Status.Verdict, run.Status.Message, run.DeletionTimestamp != nil, conditionSummary(run.Status.Conditions))
		}
		var evs corev1.EventList
		if err := env.client.List(ctx, &evs, client.InNamespace(ns)); err == nil {
			for _, e := range evs.Items {
				if e.InvolvedObject.Name != runName {
					continue
				}
				line := fmt.Sprintf("%s %s: %s", e.Type, e.Reason, e.Message)
				if !events[line] {
					events[line] = true
					order = append(order, line)
				}
			}
		}
		err := env.client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("last read: %v\n%s", err, describe())
	})
	return describe()
}

func conditionSummary(cs []metav1.Condition) string {
	parts := make([]string, 0, len(cs))
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// nsDeleteObjects are a canary's whole setup in its own namespace:
// credential Secrets, the corpus on the test's target, the persona and a
// control persona, and a canary that starts one run now.
func nsDeleteObjects(ns string, method v1alpha1.RevocationMethod) []client.Object {
	secret := func(name, value string) *corev1.Secret { return objects.CredentialSecret(ns, name, value) }
	persona := func(name, subject string) *v1alpha1.Persona { return tokenPersona(ns, name, subject) }
	ref := func(n string) v1alpha1.LocalObjectReference { return v1alpha1.LocalObjectReference{Name: n} }
	dur := func(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }
	revocation := v1alpha1.Revocation{Method: method}
	if method == v1alpha1.RevokeRemoveFromGroup {
		revocation.Group = nsDeleteGroup
	}
	hourly := dur(time.Hour)
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		secret("source", sourceToken), secret("alice", aliceToken), secret("mallory", malloryToken),
		scenarioCorpus(ns, "kb", env.ragtargetURL+restartTargetPath),
		persona("alice", "alice@example.com"), persona("mallory", "mallory@example.com"),
		&v1alpha1.RevocationCanary{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "canary",
				Annotations: map[string]string{v1alpha1.AnnotationRunNow: "now"}},
			Spec: v1alpha1.RevocationCanarySpec{
				Scheduling: v1alpha1.Scheduling{Schedule: v1alpha1.Schedule{Every: &hourly}},
				CanarySpec: v1alpha1.CanarySpec{
					CorpusRef: ref("kb"), PersonaRef: ref("alice"),
					ControlPersonaRefs: []v1alpha1.LocalObjectReference{ref("mallory")},
					Revocation:         revocation,
					Probing: v1alpha1.Probing{
						Interval: dur(250 * time.Millisecond), Confirmations: 2,
						// Far beyond the test: the run is still waiting when
						// its namespace goes.
						VisibilityTimeout: dur(time.Minute), ExclusionTimeout: dur(time.Hour),
						Surfaces: []v1alpha1.Surface{v1alpha1.SurfaceSearch},
					},
				},
			},
		},
	}
}

// nsDeleteTarget is a ragtarget mounted under restartTargetPath whose ACL
// sync runs only after a grant or membership was added, and which keeps
// track of group memberships (the service shows only documents and grants).
type nsDeleteTarget struct {
	svc  *ragtarget.Service
	next http.Handler

	mu         sync.Mutex
	membership map[string]bool // "group/principal" → member now
}

func startNamespaceDeleteTarget(t *testing.T) *nsDeleteTarget {
	t.Helper()
	svc := targettest.Run(t, ragtarget.Config{
		SourceToken:         sourceToken,
		Tokens:              map[string]string{aliceToken: "alice@example.com", malloryToken: "mallory@example.com"},
		ContentSyncInterval: 200 * time.Millisecond,
		ACLSyncInterval:     targettest.Manual,
	})
	tgt := &nsDeleteTarget{svc: svc, next: svc.Handler(), membership: map[string]bool{}}
	t.Cleanup(env.restartTarget.set(tgt))
	return tgt
}

func (g *nsDeleteTarget) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	g.next.ServeHTTP(sw, r)
	if sw.status >= 300 {
		return
	}
	member, isMember := strings.CutPrefix(r.URL.Path, "/v1/groups/")
	isGrant := strings.Contains(r.URL.Path, "/grants/")
	if isMember {
		g.mu.Lock()
		g.membership[strings.Replace(member, "/members/", "/", 1)] = r.Method == http.MethodPut
		g.mu.Unlock()
	}
	if (isMember || isGrant) && r.Method == http.MethodPut {
		_ = g.svc.SyncNow(ragtarget.SyncACL)
	}
}

// members lists the memberships the source holds now, as "group/principal".
func (g *nsDeleteTarget) members() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for m, ok := range g.membership {
		if ok {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// nsDeleteAttempts numbers the test's namespaces.
var nsDeleteAttempts atomic.Int64
