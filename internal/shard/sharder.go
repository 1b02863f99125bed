package shard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
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
// replicas changes. It runs on the leader only, with its own watches of
// every sharded object and run, metadata only, kept as the few fields a
// pass reads (index; the replicas' caches hold only their share).
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
	// synced is closed once every index holds its first full list.
	synced chan struct{}
	// indexes hold what the sharder knows of each sharded kind.
	indexes map[schema.GroupVersionKind]*index
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
	reflectors, err := s.reflectors()
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
	for _, r := range reflectors {
		go r.RunWithContext(ctx)
	}
	for _, x := range s.indexes {
		select {
		case <-x.synced:
		case <-ctx.Done():
			return failure(ctx)
		}
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

// reflectors build the sharder's watches of every sharded kind: metadata
// only, each into an index of what a pass reads, not a cache of objects.
func (s *Sharder) reflectors() ([]*toolscache.Reflector, error) {
	mc, err := metadata.NewForConfig(s.Config)
	if err != nil {
		return nil, err
	}
	mapper, err := s.mapper()
	if err != nil {
		return nil, err
	}
	s.indexes = map[schema.GroupVersionKind]*index{}
	var out []*toolscache.Reflector
	for _, k := range s.Kinds {
		for _, gvk := range []schema.GroupVersionKind{k.Parent, k.Child} {
			mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				return nil, err
			}
			x := newIndex(k.Parent.Kind, s.Kick)
			s.indexes[gvk] = x
			out = append(out, x.reflector(mc, mapping.Resource, s.WatchNamespace))
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
	for i := range s.Kinds {
		units, err := s.unsettled(&s.Kinds[i], replicas)
		if err != nil {
			return retryAfter, err
		}
		all = append(all, units...)
	}
	errs := settleAll(all, settleWorkers, func(u unit) error {
		return s.settle(ctx, u, alive)
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
// run without a sharded controller, and the replica it should be with.
type unit struct {
	key  types.NamespacedName
	want string
	// head is the object the key names; children are its runs.
	head     member
	children []member
}

// member is one object of a unit and its kind, which a patch needs.
type member struct {
	keyed
	kind *schema.GroupVersionKind
}

// unsettled returns the units of kind k that are not yet where the ring
// wants them: an object with another owner, or asked to drain. A pass
// follows creates (at most one per passGap) and visits every sharded
// object, so a settled unit costs a hash and a map entry, nothing more:
// building every unit each pass made the leader's passes its largest
// allocation during a setup (make bench-shards). Both indexes are
// read-locked while it runs.
func (s *Sharder) unsettled(k *Kind, replicas []string) ([]unit, error) {
	px, cx := s.indexes[k.Parent], s.indexes[k.Child]
	if px == nil || cx == nil {
		return nil, fmt.Errorf("shard: %s is not a sharded kind", k.Parent.Kind)
	}
	px.mu.RLock()
	defer px.mu.RUnlock()
	cx.mu.RLock()
	defer cx.mu.RUnlock()
	wants := make(map[id]string, len(px.entries))
	dirty := map[id]bool{}
	for key, e := range px.entries {
		want := Assign(key.String(), replicas)
		wants[e.uid] = want
		if !e.at(want) {
			dirty[e.uid] = true
		}
	}
	var out []unit
	for key, e := range cx.entries {
		if want, ok := wants[e.controller]; ok && e.controller != (id{}) {
			if !e.at(want) {
				dirty[e.controller] = true
			}
			continue
		}
		if want := Assign(key.String(), replicas); !e.at(want) {
			out = append(out, unit{key: key, want: want, head: member{keyed{key, e}, &k.Child}})
		}
	}
	if len(dirty) == 0 {
		return out, nil
	}
	byUID := make(map[id]int, len(dirty))
	for key, e := range px.entries {
		if dirty[e.uid] {
			byUID[e.uid] = len(out)
			out = append(out, unit{key: key, want: wants[e.uid], head: member{keyed{key, e}, &k.Parent}})
		}
	}
	for key, e := range cx.entries {
		if i, ok := byUID[e.controller]; ok && e.controller != (id{}) {
			out[i].children = append(out[i].children, member{keyed{key, e}, &k.Child})
		}
	}
	return out, nil
}

// at says whether the entry is with want and not asked to leave.
func (e entry) at(want string) bool { return e.owner == want && !e.drain }

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
// it before its Lease could be seen expired; a replica that left stopped
// its work before it deleted its Lease), and at thousands of objects
// those writes were most of the API server's work in a hand-over.
func (s *Sharder) settle(ctx context.Context, u unit, alive map[string]bool) error {
	want := u.want
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
		if m.owner == want {
			continue
		}
		if m.owner != "" {
			log.FromContext(ctx).Info("moving an object away from a replica without a live shard lease",
				"object", m.key.String(), "kind", m.kind.Kind, "from", m.owner, "to", want)
		}
		if err := s.patch(ctx, m, map[string]*string{v1alpha1.LabelShardOwner: ptr.To(want), v1alpha1.LabelShardDrain: nil}); err != nil {
			return err
		}
	}
	return nil
}

// release reports whether o has no live owner in the way of want, asking
// a live owner to drain it.
func (s *Sharder) release(ctx context.Context, m member, want string, alive map[string]bool) (bool, error) {
	owner, draining := m.owner, m.drain
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
		return false, s.patch(ctx, m, map[string]*string{v1alpha1.LabelShardDrain: ptr.To("true")})
	}
}

// patch changes a member's shard labels, conditional on the version the
// sharder saw. A pass patches an object at most once (a drain request
// leaves its unit unsettled until a later pass), and the index sees the
// new version through the watch.
func (s *Sharder) patch(ctx context.Context, m member, change map[string]*string) error {
	o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace: m.key.Namespace, Name: m.key.Name, ResourceVersion: m.rv,
		Labels: m.labels(),
	}}
	o.SetGroupVersionKind(*m.kind)
	err := patchLabels(ctx, s.Client, o, change)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// labels are the shard labels the entry recorded, the base a patch is
// computed from.
func (e entry) labels() map[string]string {
	l := map[string]string{}
	if e.owner != "" {
		l[v1alpha1.LabelShardOwner] = e.owner
	}
	if e.drain {
		l[v1alpha1.LabelShardDrain] = "true"
	}
	return l
}
