package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// conversationACLSync is the ACL sync interval of the conversation test's
// ragtargets: the revocation lag of every surface that re-authorises.
const conversationACLSync = time.Second

// TestConversationSurface runs a Search+Conversation canary through the
// manager binary against two ragtargets that differ only in
// --conversation-reuses-history. Re-authorised follow-ups are excluded
// within the ACL lag; follow-ups answered from conversation history keep
// the revoked canary until the timeout (NotExcluded) while search is
// excluded, and kubectl shows both as intervals.
func TestConversationSurface(t *testing.T) {
	const ns = "e2e-conversation"
	ctx := context.Background()
	mux := http.NewServeMux()
	for name, reuses := range map[string]bool{"reauth": false, "history": true} {
		svc := conversationTarget(t, reuses)
		mux.Handle("/"+name+"/", http.StripPrefix("/"+name, svc.Handler()))
	}
	defer env.restartTarget.set(mux)()

	for _, obj := range conversationObjects(ns) {
		if err := env.client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
	runs := map[string]*v1alpha1.CanaryRun{}
	for _, name := range []string{"reauth", "history"} {
		var run v1alpha1.CanaryRun
		testutil.EventuallyEvery(t, 2*time.Minute, time.Second/2, "the "+name+" run's verdict", func() error {
			if err := env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "run-" + name}, &run); err != nil {
				return err
			}
			if run.Status.Phase != v1alpha1.PhaseSucceeded {
				return fmt.Errorf("phase %s", run.Status.Phase)
			}
			return nil
		})
		runs[name] = &run
	}

	surface := func(run *v1alpha1.CanaryRun, s v1alpha1.Surface) v1alpha1.SurfaceMeasurement {
		for _, m := range run.Status.Surfaces {
			if m.Surface == s {
				return m
			}
		}
		t.Fatalf("%s: no %s measurement", run.Name, s)
		return v1alpha1.SurfaceMeasurement{}
	}
	reauth := runs["reauth"]
	if reauth.Status.Verdict != v1alpha1.VerdictSLOMet || reauth.Status.ConversationID == "" {
		t.Fatalf("reauth run: verdict %s (%s), conversation %q; want SLOMet in a persisted conversation", reauth.Status.Verdict, reauth.Status.Message, reauth.Status.ConversationID)
	}
	m := surface(reauth, v1alpha1.SurfaceConversation)
	// Excluded within the ACL lag: the upper bound is at most one sync
	// interval plus the confirmation probes and a probe round of slack.
	if limit := conversationACLSync + 4*300*time.Millisecond; !m.Excluded || m.Bounds.Upper == nil || m.Bounds.Upper.Duration > limit {
		t.Errorf("reauth conversation: %+v, want excluded with an upper bound ≤ %s", m, limit)
	}
	t.Logf("reauth: conversation bounds [%s, %s], probes %+v", m.Bounds.Lower.Duration, m.Bounds.Upper.Duration, m.Probes)

	history := runs["history"]
	if history.Status.Verdict != v1alpha1.VerdictNotExcluded {
		t.Fatalf("history run: verdict %s (%s), want NotExcluded", history.Status.Verdict, history.Status.Message)
	}
	if s := surface(history, v1alpha1.SurfaceSearch); !s.Excluded {
		t.Errorf("history run: search not excluded (%+v): the revocation never reached the index", s)
	}
	if c := surface(history, v1alpha1.SurfaceConversation); c.Excluded || c.Bounds == nil || c.Bounds.Upper != nil || c.Probes.Errors != 0 {
		t.Errorf("history run: conversation %+v, want right-censored without probe errors", c)
	}

	// People see the conversation's interval next to search's.
	out := kubectl(t, nil, "get", "canaryruns", "-n", ns)
	shown := surface(history, v1alpha1.SurfaceConversation).Exclusion
	if !strings.Contains(out, "CONVERSATION EXCLUSION") || !strings.Contains(out, shown) || !strings.HasPrefix(shown, ">") {
		t.Errorf("kubectl get canaryruns:\n%s\nwant a Conversation Exclusion column showing %q (a lower bound)", out, shown)
	}
	t.Logf("kubectl get canaryruns:\n%s", out)
}

func conversationTarget(t *testing.T, reusesHistory bool) *ragtarget.Service {
	t.Helper()
	svc, err := ragtarget.New(ragtarget.Config{
		SourceToken: sourceToken, Tokens: map[string]string{aliceToken: "alice@example.com"},
		ContentSyncInterval: 200 * time.Millisecond, ACLSyncInterval: conversationACLSync,
		ConversationReusesHistory: reusesHistory,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	svc.Start(ctx)
	t.Cleanup(func() {
		cancel()
		_ = svc.Close()
	})
	return svc
}

// conversationObjects are a corpus per ragtarget and a run per corpus.
func conversationObjects(ns string) []client.Object {
	dur := func(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }
	ref := func(n string) v1alpha1.LocalObjectReference { return v1alpha1.LocalObjectReference{Name: n} }
	objs := aliceNamespace(ns)
	for _, name := range []string{"reauth", "history"} {
		objs = append(objs,
			&v1alpha1.Corpus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kb-" + name},
				Spec: v1alpha1.CorpusSpec{
					Driver: v1alpha1.Driver{Type: v1alpha1.DriverHTTP, HTTP: &v1alpha1.HTTPDriver{
						URL: env.ragtargetURL + restartTargetPath + "/" + name, CredentialSecretRef: v1alpha1.SecretKeyReference{Name: "source", Key: "token"}}},
					Freshness: v1alpha1.Freshness{ExclusionSLO: &metav1.Duration{Duration: 30 * time.Second}},
				}},
			&v1alpha1.CanaryRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "run-" + name},
				Spec: v1alpha1.CanaryRunSpec{CanarySpec: v1alpha1.CanarySpec{
					CorpusRef: ref("kb-" + name), PersonaRef: ref("alice"),
					Probing: v1alpha1.Probing{Schedule: v1alpha1.ScheduleFixed, Interval: dur(300 * time.Millisecond), Confirmations: 2,
						VisibilityTimeout: dur(30 * time.Second), ExclusionTimeout: dur(8 * time.Second), MaxInterval: dur(time.Minute),
						Surfaces: []v1alpha1.Surface{v1alpha1.SurfaceSearch, v1alpha1.SurfaceConversation}}}}},
		)
	}
	return objs
}
