package shard

import (
	"context"
	"fmt"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Lease timing defaults. A dead replica's share moves within
// DefaultLeaseDuration plus one sharder pass; a renewal may fail twice
// before the replica stops itself. A stopped replica's share moves as soon
// as it deleted its Lease; it waits at most DefaultDrain for that.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewInterval = 5 * time.Second
	DefaultDrain         = 10 * time.Second
)

// Keeper holds the replica's shard Lease: it creates it and renews it every
// RenewInterval. Every replica runs one, leader or not. When it has not
// renewed for LeaseDuration-RenewInterval, Start returns an error, which
// stops the manager: the replica then stops probing before the sharder,
// which declares a Lease dead only after a full LeaseDuration without a
// renewal, hands its objects to others.
//
// When the manager stops (SIGTERM) and Drain is set, the replica leaves
// instead of letting its Lease expire: see leave.
type Keeper struct {
	// Client reads and writes the Lease; uncached, so the manager never
	// watches every Lease in the cluster.
	Client    client.Client
	Namespace string
	Replica   string
	// LeaseDuration and RenewInterval default to DefaultLeaseDuration and
	// DefaultRenewInterval.
	LeaseDuration time.Duration
	RenewInterval time.Duration
	Clock         clock.WithTicker
	// Drain bounds how long a stopping replica waits for its share to be
	// relabelled to others; zero leaves the Lease to expire instead.
	Drain time.Duration
	// Kinds are the sharded kinds whose objects a leave waits for.
	Kinds []Kind
	// Leases is this replica's own LeaseWatch, if any: told of the leave
	// directly, so this replica's sharder, when it leads, moves the share
	// without waiting for a Lease event its stopping watch may not see.
	Leases *LeaseWatch
}

// NeedLeaderElection is false: every replica holds its own Lease.
func (k *Keeper) NeedLeaderElection() bool { return false }

func (k *Keeper) defaults() {
	if k.LeaseDuration <= 0 {
		k.LeaseDuration = DefaultLeaseDuration
	}
	if k.RenewInterval <= 0 {
		k.RenewInterval = DefaultRenewInterval
	}
	if k.Clock == nil {
		k.Clock = clock.RealClock{}
	}
}

// Start renews the Lease until ctx ends, then leaves when Drain is set.
func (k *Keeper) Start(ctx context.Context) error {
	k.defaults()
	if err := CheckName(k.Replica); err != nil {
		return err
	}
	logger := log.FromContext(ctx).WithValues("lease", LeaseName(k.Replica))
	tick := k.Clock.NewTicker(k.RenewInterval)
	defer tick.Stop()
	lastRenew := k.Clock.Now()
	for {
		if err := k.Renew(ctx); err != nil {
			if ctx.Err() != nil {
				return k.leave(ctx)
			}
			logger.Error(err, "renewing the shard lease")
			if k.Clock.Since(lastRenew) >= k.LeaseDuration-k.RenewInterval {
				return fmt.Errorf("shard lease %s not renewed for %s: %w", LeaseName(k.Replica), k.Clock.Since(lastRenew), err)
			}
		} else {
			lastRenew = k.Clock.Now()
		}
		select {
		case <-ctx.Done():
			return k.leave(ctx)
		case <-tick.C():
		}
	}
}

// Renew creates the Lease or moves its renew time to now.
func (k *Keeper) Renew(ctx context.Context) error {
	k.defaults()
	now := metav1.NewMicroTime(k.Clock.Now())
	var lease coordinationv1.Lease
	err := k.Client.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: LeaseName(k.Replica)}, &lease)
	if apierrors.IsNotFound(err) {
		lease = coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
			Namespace: k.Namespace, Name: LeaseName(k.Replica),
			Labels: map[string]string{v1alpha1.LabelShardLease: "true"},
		}}
		k.fill(&lease, now)
		lease.Spec.AcquireTime = &now
		return k.Client.Create(ctx, &lease)
	}
	if err != nil {
		return err
	}
	if lease.Labels[v1alpha1.LabelShardLease] != "true" {
		return fmt.Errorf("lease %s exists without the %s label: not a shard lease", lease.Name, v1alpha1.LabelShardLease)
	}
	k.fill(&lease, now)
	return k.Client.Update(ctx, &lease)
}

func (k *Keeper) fill(lease *coordinationv1.Lease, now metav1.MicroTime) {
	lease.Spec.HolderIdentity = ptr.To(k.Replica)
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(k.LeaseDuration / time.Second))
	lease.Spec.RenewTime = &now
}

// drainPoll is how often a leaving replica looks whether it still owns
// anything.
const drainPoll = 100 * time.Millisecond

// leave hands the replica's share to the others when its manager stops,
// instead of leaving it unprobed until the Lease expires. The manager
// cancels this replica's reconciles and probes with the same ctx (with
// sharding they, like the Keeper, need no leader, and the manager stops
// those before leader-only runnables such as the sharder, so a leaving
// leader still settles its own share). Then the Keeper deletes its Lease:
// the sharder, seeing a replica without a live Lease, gives each of its
// objects to a new owner in one patch. It waits, at most Drain, until no
// object of Kinds carries its name. A leave that cannot finish (the API
// server unreachable, no other replica) is logged, not an error: whoever
// leads next moves what is left, when the Lease is gone or has expired.
func (k *Keeper) leave(stopped context.Context) error {
	if k.Drain <= 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(stopped), k.Drain)
	defer cancel()
	logger := log.FromContext(stopped).WithValues("lease", LeaseName(k.Replica))
	start := k.Clock.Now()
	if err := k.deleteLease(ctx); err != nil {
		logger.Error(err, "deleting the shard lease on leaving; the share moves when it expires")
	}
	if k.Leases != nil {
		k.Leases.Left(k.Replica)
		if others, _, err := k.Leases.Live(ctx, k.Drain); err == nil && len(others) == 0 {
			logger.Info("leaving the shards with no other live replica to take the share")
			return nil
		}
	}
	tick := k.Clock.NewTicker(drainPoll)
	defer tick.Stop()
	for {
		n, err := k.owned(ctx)
		switch {
		case err == nil && n == 0:
			logger.Info("left the shards: every object moved to another replica", "after", k.Clock.Since(start).String())
			return nil
		case ctx.Err() != nil:
			logger.Info("leaving the shards: the drain bound passed with objects still owned", "drain", k.Drain.String(), "owned", n)
			return nil
		}
		select {
		case <-ctx.Done():
		case <-tick.C():
		}
	}
}

// deleteLease deletes this replica's Lease, only if it is a shard Lease.
func (k *Keeper) deleteLease(ctx context.Context) error {
	var lease coordinationv1.Lease
	err := k.Client.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: LeaseName(k.Replica)}, &lease)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if lease.Labels[v1alpha1.LabelShardLease] != "true" {
		return fmt.Errorf("lease %s exists without the %s label: not a shard lease", lease.Name, v1alpha1.LabelShardLease)
	}
	err = k.Client.Delete(ctx, &lease, client.Preconditions{UID: &lease.UID})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// owned counts, up to one per kind, the objects of Kinds (and their runs)
// still labelled with this replica's name.
func (k *Keeper) owned(ctx context.Context) (int, error) {
	n := 0
	for _, kind := range k.Kinds {
		for _, gvk := range []schema.GroupVersionKind{kind.Parent, kind.Child} {
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			if err := k.Client.List(ctx, list, client.MatchingLabels{v1alpha1.LabelShardOwner: k.Replica}, client.Limit(1)); err != nil {
				return n, err
			}
			n += len(list.Items)
		}
	}
	return n, nil
}
