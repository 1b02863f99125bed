package shard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Kind is one sharded kind and the kind of its runs. A run controlled by
// an object of Parent follows its parent; a run without such a controller
// (made by hand) is sharded on its own.
type Kind struct {
	Parent schema.GroupVersionKind
	Child  schema.GroupVersionKind
}

// DefaultResync is how often the sharder re-checks everything without an
// event, a safety net for a missed patch.
const DefaultResync = time.Minute

// retryAfter paces passes after a failed patch (most often a conflict with
// a write the sharder's cache had not seen).
const retryAfter = time.Second

// Sharder assigns objects to replicas and moves them when the set of live
// replicas changes. It runs on the leader only, with its own cache: every
// sharded object and run as metadata only (the replicas' caches hold only
// their share), and the shard Leases of its namespace.
type Sharder struct {
	Config *rest.Config
	Scheme *runtime.Scheme
	Mapper meta.RESTMapper
	// Client patches labels; uncached.
	Client client.Client
	// Namespace holds the shard Leases.
	Namespace string
	// WatchNamespace, when set, limits the sharded objects to it.
	WatchNamespace string
	Kinds          []Kind
	// LeaseDuration is how long a Lease lives without a renewal the
	// sharder observes; DefaultLeaseDuration when zero.
	LeaseDuration time.Duration
	Resync        time.Duration
	Clock         clock.WithTicker
	// Leases tells which replicas are live. The manager runs it on every
	// replica (see LeaseWatch); when nil the sharder watches the Leases
	// itself, from its own start.
	Leases *LeaseWatch

	once sync.Once
	kick chan struct{}
	// ownLeases: Leases was made here and is started with the sharder.
	ownLeases bool
	// synced is closed once cache holds every watched object.
	synced chan struct{}
	cache  cache.Cache
}

// NeedLeaderElection is true: one sharder decides for everyone.
func (s *Sharder) NeedLeaderElection() bool { return true }

// init fills in the defaults once, so Unowned may be called before Start.
func (s *Sharder) init() {
	s.once.Do(func() {
		if s.LeaseDuration <= 0 {
			s.LeaseDuration = DefaultLeaseDuration
		}
		if s.Resync <= 0 {
			s.Resync = DefaultResync
		}
		if s.Clock == nil {
			s.Clock = clock.RealClock{}
		}
		s.kick = make(chan struct{}, 1)
		s.synced = make(chan struct{})
		if s.Leases == nil {
			s.Leases = &LeaseWatch{Config: s.Config, Scheme: s.Scheme, Mapper: s.Mapper,
				Namespace: s.Namespace, LeaseDuration: s.LeaseDuration, Clock: s.Clock}
			s.ownLeases = true
		}
		s.Leases.OnChange(s.Kick)
	})
}

// Start runs passes until ctx ends: on an object appearing, disappearing or
// changing labels, on a Lease appearing or disappearing, when the next
// live Lease would expire, and every Resync.
func (s *Sharder) Start(ctx context.Context) error {
	s.init()
	c, err := s.newCache()
	if err != nil {
		return err
	}
	s.cache = c
	if err := s.watch(ctx); err != nil {
		return err
	}
	if s.ownLeases {
		// Its own Lease watch stops with the sharder, and its failure stops
		// the sharder instead of leaving passes waiting for it.
		var stop context.CancelCauseFunc
		ctx, stop = context.WithCancelCause(ctx)
		defer stop(nil)
		go func() {
			if err := s.Leases.Start(ctx); err != nil {
				stop(err)
			}
		}()
	}
	cacheDone := make(chan error, 1)
	go func() { cacheDone <- c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		if ctx.Err() != nil {
			return failure(ctx)
		}
		return fmt.Errorf("shard: the sharder's cache did not sync: %w", <-cacheDone)
	}
	close(s.synced)
	logger := log.FromContext(ctx).WithName("sharder")
	wait := time.Duration(0)
	for {
		timer := s.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return failure(ctx)
		case <-s.kick:
		case <-timer.C():
		}
		timer.Stop()
		next, err := s.Pass(ctx)
		if err != nil {
			logger.V(1).Info("sharding pass incomplete, retrying", "error", err.Error())
			next = min(next, retryAfter)
		}
		wait = min(next, s.Resync)
	}
}

