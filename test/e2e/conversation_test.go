package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/targettest"
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
	return targettest.Run(t, ragtarget.Config{
		SourceToken: sourceToken, Tokens: map[string]string{aliceToken: "alice@example.com"},
		ContentSyncInterval: 200 * time.Millisecond, ACLSyncInterval: conversationACLSync,
		ConversationReusesHistory: reusesHistory,
	})
}

// conversationObjects are a corpus per ragtarget and a run per corpus.
func conversationObjects(ns string) []client.Object {
	objs := aliceNamespace(ns)
	for _, name := range []string{"reauth", "history"} {
		objs = append(objs,
			objects.Corpus(ns, "kb-"+name, env.ragtargetURL+restartTargetPath+"/"+name, objects.ExclusionSLO(30*time.Second)),
			objects.CanaryRun(ns, "run-"+name, objects.OnCorpus("kb-"+name), objects.Controls(), objects.SLO(0),
				objects.Every(300*time.Millisecond, 2), objects.Timeouts(30*time.Second, 8*time.Second),
				objects.Probe(v1alpha1.SurfaceSearch, v1alpha1.SurfaceConversation)))
	}
	return objs
}
