package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
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
	var wg sync.WaitGroup
	for _, lt := range []*lagTarget{fixedTarget, adaptiveTarget} {
		wg.Go(func() { lt.drive(ctx, ns, "run-"+lt.name) })
	}
	defer wg.Wait()

	runs := map[string]*v1alpha1.CanaryRun{}
	for _, name := range []string{"fixed", "adaptive"} {
		var run v1alpha1.CanaryRun
		if err := waitFor(3*time.Minute, "the "+name+" run's verdict", func() (bool, error) {
			err := env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "run-" + name}, &run)
			return err == nil && run.Status.Verdict != "" && len(run.Status.Surfaces) == 1, err
		}); err != nil {
			t.Fatal(err)
		}
		runs[name] = &run
	}

	probes := map[string]int32{}
	for name, lt := range map[string]*lagTarget{"fixed": fixedTarget, "adaptive": adaptiveTarget} {
		run := runs[name]
		if err := lt.failure(); err != nil {
			t.Fatalf("%s target: %v; the run: phase %s, verdict %s (%s), conditions %+v; the manager's log about it:\n%s",
				name, err, run.Status.Phase, run.Status.Verdict, run.Status.Message, run.Status.Conditions, managerLogAbout(ns, 30))
		}
		m := run.Status.Surfaces[0]
		if run.Status.Verdict != v1alpha1.VerdictSLOMet || m.Bounds == nil || m.Bounds.Lower == nil || m.Bounds.Upper == nil {
			t.Fatalf("%s run: verdict %s (%s), bounds %+v; want SLOMet with both bounds", name, run.Status.Verdict, run.Status.Message, m.Bounds)
		}
		req, ack := run.Status.RevokeRequestedTime.Time, run.Status.RevokeAcknowledgedTime.Time
		lower, upper := m.Bounds.Lower.Duration, m.Bounds.Upper.Duration
		// The index dropped the grant between the sync's tick and its end:
		// the last sighting started before the end, the first absence of
		// the streak ended after the tick.
		tick, done := lt.applied()
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
	dur := func(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }
	ref := func(n string) v1alpha1.LocalObjectReference { return v1alpha1.LocalObjectReference{Name: n} }
	objs := aliceNamespace(ns)
	for _, name := range []string{"fixed", "adaptive"} {
		// A Go client sends every duration field (they are not pointers), so
		// maxInterval is set for both, as interval is.
		probing := v1alpha1.Probing{Schedule: v1alpha1.ScheduleFixed, Interval: dur(interval), MaxInterval: dur(time.Minute), Confirmations: 3,
			VisibilityTimeout: dur(30 * time.Second), ExclusionTimeout: dur(60 * time.Second),
			Surfaces: []v1alpha1.Surface{v1alpha1.SurfaceSearch}}
		if name == "adaptive" {
			probing.Schedule, probing.Precision = v1alpha1.ScheduleAdaptive, precision
		}
		objs = append(objs,
			&v1alpha1.Corpus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kb-" + name},
				Spec: v1alpha1.CorpusSpec{
					Driver: v1alpha1.Driver{Type: v1alpha1.DriverHTTP, HTTP: &v1alpha1.HTTPDriver{
						URL: env.ragtargetURL + lagTargetsPath + "/" + name, CredentialSecretRef: v1alpha1.SecretKeyReference{Name: "source", Key: "token"}}},
					Freshness: v1alpha1.Freshness{ExclusionSLO: &metav1.Duration{Duration: 30 * time.Second}},
				}},
			&v1alpha1.CanaryRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "run-" + name},
				Spec: v1alpha1.CanaryRunSpec{CanarySpec: v1alpha1.CanarySpec{
					CorpusRef: ref("kb-" + name), PersonaRef: ref("alice"), Probing: probing}}},
		)
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
	name       string
	svc        *ragtarget.Service
	mu         sync.Mutex
	tick, done time.Time
	err        error
}

func newLagTarget(t *testing.T, name string) *lagTarget {
	t.Helper()
	lt := &lagTarget{name: name}
	svc, err := ragtarget.New(ragtarget.Config{
		SourceToken: sourceToken, Tokens: map[string]string{aliceToken: "alice@example.com"},
		// Neither schedule fires during the test: drive runs the syncs.
		ContentSyncInterval: 1000 * time.Hour, ACLSyncInterval: 1000 * time.Hour,
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
	lt.svc = svc
	return lt
}

// drive plays the ragtarget's syncs for run: a content sync once the
// persona holds a grant at the source, which indexes the canary with it,
// and an ACL sync aclLag after the run's revocation request. It records
// the ACL sync's start and end.
func (lt *lagTarget) drive(ctx context.Context, ns, run string) {
	fail := func(err error) {
		lt.mu.Lock()
		defer lt.mu.Unlock()
		lt.err = err
	}
	if err := waitFor(time.Minute, "the canary shared at the source", func() (bool, error) {
		for id, principals := range lt.svc.SourceDocuments() {
			if id != "" && slices.Contains(principals, "alice@example.com") {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		fail(err)
		return
	}
	if _, _, err := lt.sync(ragtarget.SyncContent); err != nil {
		fail(err)
		return
	}
	var requested time.Time
	if err := waitFor(time.Minute, "the revocation request", func() (bool, error) {
		var r v1alpha1.CanaryRun
		err := env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: run}, &r)
		if err == nil && r.Status.RevokeRequestedTime != nil {
			requested = r.Status.RevokeRequestedTime.Time
		}
		return !requested.IsZero(), err
	}); err != nil {
		fail(err)
		return
	}
	// The system under test's lag, in real time: the sync that applies
	// the revocation runs aclLag after it was requested.
	<-time.After(time.Until(requested.Add(aclLag)))
	tick, done, err := lt.sync(ragtarget.SyncACL)
	lt.mu.Lock()
	defer lt.mu.Unlock()
	lt.tick, lt.done, lt.err = tick, done, err
}

// sync runs one sync of kind and returns when it started and ended: the
// end bounds when probes could first miss the canary.
func (lt *lagTarget) sync(kind ragtarget.SyncKind) (time.Time, time.Time, error) {
	tick := time.Now()
	err := lt.svc.SyncNow(kind)
	return tick, time.Now(), err
}

func (lt *lagTarget) applied() (time.Time, time.Time) {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	return lt.tick, lt.done
}

func (lt *lagTarget) failure() error {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if lt.err == nil && lt.tick.IsZero() {
		return fmt.Errorf("the revocation's ACL sync never ran")
	}
	return lt.err
}
