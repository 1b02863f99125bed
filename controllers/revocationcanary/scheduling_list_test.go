package revocationcanary

import (
	"context"
	"errors"
	"testing"

	"github.com/ragcanary/ragcanary/internal/dev/testutil/kubetest"

	"github.com/ragcanary/ragcanary/controllers/shared"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// TestListRunsFallsBackUntilTheCacheShowsTheCreatedRun checks the one rule
// that lets runs be read from the cache: while a run this process created is
// missing from the cache, the API server is asked instead. The cache and the
// API server are two fake clients holding different objects, so the test
// sees which one answered.
func TestListRunsFallsBackUntilTheCacheShowsTheCreatedRun(t *testing.T) {
	ctx := context.Background()
	canary := &v1alpha1.RevocationCanary{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: types.UID("canary-uid")}}
	run := func(name string) *v1alpha1.CanaryRun {
		r := &v1alpha1.CanaryRun{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			Labels: map[string]string{v1alpha1.LabelCanary: "c"}}}
		yes := true
		r.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "RevocationCanary",
			Name: "c", UID: canary.UID, Controller: &yes}}
		return r
	}
	byOwner := func(o client.Object) []string {
		if ref := metav1.GetControllerOf(o); ref != nil {
			return []string{string(ref.UID)}
		}
		return nil
	}
	cache := fake.NewClientBuilder().WithScheme(kubetest.NewScheme()).WithIndex(&v1alpha1.CanaryRun{}, shared.RunOwnerIndex, byOwner).Build()
	api := fake.NewClientBuilder().WithScheme(kubetest.NewScheme()).WithObjects(run("c-1")).Build()
	p := shared.ParentReconciler{Client: cache, APIReader: api, Created: shared.NewCreatedRuns()}

	names := func() []string {
		t.Helper()
		runs, err := p.ListRuns(ctx, &v1alpha1.CanaryRunList{}, canary, v1alpha1.LabelCanary, describeCanaryRun)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range runs.Active {
			out = append(out, r.Obj.GetName())
		}
		return out
	}

	if got := names(); len(got) != 0 {
		t.Fatalf("nothing created by this process: runs must come from the (empty) cache, got %v", got)
	}
	p.Created.Expect(canary.UID, "c-1")
	if got := names(); len(got) != 1 || got[0] != "c-1" {
		t.Fatalf("created run missing from the cache: runs must come from the API server, got %v", got)
	}
	if _, pending := p.Created.Pending(canary.UID); !pending {
		t.Fatal("the cache has not shown c-1 yet, the expectation must stay")
	}
	if err := cache.Create(ctx, run("c-1")); err != nil {
		t.Fatal(err)
	}
	if got := names(); len(got) != 1 || got[0] != "c-1" {
		t.Fatalf("cache shows c-1: got %v", got)
	}
	if _, pending := p.Created.Pending(canary.UID); pending {
		t.Fatal("the cache showed c-1: the expectation must be forgotten")
	}

	// A run deleted before the cache saw it is not waited for forever.
	p.Created.Expect(canary.UID, "c-gone")
	if got := names(); len(got) != 1 {
		t.Fatalf("API server answered: got %v", got)
	}
	if _, pending := p.Created.Pending(canary.UID); pending {
		t.Fatal("c-gone exists nowhere: the expectation must be forgotten")
	}

	// A cache that fails to answer is an error, never "no runs", and the
	// expectation stays.
	failing := fake.NewClientBuilder().WithScheme(kubetest.NewScheme()).WithIndex(&v1alpha1.CanaryRun{}, shared.RunOwnerIndex, byOwner).
		WithInterceptorFuncs(interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return errors.New("cache not synced")
		}}).Build()
	p.Client = failing
	p.Created.Expect(canary.UID, "c-1")
	if _, err := p.ListRuns(ctx, &v1alpha1.CanaryRunList{}, canary, v1alpha1.LabelCanary, describeCanaryRun); err == nil {
		t.Fatal("a failing cache read must be an error")
	}
	if want, pending := p.Created.Pending(canary.UID); !pending || want != "c-1" {
		t.Fatalf("after a failed read the expectation must stay: got %q, %v", want, pending)
	}
	p.Client = cache

	// Without a record of created runs, every list asks the API server.
	if err := api.Create(ctx, run("c-2")); err != nil {
		t.Fatal(err)
	}
	p.Created = nil
	if got := names(); len(got) != 2 {
		t.Fatalf("nil Created: runs must come from the API server, got %v", got)
	}
}
