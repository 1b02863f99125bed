package controllers

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/controllers/canaryrun"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/targettest"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// freshTarget is a real ragtarget over real HTTP whose content sync runs
// only when the test runs it. Until the canary document is replaced (its
// second PUT) both syncs run every 100ms; the replacement is then applied
// by one content sync, lag after the request, and the test records when:
// the ground truth of a content-freshness run.
type freshTarget struct {
	*targettest.Target
	lag time.Duration

	mu sync.Mutex
	// puts counts PUTs of a canary document itself (not its grants).
	puts      int
	updatedAt time.Time
	// syncStart and syncEnd bracket the content sync that applied the update.
	syncStart, syncEnd time.Time
}

func startFreshTarget(t *testing.T, lag time.Duration) *freshTarget {
	t.Helper()
	ft := &freshTarget{lag: lag}
	ft.Target = targettest.Start(t, fixtureConfig(ragtarget.Config{
		// Both syncs are the test's (see drive).
		ContentSyncInterval: targettest.Manual, ACLSyncInterval: targettest.Manual,
		AnswerCacheTTL: time.Hour,
	}), targettest.Wrap(ft.countPuts))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		ft.drive(ctx)
	}()
	// Registered after the target's own cleanup, so it runs first.
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return ft
}

// countPuts notes when the canary document is replaced: its second PUT.
func (ft *freshTarget) countPuts(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, "/v1/documents/"+canaryrun.DocumentIDPrefix) &&
			!strings.Contains(strings.TrimPrefix(r.URL.Path, "/v1/documents/"), "/") {
			ft.mu.Lock()
			if ft.puts++; ft.puts == 2 {
				ft.updatedAt = time.Now()
			}
			ft.mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

// drive syncs until the update arrives, then applies it with one content
// sync lag later. The update request is counted before ragtarget sees it,
// and syncs hold mu, so no sync can apply it early.
func (ft *freshTarget) drive(ctx context.Context) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		ft.mu.Lock()
		switch {
		case ft.updatedAt.IsZero():
			_ = ft.SyncNow(ragtarget.SyncACL)
			_ = ft.SyncNow(ragtarget.SyncContent)
		case ft.syncStart.IsZero() && time.Since(ft.updatedAt) >= ft.lag:
			ft.syncStart = time.Now()
			_ = ft.SyncNow(ragtarget.SyncContent)
			ft.syncEnd = time.Now()
		}
		ft.mu.Unlock()
	}
}

func (ft *freshTarget) appliedUpdate() (start, end time.Time) {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	return ft.syncStart, ft.syncEnd
}

