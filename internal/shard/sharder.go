package shard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
	"unique"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
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
	// stores are the cache's stores by kind, read directly (list).
	stores map[schema.GroupVersionKind]toolscache.Store
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
	informers, err := s.informers()
	if err != nil {
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
	synced := make([]toolscache.InformerSynced, len(informers))
	for i, inf := range informers {
		go inf.RunWithContext(ctx)
		synced[i] = inf.HasSynced
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), synced...) {
		return failure(ctx)
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
		started := s.Clock.Now()
		next, err := s.Pass(ctx)
		if err != nil {
			logger.V(1).Info("sharding pass incomplete, retrying", "error", err.Error())
			next = min(next, retryAfter)
		}
		wait = min(next, s.Resync)
		if err := s.pause(ctx, started); err != nil {
			return err
		}
	}
}

// passGap is the least time from one pass's start to the next's. Every
// create kicks a pass, and each pass visits every sharded object: without
// a gap a setup creating thousands of canaries ran passes back to back.
// With it, one pass assigns all the creates of the gap, and a new object
// waits for its owner at most this much longer.
const passGap = 250 * time.Millisecond

// pause waits until passGap has passed since started; kicks arriving
// meanwhile are kept for the next pass.
func (s *Sharder) pause(ctx context.Context, started time.Time) error {
	rest := passGap - s.Clock.Since(started)
	if rest <= 0 {
		return nil
	}
	t := s.Clock.NewTimer(rest)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return failure(ctx)
	case <-t.C():
		return nil
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

// informers builds the sharder's watches of every sharded kind: metadata
// only, trimmed by keepShardFields, each kind's store kept for list. They
// are client-go informers, not a controller-runtime cache, so a pass can
// read the stored objects without copying them.
func (s *Sharder) informers() ([]toolscache.SharedIndexInformer, error) {
	mc, err := metadata.NewForConfig(s.Config)
	if err != nil {
		return nil, err
	}
	mapper, err := s.mapper()
	if err != nil {
		return nil, err
	}
	kick := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.Kick() },
		DeleteFunc: func(any) { s.Kick() },
		UpdateFunc: func(o, n any) {
			if shardLabelsChanged(o, n) {
				s.Kick()
			}
		},
	}
	s.stores = map[schema.GroupVersionKind]toolscache.Store{}
	var out []toolscache.SharedIndexInformer
	for _, k := range s.Kinds {
		for _, gvk := range []schema.GroupVersionKind{k.Parent, k.Child} {
			mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				return nil, err
			}
			inf := metadatainformer.NewFilteredMetadataInformer(mc, mapping.Resource, s.WatchNamespace, 0, toolscache.Indexers{}, nil).Informer()
			if err := inf.SetTransform(keepShardFields); err != nil {
				return nil, err
			}
			if _, err := inf.AddEventHandler(kick); err != nil {
				return nil, err
			}
			s.stores[gvk] = inf.GetStore()
			out = append(out, inf)
		}
	}
	return out, nil
}

// mapper is Mapper, or one asking the API server when none was given.
func (s *Sharder) mapper() (meta.RESTMapper, error) {
	if s.Mapper != nil {
		return s.Mapper, nil
	}
	hc, err := rest.HTTPClientFor(s.Config)
	if err != nil {
		return nil, err
	}
	return apiutil.NewDynamicRESTMapper(s.Config, hc)
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
	kept := &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: intern(m.APIVersion), Kind: intern(m.Kind)},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: intern(m.Namespace), Name: m.Name, UID: m.UID, ResourceVersion: m.ResourceVersion,
			DeletionTimestamp: m.DeletionTimestamp,
		},
	}
	for _, l := range []string{LabelOwner, LabelDrain} {
		if v, ok := m.Labels[l]; ok {
			if kept.Labels == nil {
				kept.Labels = make(map[string]string, 1)
			}
			kept.Labels[l] = intern(v)
		}
	}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil {
		r := *ref
		r.APIVersion, r.Kind = intern(r.APIVersion), intern(r.Kind)
		kept.OwnerReferences = []metav1.OwnerReference{r}
	}
	return kept, nil
}

