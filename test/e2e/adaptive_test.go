package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/targettest"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// lagTargetsPath is where the adaptive schedule test serves its own
// ragtargets on the e2e target's listener, inside the manager's allowed
// target URLs.
const lagTargetsPath = "/lag"

// lagTargets serves the ragtargets of TestAdaptiveScheduleBracketsLag.
var lagTargets mount

// aclLag is the revocation lag of the test's ragtargets.
const aclLag = 20 * time.Second

// TestAdaptiveScheduleBracketsLag runs a Fixed and an Adaptive canary
// concurrently, in real time, each against its own ragtarget whose ACL
// sync applies the revocation 20s after it was requested. Both brackets
// must contain the moment the index dropped the grant; the adaptive one
// must be at most max(2s, interval + probe duration) wide and cost fewer
// probes than the fixed one at the same interval.
func TestAdaptiveScheduleBracketsLag(t *testing.T) {
	const (
		ns        = "e2e-adaptive"
		interval  = 500 * time.Millisecond
		precision = "8%"
	)
	ctx := context.Background()
	fixedTarget := newLagTarget(t, "fixed")
	adaptiveTarget := newLagTarget(t, "adaptive")
	mux := http.NewServeMux()
	for _, lt := range []*lagTarget{fixedTarget, adaptiveTarget} {
		mux.Handle("/"+lt.name+"/", http.StripPrefix("/"+lt.name, lt.svc.Handler()))
	}
	defer lagTargets.set(mux)()

	for _, obj := range lagObjects(ns, interval, precision) {
		if err := env.client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
	defer func() {
		if t.Failed() {
			t.Logf("the manager's log about %s:\n%s", ns, managerLogAbout(ns, 30))
		}
	}()
	// The targets' syncs are played here, one poll at a time, so the ACL
	// sync runs aclLag after each run's revocation request.
	testutil.Eventually(t, 3*time.Minute, "both targets' revocations applied", func() error {
		return errors.Join(fixedTarget.step(ctx, ns, "run-fixed"), adaptiveTarget.step(ctx, ns, "run-adaptive"))
	})

	runs := map[string]*v1alpha1.CanaryRun{}
	for _, name := range []string{"fixed", "adaptive"} {
		var run v1alpha1.CanaryRun
		testutil.EventuallyEvery(t, 3*time.Minute, time.Second/2, "the "+name+" run's verdict", func() error {
			if err := env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "run-" + name}, &run); err != nil {
				return err
			}
			if run.Status.Verdict == "" || len(run.Status.Surfaces) != 1 {
				return fmt.Errorf("phase %s, verdict %q, %d surfaces", run.Status.Phase, run.Status.Verdict, len(run.Status.Surfaces))
			}
			return nil
		})
		runs[name] = &run
	}

	probes := map[string]int32{}
	for name, lt := range map[string]*lagTarget{"fixed": fixedTarget, "adaptive": adaptiveTarget} {
		run := runs[name]
		m := run.Status.Surfaces[0]
		if run.Status.Verdict != v1alpha1.VerdictSLOMet || m.Bounds == nil || m.Bounds.Lower == nil || m.Bounds.Upper == nil {
			t.Fatalf("%s run: verdict %s (%s), bounds %+v; want SLOMet with both bounds", name, run.Status.Verdict, run.Status.Message, m.Bounds)
		}
		req, ack := run.Status.RevokeRequestedTime.Time, run.Status.RevokeAcknowledgedTime.Time
		lower, upper := m.Bounds.Lower.Duration, m.Bounds.Upper.Duration
		// The index dropped the grant between the sync's tick and its end:
		// the last sighting started before the end, the first absence of
		// the streak ended after the tick.
		tick, done := lt.aclTick, lt.aclDone
		if lower > done.Sub(ack) || upper < tick.Sub(req) {
			t.Fatalf("%s run: bounds [%s, %s] miss the revocation applied %s–%s after the request",
				name, lower, upper, tick.Sub(req), done.Sub(req))
		}
		probes[name] = m.Probes.Positive + m.Probes.Negative + m.Probes.Errors
		t.Logf("%s: %d exclusion probes, bounds [%s, %s] (width %s), lag applied %s after the request, verdict %s",
			name, probes[name], lower, upper, upper-lower, tick.Sub(req), run.Status.Verdict)
	}
	adaptive := runs["adaptive"].Status.Surfaces[0].Bounds
	if width, limit := adaptive.Upper.Duration-adaptive.Lower.Duration, 2*time.Second; width > limit {
		t.Errorf("adaptive bounds are %s wide, want ≤ %s", width, limit)
	}
	if probes["adaptive"] >= probes["fixed"] {
		t.Errorf("adaptive run sent %d exclusion probes, fixed %d: want fewer", probes["adaptive"], probes["fixed"])
	}
}