// TestCanaryRunUpdateContent: an UpdateContent run against ragtarget over
// real HTTP replaces the canary's body and brackets the content sync that
// applied it, on both surfaces, for the new content appearing and for the
// old content going; the verdict is judged by the content-freshness SLO
// (read from the deprecated visibilitySLO name), and the printer columns
// show the intervals.
func TestCanaryRunUpdateContent(t *testing.T) {
	t.Parallel()
	const lag = 1500 * time.Millisecond
	ft := startFreshTarget(t, lag)
	ns := crFixture(t, ft.URL)
	var corpus v1alpha1.Corpus
	crGetObject(t, types.NamespacedName{Namespace: ns, Name: "target"}, &corpus)
	// A patch, not an update: the corpus controller writes status meanwhile.
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"freshness":{"visibilitySLO":"20s"}}}`))
	if err := k8sClient.Patch(context.Background(), &corpus, patch); err != nil {
		t.Fatalf("setting the deprecated visibilitySLO: %v", err)
	}
	run := crRunSpec(ns, 20*time.Second, v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer)
	run.Spec.Revocation = v1alpha1.Revocation{Method: v1alpha1.RevokeUpdateContent}
	// The run's own exclusion SLO would pass too; a 1s freshness SLO
	// would not, so the verdict below is the freshness SLO's.
	run.Spec.ExclusionSLO = objects.DurationPtr(time.Second)
	run.Spec.Probing.MaxInterval = metav1.Duration{Duration: time.Minute}
	crCreate(t, run)

	got := crWaitDone(t, run)
	crAssertSLOMet(t, got)
	start, end := ft.appliedUpdate()
	if start.IsZero() {
		t.Fatal("the update was never applied by the test's content sync")
	}
	req, ack := got.Status.RevokeRequestedTime.Time, got.Status.RevokeAcknowledgedTime.Time
	for _, s := range []v1alpha1.Surface{v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer} {
		m := crSurface(t, got, s)
		if m.NewContent == nil || !m.NewContent.Visible || m.NewContent.Bounds == nil || m.NewContent.Bounds.Upper == nil {
			t.Fatalf("%s: new content not measured with both bounds: %+v", s, m.NewContent)
		}
		for _, side := range []struct {
			what string
			b    *v1alpha1.ExclusionBounds
		}{{"new content visible", m.NewContent.Bounds}, {"old content gone", m.Bounds}} {
			from, to := ack.Add(side.b.Lower.Duration), req.Add(side.b.Upper.Duration)
			t.Logf("%s %s: sync applied [%s, %s] after the request; measured [%s, %s]",
				s, side.what, start.Sub(req), end.Sub(req), from.Sub(req), to.Sub(req))
			if from.After(end) || to.Before(start) {
				t.Errorf("%s %s: measured interval does not contain the content sync", s, side.what)
			}
			// The configured lag is inside the interval, within a probe round.
			if side.b.Lower.Duration > lag+time.Second || side.b.Upper.Duration < lag {
				t.Errorf("%s %s: [%s, %s] does not bracket the %s lag", s, side.what, side.b.Lower.Duration, side.b.Upper.Duration, lag)
			}
			if side.b.Upper.Duration-side.b.Lower.Duration > 1500*time.Millisecond {
				t.Errorf("%s %s: interval [%s, %s] is loose", s, side.what, side.b.Lower.Duration, side.b.Upper.Duration)
			}
		}
		if m.Probes.Positive == 0 || m.NewContent.Probes.Negative == 0 {
			t.Errorf("%s: probes %+v / new %+v, want the old content seen and the new one missed before the sync", s, m.Probes, m.NewContent.Probes)
		}
	}
	if got.Status.ContentFreshness == "" || !strings.Contains(got.Status.ContentFreshness, "–") {
		t.Errorf("contentFreshness = %q, want an interval", got.Status.ContentFreshness)
	}
	// The second payload is in the run's Secret, never in status.
	var secret corev1.Secret
	crGetObject(t, types.NamespacedName{Namespace: ns, Name: got.Status.TokenSecretName}, &secret)
	updated := string(secret.Data[canaryrun.UpdatedPayloadSecretKey])
	if !strings.HasPrefix(updated, canaryrun.UpdatedPrefix) {
		t.Fatalf("Secret has no updated payload: keys %v", secretKeys(secret.Data))
	}
	if strings.Contains(mustJSON(t, got.Status), updated) {
		t.Error("the updated payload appears in status")
	}
}

func secretKeys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func crGetObject(t *testing.T, key types.NamespacedName, obj client.Object) {
	t.Helper()
	if err := k8sClient.Get(context.Background(), key, obj); err != nil {
		t.Fatalf("reading %s: %v", key, err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestUpdateContentRejectsConversation: the conversation surface cannot
// tell an old version from a new one, so the API refuses the combination
// with a message naming what to change.
func TestUpdateContentRejectsConversation(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	run := crRunSpec(ns, 20*time.Second, v1alpha1.SurfaceSearch, v1alpha1.SurfaceConversation)
	run.Spec.Revocation = v1alpha1.Revocation{Method: v1alpha1.RevokeUpdateContent}
	run.Spec.Probing.MaxInterval = metav1.Duration{Duration: time.Minute}
	err := k8sClient.Create(context.Background(), run)
	if err == nil || !strings.Contains(err.Error(), "UpdateContent measures the Search and Answer surfaces") {
		t.Fatalf("creating an UpdateContent run probing Conversation: %v, want the API to refuse it", err)
	}
	run = crRunSpec(ns, 20*time.Second, v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer)
	run.Spec.Revocation = v1alpha1.Revocation{Method: v1alpha1.RevokeUpdateContent}
	run.Spec.Probing.MaxInterval = metav1.Duration{Duration: time.Minute}
	if err := k8sClient.Create(context.Background(), run); err != nil {
		t.Fatalf("an UpdateContent run on Search and Answer was refused: %v", err)
	}
}