// intern shares the text of strings that repeat over thousands of cached
// objects (kinds, namespaces, replica names) instead of keeping a decoded
// copy in each.
func intern(s string) string { return unique.Make(s).Value() }

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
		units, err := s.units(k)
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
// run without a sharded controller. Its objects are the sharder cache's
// own: read only.
type unit struct {
	key string
	// head is the object the key names; children are its runs.
	head     member
	children []member
}

// member is one object of a unit and its kind, which the cached metadata
// does not carry reliably and a patch needs.
type member struct {
	obj  *metav1.PartialObjectMetadata
	kind schema.GroupVersionKind
}

func (s *Sharder) units(k Kind) ([]unit, error) {
	parents, err := s.list(k.Parent)
	if err != nil {
		return nil, err
	}
	children, err := s.list(k.Child)
	if err != nil {
		return nil, err
	}
	byUID := make(map[types.UID]int, len(parents))
	units := make([]unit, 0, len(parents))
	for _, p := range parents {
		byUID[p.UID] = len(units)
		units = append(units, unit{key: p.Namespace + "/" + p.Name, head: member{p, k.Parent}})
	}
	for _, c := range children {
		ref := metav1.GetControllerOfNoCopy(c)
		if ref != nil && ref.Kind == k.Parent.Kind {
			if i, ok := byUID[ref.UID]; ok {
				units[i].children = append(units[i].children, member{c, k.Child})
				continue
			}
		}
		units = append(units, unit{key: c.Namespace + "/" + c.Name, head: member{c, k.Child}})
	}
	return units, nil
}

// list returns the cached objects of kind gvk themselves, not copies:
// every pass lists every sharded object, and passes run on every create,
// so copying them all each time was most of what the leader allocated
// (make bench-shards: 1 GB more than a follower over a 3,000-canary
// setup; at 9,000 the setup's passes also cost much of its CPU). Callers
// only read them; patch writes on a copy.
func (s *Sharder) list(gvk schema.GroupVersionKind) ([]*metav1.PartialObjectMetadata, error) {
	store, ok := s.stores[gvk]
	if !ok {
		return nil, fmt.Errorf("shard: %s is not a sharded kind", gvk.Kind)
	}
	items := store.List()
	out := make([]*metav1.PartialObjectMetadata, 0, len(items))
	for _, it := range items {
		if m, ok := it.(*metav1.PartialObjectMetadata); ok {
			out = append(out, m)
		}
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
	settled := true
	for _, m := range append([]member{u.head}, u.children...) {
		ok, err := s.release(ctx, m, want, alive)
		if err != nil {
			return err
		}
		settled = settled && ok
	}
	if !settled {
		return nil
	}
	for _, m := range append(u.children, u.head) {
		owner := m.obj.Labels[LabelOwner]
		if owner == want {
			continue
		}
		if owner != "" {
			log.FromContext(ctx).Info("moving an object away from a replica without a live shard lease",
				"object", m.obj.Namespace+"/"+m.obj.Name, "kind", m.kind.Kind, "from", owner, "to", want)
		}
		if err := s.patch(ctx, m, map[string]*string{LabelOwner: ptr.To(want), LabelDrain: nil}); err != nil {
			return err
		}
	}
	return nil
}

// release reports whether o has no live owner in the way of want, asking
// a live owner to drain it.
func (s *Sharder) release(ctx context.Context, m member, want string, alive map[string]bool) (bool, error) {
	owner := m.obj.Labels[LabelOwner]
	draining := m.obj.Labels[LabelDrain] == "true"
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
		return false, s.patch(ctx, m, map[string]*string{LabelDrain: ptr.To("true")})
	}
}

// patch changes a member's labels on a copy: the cached object is shared.
// A pass patches an object at most once (a drain request leaves its unit
// unsettled until a later pass), so the new version is not needed here;
// the cache sees it through the watch.
func (s *Sharder) patch(ctx context.Context, m member, change map[string]*string) error {
	c := m.obj.DeepCopy()
	c.SetGroupVersionKind(m.kind)
	err := patchLabels(ctx, s.Client, c, change)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
