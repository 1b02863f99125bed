package shared

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/metrics"
	"github.com/ragcanary/ragcanary/internal/shard"
)

// ShardingOptions configure the replicas' split of canaries and suites.
type ShardingOptions struct {
	Replica shard.Replica
	// Namespace holds the shard Leases: the operator's namespace.
	Namespace string
	// WatchNamespace, when set, is the only namespace sharded.
	WatchNamespace string
	// LeaseDuration and RenewInterval default to shard.DefaultLeaseDuration
	// and shard.DefaultRenewInterval.
	LeaseDuration time.Duration
	RenewInterval time.Duration
	// Drain bounds how long a stopping replica waits for its share to move
	// to the others after deleting its Lease; zero lets the Lease expire.
	Drain time.Duration
}

// ShardedCache limits the cache of the sharded kinds and their runs to the
// replica's own objects; without sharding it returns opts unchanged.
func ShardedCache(opts cache.Options, r shard.Replica) cache.Options {
	return r.CacheOptions(opts, &v1alpha1.RevocationCanary{}, &v1alpha1.CanaryRun{},
		&v1alpha1.EvalSuite{}, &v1alpha1.SuiteRun{})
}

// The sharder labels suites with their owner, and a draining suite's owner
// removes the labels; the canary and run kinds are patched already.
// +kubebuilder:rbac:groups=ragcanary.dev,resources=evalsuites,verbs=patch

// SetupSharding adds the replica's Lease keeper and Lease watch (every
// replica) and the sharder (the leader only) to the manager. None uses the
// manager's cache, which must not start cluster-wide Lease or canary
// informers: the keeper and the sharder write with an uncached client, the
// watch caches only the shard Leases of the operator's namespace, and the
// sharder keeps its own index of every sharded object's shard labels.
func SetupSharding(mgr ctrl.Manager, opts ShardingOptions) error {
	if err := shard.CheckName(opts.Replica.Name); err != nil {
		return err
	}
	c, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return err
	}
	canary := v1alpha1.GroupVersion.WithKind("RevocationCanary")
	kinds := []shard.Kind{
		{Parent: canary, Child: v1alpha1.GroupVersion.WithKind("CanaryRun")},
		{Parent: v1alpha1.GroupVersion.WithKind("EvalSuite"), Child: v1alpha1.GroupVersion.WithKind("SuiteRun")},
	}
	// Every replica watches the shard Leases, so a replica elected after
	// the leader died knows how long the dead one has not renewed.
	leases := &shard.LeaseWatch{Config: mgr.GetConfig(), Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		Namespace: opts.Namespace, LeaseDuration: opts.LeaseDuration}
	if err := mgr.Add(leases); err != nil {
		return err
	}
	keeper := &shard.Keeper{Client: c, Namespace: opts.Namespace, Replica: opts.Replica.Name,
		LeaseDuration: opts.LeaseDuration, RenewInterval: opts.RenewInterval,
		Drain: opts.Drain, Kinds: kinds, Leases: leases}
	if err := mgr.Add(keeper); err != nil {
		return err
	}
	sharder := &shard.Sharder{
		Config: mgr.GetConfig(), Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), Client: c,
		Namespace: opts.Namespace, WatchNamespace: opts.WatchNamespace, LeaseDuration: opts.LeaseDuration,
		Leases: leases, Kinds: kinds,
	}
	if err := mgr.Add(sharder); err != nil {
		return err
	}
	// A canary no replica owns has no series on any replica; the leader's
	// sharder exports it, so the stale-canary alert still sees it.
	return mgr.Add(metrics.NewUnownedCanaryCollector(func(ctx context.Context) ([]types.NamespacedName, error) {
		return sharder.Unowned(ctx, canary)
	}))
}

// everyReplica runs a leader-only runnable on every replica: with
// sharding, each replica probes and collects for its own share.
type everyReplica struct{ manager.Runnable }

func (everyReplica) NeedLeaderElection() bool { return false }

// AddRunnable adds r to the manager, on every replica when sharded.
func AddRunnable(mgr ctrl.Manager, opts Options, r manager.Runnable) error {
	if opts.Shard.Sharded {
		r = everyReplica{r}
	}
	return mgr.Add(r)
}

// NeedLeader says whether the canary and suite controllers need the
// leader: not when sharded, where every replica reconciles its share; nil
// keeps the manager's default (the leader only).
func NeedLeader(r shard.Replica) *bool {
	if !r.Sharded {
		return nil
	}
	f := false
	return &f
}

// DrainAsked passes updates that ask the owner to let an object go: the
// controllers' other predicates filter label changes out.
func DrainAsked() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectNew.GetLabels()[v1alpha1.LabelShardDrain] == "true" && e.ObjectOld.GetLabels()[v1alpha1.LabelShardDrain] != "true"
		},
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// handOverWait paces a draining parent's checks for its runs leaving.
const handOverWait = 250 * time.Millisecond

// handOver lets a draining canary or suite go once none of its runs is
// left here (each run hands itself over, stopping its probes first), so
// nothing here writes its series again after they are forgotten; the new
// owner exports them again.
func (p ParentReconciler) HandOver(ctx context.Context, obj client.Object, runs client.ObjectList,
	describe func(client.Object) ChildRun, forget func(namespace, name string)) (ctrl.Result, error) {
	left, err := cachedChildRuns(ctx, p.Client, runs, obj, describe)
	if err != nil {
		return ctrl.Result{}, err
	}
	if n := len(left.Active) + len(left.Finished); n > 0 {
		// A run leaving is a delete in this cache, which the parent's
		// run predicate does not pass: look again shortly.
		return ctrl.Result{RequeueAfter: handOverWait}, nil
	}
	forget(obj.GetNamespace(), obj.GetName())
	log.FromContext(ctx).Info("handing over to another replica")
	return ctrl.Result{}, client.IgnoreNotFound(shard.Release(ctx, p.Client, obj))
}