// lagObjects are a corpus per ragtarget and a run per corpus, identical
// but for the schedule. The SLO (30s) is above the lag, so both runs must
// meet it.
func lagObjects(ns string, interval time.Duration, precision string) []client.Object {
	objs := aliceNamespace(ns)
	for _, name := range []string{"fixed", "adaptive"} {
		opts := []objects.CanaryOption{objects.OnCorpus("kb-" + name), objects.Controls(), objects.SLO(0),
			objects.Every(interval, 3), objects.Timeouts(30*time.Second, 60*time.Second)}
		if name == "adaptive" {
			opts = append(opts, objects.Adaptive(precision, time.Minute))
		}
		objs = append(objs,
			objects.Corpus(ns, "kb-"+name, env.ragtargetURL+lagTargetsPath+"/"+name, objects.ExclusionSLO(30*time.Second)),
			objects.CanaryRun(ns, "run-"+name, opts...))
	}
	return objs
}

// lagTarget is a ragtarget whose syncs the test runs: a content sync once
// the canary is shared (visibility is not what is measured), and an ACL
// sync aclLag after the revocation was requested.
//
// Content syncs never run on their own: one that indexed the new document
// after the grant would carry the grant with it (a crawler reads both
// together), the run could see the canary and revoke it between two looks
// at the source, and the test would miss the share.
type lagTarget struct {
	name string
	svc  *ragtarget.Service
	// indexed: the content sync indexed the shared canary.
	indexed bool
	// requested is the run's revocation request, once read.
	requested time.Time
	// aclTick and aclDone are when the ACL sync applying the revocation
	// began and ended: the index dropped the grant in between.
	aclTick, aclDone time.Time
}

func newLagTarget(t *testing.T, name string) *lagTarget {
	t.Helper()
	lt := &lagTarget{name: name}
	lt.svc = targettest.Run(t, ragtarget.Config{
		SourceToken: sourceToken, Tokens: map[string]string{aliceToken: "alice@example.com"},
		// Neither schedule fires during the test: drive runs the syncs.
		ContentSyncInterval: targettest.Manual, ACLSyncInterval: targettest.Manual,
	})
	return lt
}

// step plays the target's next sync for run, if it is due: the content
// sync once the persona holds a grant at the source, which indexes the
// canary with it, then the ACL sync once aclLag has passed since the run's
// revocation request (the system under test's lag, in real time). It
// returns nil once the ACL sync has run, and what it waits for until then.
func (lt *lagTarget) step(ctx context.Context, ns, run string) error {
	switch {
	case !lt.aclDone.IsZero():
		return nil
	case !lt.indexed:
		if !lt.sharedAtSource() {
			return fmt.Errorf("%s: the canary is not shared at the source yet", lt.name)
		}
		if _, _, err := lt.sync(ragtarget.SyncContent); err != nil {
			return fmt.Errorf("%s: content sync: %w", lt.name, err)
		}
		lt.indexed = true
		return fmt.Errorf("%s: the canary is indexed, its revocation not requested yet", lt.name)
	case lt.requested.IsZero():
		var r v1alpha1.CanaryRun
		if err := env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: run}, &r); err != nil {
			return err
		}
		if r.Status.RevokeRequestedTime == nil {
			return fmt.Errorf("%s: the revocation is not requested yet (phase %s)", lt.name, r.Status.Phase)
		}
		lt.requested = r.Status.RevokeRequestedTime.Time
		return fmt.Errorf("%s: the ACL sync is due at %s", lt.name, lt.requested.Add(aclLag))
	case time.Now().Before(lt.requested.Add(aclLag)):
		return fmt.Errorf("%s: the ACL sync is due at %s", lt.name, lt.requested.Add(aclLag))
	}
	tick, done, err := lt.sync(ragtarget.SyncACL)
	if err != nil {
		return fmt.Errorf("%s: ACL sync: %w", lt.name, err)
	}
	lt.aclTick, lt.aclDone = tick, done
	return nil
}

// sharedAtSource: the persona holds a grant on a document at the source.
func (lt *lagTarget) sharedAtSource() bool {
	for id, principals := range lt.svc.SourceDocuments() {
		if id != "" && slices.Contains(principals, "alice@example.com") {
			return true
		}
	}
	return false
}

// sync runs one sync of kind and returns when it started and ended: the
// end bounds when probes could first miss the canary.
func (lt *lagTarget) sync(kind ragtarget.SyncKind) (time.Time, time.Time, error) {
	tick := time.Now()
	err := lt.svc.SyncNow(kind)
	return tick, time.Now(), err
}
