package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/controllers/canaryrun"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
	"github.com/ragcanary/ragcanary/internal/schedule"
)

// TestRevocationCanaryDeletedMidRunLeavesNothing: a canary deleted while its
// run is in flight holds on (its finalizer) until the run revoked and
// deleted the canary document, then goes, taking its metric series with it.
// The check is made at the source, where neither the document nor alice's
// grant may remain, and through search as alice once the index synced.
// envtest has no garbage collector, so nothing here relies on one.
func TestRevocationCanaryDeletedMidRunLeavesNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		// phase is where the run is when the canary is deleted.
		phase v1alpha1.CanaryPhase
		// cfg and opts keep the run in that phase.
		cfg  ragtarget.Config
		opts crTargetOptions
		// grantedAtSource: alice still holds a grant at the source when the
		// canary is deleted (before revocation), so the check below can fail.
		grantedAtSource bool
	}{
		{
			name:  "AwaitingVisibility",
			phase: v1alpha1.PhaseAwaitingVisibility,
			// Content never syncs on its own: the document never becomes visible.
			cfg:             ragtarget.Config{ContentSyncInterval: time.Hour},
			grantedAtSource: true,
		},
		{
			name:  "AwaitingExclusion",
			phase: v1alpha1.PhaseAwaitingExclusion,
			// The revocation is held back from the index: alice keeps seeing the token.
			opts: crTargetOptions{hold: true},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := startCRTargetWith(t, tc.cfg, tc.opts)
			ns := crFixture(t, tg.URL)
			canary := runNowCanary(ns, "deleted-mid-run", time.Minute)
			scheduleClock.SetTime(time.Now())
			crCreate(t, canary)
			t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), canary) })
			run := &v1alpha1.CanaryRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: schedule.RunNowName(canary.Name, "now")}}

			var doc string
			testutil.Eventually(t, eventuallyTimeout, "run in "+string(tc.phase), func() error {
				var got v1alpha1.CanaryRun
				if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(run), &got); err != nil {
					return err
				}
				if got.Status.Phase != tc.phase || !controllerutil.ContainsFinalizer(&got, v1alpha1.FinalizerCanaryRun) {
					return fmt.Errorf("phase %q finalizers %v (%s)", got.Status.Phase, got.Finalizers, got.Status.Message)
				}
				doc = got.Status.DocumentID
				run = &got
				return nil
			})
			token := crToken(t, run)
			if got := canaryGet(t, canary); !controllerutil.ContainsFinalizer(got, v1alpha1.FinalizerRevocationCanary) {
				t.Fatalf("canary finalizers %v, want %s", got.Finalizers, v1alpha1.FinalizerRevocationCanary)
			}
			acl, planted := tg.SourceDocuments()[doc]
			if !planted || slices.Contains(acl, "alice@example.com") != tc.grantedAtSource {
				t.Fatalf("before deletion: document planted %v with grants %v, want alice granted=%v", planted, acl, tc.grantedAtSource)
			}
			if err := k8sClient.Delete(context.Background(), canary); err != nil {
				t.Fatal(err)
			}

			for _, obj := range []client.Object{canary, run} {
				waitGone(t, obj)
			}
			for id, acl := range tg.SourceDocuments() {
				if strings.HasPrefix(id, canaryrun.DocumentIDPrefix) {
					t.Errorf("canary document %s remains at the source with grants %v", id, acl)
				}
				if slices.Contains(acl, "alice@example.com") {
					t.Errorf("document %s still grants alice", id)
				}
			}
			// The index agrees once both syncs ran: alice cannot retrieve the token.
			tg.Sync(t)
			hits, err := tg.Driver(t, 2*time.Second).Search(context.Background(), driver.Token(testAliceToken), token, 10)
			if err != nil {
				t.Fatal(err)
			}
			if slices.ContainsFunc(hits, func(h driver.Hit) bool { return h.DocumentID == doc }) {
				t.Error("alice still retrieves the canary document after the canary was deleted")
			}
			if n := countSeries(t, ns, canary.Name); n != 0 {
				t.Errorf("%d metric series of the deleted canary remain", n)
			}
		})
	}
}

// runNowCanary is an hourly canary against the crFixture corpus that asks
// for one run at once (run-now token "now"), revokes alice's grant, probes
// every 200ms with two confirmations until exclusionTimeout, and has
// mallory as control persona.
func runNowCanary(ns, name string, exclusionTimeout time.Duration) *v1alpha1.RevocationCanary {
	canary := objects.RevocationCanary(ns, name, time.Hour, onTarget, objects.Timeouts(time.Minute, exclusionTimeout))
	canary.Annotations = map[string]string{v1alpha1.AnnotationRunNow: "now"}
	return canary
}

// canaryGet reads a canary with the direct client.
func canaryGet(t *testing.T, canary *v1alpha1.RevocationCanary) *v1alpha1.RevocationCanary {
	t.Helper()
	var got v1alpha1.RevocationCanary
	if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(canary), &got); err != nil {
		t.Fatalf("reading canary: %v", err)
	}
	return &got
}