// failure is what Start returns once ctx ended: why, when its own Lease
// watch ended it, else nothing (a stop).
func failure(ctx context.Context) error {
	if err := context.Cause(ctx); !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

func (s *Sharder) newCache() (cache.Cache, error) {
	opts := cache.Options{
		Scheme: s.Scheme, Mapper: s.Mapper,
		DefaultTransform: keepShardFields,
	}
	if s.WatchNamespace != "" {
		opts.DefaultNamespaces = map[string]cache.Config{s.WatchNamespace: {}}
	}
	return cache.New(s.Config, opts)
}

// watch registers the event handlers that start passes.
func (s *Sharder) watch(ctx context.Context) error {
	for _, k := range s.Kinds {
		for _, gvk := range []schema.GroupVersionKind{k.Parent, k.Child} {
			inf, err := s.cache.GetInformer(ctx, metadataOf(gvk))
			if err != nil {
				return err
			}
			if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
				AddFunc:    func(any) { s.Kick() },
				DeleteFunc: func(any) { s.Kick() },
				UpdateFunc: func(o, n any) {
					if shardLabelsChanged(o, n) {
						s.Kick()
					}
				},
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// Kick asks for a pass soon; passes asked for while one runs coalesce.
func (s *Sharder) Kick() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func shardLabelsChanged(o, n any) bool {
	a, ok1 := o.(metav1.Object)
	b, ok2 := n.(metav1.Object)
	if !ok1 || !ok2 {
		return true
	}
	for _, l := range []string{LabelOwner, LabelDrain} {
		if a.GetLabels()[l] != b.GetLabels()[l] {
			return true
		}
	}
	return false
}

// keepShardFields keeps of a cached object only what a pass reads: its
// identity, version (the patches' optimistic lock), deletion, controller
// and shard labels. The sharder caches every sharded object and run, which
// the other replicas do not hold (the leader held about 75 MiB more than a
// follower at 9,000 canaries, make bench-shards); annotations (kubectl's
// last-applied copy of the whole spec among them), other labels,
// finalizers and managedFields are dropped. Patches are merge patches of
// the shard labels alone, so nothing dropped is written back.
func keepShardFields(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	kept := &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Namespace: m.Namespace, Name: m.Name, UID: m.UID, ResourceVersion: m.ResourceVersion,
		DeletionTimestamp: m.DeletionTimestamp,
	}}
	for _, l := range []string{LabelOwner, LabelDrain} {
		if v, ok := m.Labels[l]; ok {
			if kept.Labels == nil {
				kept.Labels = map[string]string{}
			}
			kept.Labels[l] = v
		}
	}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil {
		kept.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	return kept, nil
}

func metadataOf(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	return m
}

// live returns the replicas whose Lease is live, sorted, and how long
// until the first of them expires.
func (s *Sharder) live(ctx context.Context) ([]string, time.Duration, error) {
	return s.Leases.Live(ctx, s.Resync)
}

// Pass brings every object one step closer to its owner on the current
// ring. It returns when the next pass is due without an event.
func (s *Sharder) Pass(ctx context.Context) (time.Duration, error) {
	replicas, next, err := s.live(ctx)
	if err != nil {
		return retryAfter, err
	}
	alive := aliveSet(replicas)
	var all []unit
	for _, k := range s.Kinds {
		units, err := s.units(ctx, k)
		if err != nil {
			return retryAfter, err
		}
		all = append(all, units...)
	}
	errs := settleAll(all, settleWorkers, func(u unit) error {
		return s.settle(ctx, u, Assign(u.key, replicas), alive)
	})
	if len(errs) > 0 {
		return retryAfter, fmt.Errorf("%d objects not settled, first: %w", len(errs), errs[0])
	}
	return next, nil
}

// settleWorkers is how many units a pass settles at once. Units are
// independent (each step is a patch of one object under an optimistic
// lock), and one at a time a dead replica's 3,000 canaries took minutes to
// move (make bench-shards): each step waits for the API server's reply.
const settleWorkers = 16

// settleAll runs settle for every unit, workers at a time, and returns
// the errors in no particular order.
func settleAll(units []unit, workers int, settle func(unit) error) []error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	next := make(chan unit)
	for range min(workers, len(units)) {
		wg.Go(func() {
			for u := range next {
				if err := settle(u); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for _, u := range units {
		next <- u
	}
	close(next)
	wg.Wait()
	return errs
}

// unit is what moves together: an object and the runs it controls, or a
// run without a sharded controller.
type unit struct {
	key string
	// head is the object the key names; children are its runs.
	head     *metav1.PartialObjectMetadata
	children []*metav1.PartialObjectMetadata
}

func (s *Sharder) units(ctx context.Context, k Kind) ([]unit, error) {
	parents, err := s.list(ctx, k.Parent)
	if err != nil {
		return nil, err
	}
	children, err := s.list(ctx, k.Child)
	if err != nil {
		return nil, err
	}
	byUID := map[types.UID]int{}
	units := make([]unit, 0, len(parents))
	for _, p := range parents {
		byUID[p.UID] = len(units)
		units = append(units, unit{key: p.Namespace + "/" + p.Name, head: p})
	}
	for _, c := range children {
		ref := metav1.GetControllerOf(c)
		if ref != nil && ref.Kind == k.Parent.Kind {
			if i, ok := byUID[ref.UID]; ok {
				units[i].children = append(units[i].children, c)
				continue
			}
		}
		units = append(units, unit{key: c.Namespace + "/" + c.Name, head: c})
	}
	return units, nil
}

func (s *Sharder) list(ctx context.Context, gvk schema.GroupVersionKind) ([]*metav1.PartialObjectMetadata, error) {
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	// Every pass lists every sharded object, and passes run on every
	// create: copying all of them each time cost the setup much of its CPU
	// (make bench-shards, 9,000 canaries: 17m42s before, 11m28s after).
	// The items share their maps with the cache, so they are read only;
	// patch writes on a copy.
	if err := s.cache.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := make([]*metav1.PartialObjectMetadata, len(list.Items))
	for i := range list.Items {
		obj := &list.Items[i]
		obj.SetGroupVersionKind(gvk)
		out[i] = obj
	}
	return out, nil
}

// settle takes one step for a unit towards owner want:
//   - an object owned by a live replica other than want is asked to drain,
//     and the unit waits until its owner released it;
//   - once nothing in the unit has a live owner in the way, the runs get
//     want first and the head last, so a new owner sees the runs before it
//     reconciles the head and never schedules a run that already exists.
//
// An object owned by a replica without a live Lease is taken over in the
// same patch that gives it to want: a release first would add a write
// nobody waits for (the dead owner cannot answer, and its Keeper stopped
// it before its Lease could be seen expired), and at thousands of objects
// those writes were most of the API server's work in a hand-over.
func (s *Sharder) settle(ctx context.Context, u unit, want string, alive map[string]bool) error {
	if want == "" {
		return nil
	}
	objs := append([]*metav1.PartialObjectMetadata{u.head}, u.children...)
	settled := true
	for _, o := range objs {
		ok, err := s.release(ctx, o, want, alive)
		if err != nil {
			return err
		}
		settled = settled && ok
	}
	if !settled {
		return nil
	}
	for _, o := range append(u.children, u.head) {
		owner := o.Labels[LabelOwner]
		if owner == want {
			continue
		}
		if owner != "" {
			log.FromContext(ctx).Info("moving an object away from a replica without a live shard lease",
				"object", o.Namespace+"/"+o.Name, "kind", o.Kind, "from", owner, "to", want)
		}
		if err := s.patch(ctx, o, map[string]*string{LabelOwner: ptr.To(want), LabelDrain: nil}); err != nil {
			return err
		}
	}
	return nil
}

// release reports whether o has no live owner in the way of want, asking
// a live owner to drain it.
func (s *Sharder) release(ctx context.Context, o *metav1.PartialObjectMetadata, want string, alive map[string]bool) (bool, error) {
	owner := o.Labels[LabelOwner]
	draining := o.Labels[LabelDrain] == "true"
	switch {
	case owner == "" || !alive[owner]:
		// Nobody is working on it; a drain label left behind (by a release
		// racing a drain request, or by a replica that died draining) goes
		// with the assignment.
		return true, nil
	case owner == want:
		// Asked to drain before the ring changed back: the owner lets it
		// go and gets it again.
		return !draining, nil
	case draining:
		return false, nil
	default:
		return false, s.patch(ctx, o, map[string]*string{LabelDrain: ptr.To("true")})
	}
}

// patch changes o's labels on a copy, since o may share its maps with the
// sharder's cache, and takes the copy's new version.
func (s *Sharder) patch(ctx context.Context, o *metav1.PartialObjectMetadata, change map[string]*string) error {
	c := o.DeepCopy()
	err := patchLabels(ctx, s.Client, c, change)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		*o = *c
	}
	return err
}
