package canaryrun

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/kubetest"
	"github.com/ragcanary/ragcanary/internal/probe"
)

// TestTransitionEventsWaitForTheirWrite: a sentinel's first sighting and a
// control persona's first isolation violation are sent as Warning events
// only once the status recording them is stored. A write that conflicts is
// retried from the stored status, which finds the same transition again:
// an event sent before the failed write was sent twice.
func TestTransitionEventsWaitForTheirWrite(t *testing.T) {
	run := &v1alpha1.CanaryRun{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "run"}}
	run.Status.Phase = v1alpha1.PhaseWatching
	conflict := true
	c := fake.NewClientBuilder().WithScheme(kubetest.NewScheme()).WithStatusSubresource(&v1alpha1.CanaryRun{}).WithObjects(run).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			if conflict {
				return apierrors.NewConflict(schema.GroupResource{Group: "ragcanary.dev", Resource: "canaryruns"}, obj.GetName(), nil)
			}
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		}}).Build()
	rec := events.NewFakeRecorder(10)
	r := &CanaryRunReconciler{Client: c, APIReader: c, Recorder: rec}
	sighting := probe.Snapshot{IsolationViolations: 1, SightingTotal: 1,
		Sightings: []v1alpha1.SentinelSighting{{Persona: "mallory", Surface: v1alpha1.SurfaceSearch}}}

	// The stored run was changed by another writer: the write conflicts
	// and the reconcile ends.
	var stored v1alpha1.CanaryRun
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(run), &stored); err != nil {
		t.Fatal(err)
	}
	rc := &runCtx{run: stored.DeepCopy(), before: stored.DeepCopy(), key: types.NamespacedName{Namespace: "ns", Name: "run"}}
	stored.Status.Message = "changed by another writer"
	if err := c.Status().Update(context.Background(), &stored); err != nil {
		t.Fatal(err)
	}
	r.recordSightings(rc, sighting)
	if err := r.persist(context.Background(), rc); err == nil {
		t.Fatal("the write did not conflict")
	}
	if n := len(rec.Events); n != 0 {
		t.Fatalf("%d events sent for a transition whose write failed: %v", n, <-rec.Events)
	}

	// The retry finds the transition again and stores it: one event each.
	conflict = false
	if err := c.Get(context.Background(), rc.key, &stored); err != nil {
		t.Fatal(err)
	}
	rc = &runCtx{run: stored.DeepCopy(), before: stored.DeepCopy(), key: rc.key}
	r.recordSightings(rc, sighting)
	if err := r.persist(context.Background(), rc); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Events); n != 2 {
		t.Fatalf("%d events after the stored write, want the sighting's and the violation's", n)
	}
}
