package shard

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Lease timing defaults. A dead replica's share moves within
// DefaultLeaseDuration plus one sharder pass; a renewal may fail twice
// before the replica stops itself.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewInterval = 5 * time.Second
)

// Keeper holds the replica's shard Lease: it creates it and renews it every
// RenewInterval. Every replica runs one, leader or not. When it has not
// renewed for LeaseDuration-RenewInterval, Start returns an error, which
// stops the manager: the replica then stops probing before the sharder,
// which declares a Lease dead only after a full LeaseDuration without a
// renewal, hands its objects to others.
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

// Start renews the Lease until ctx ends. The Lease is left to expire on a
// stop: deleting it would let the sharder move objects directly while this
// process may still be finishing a probe.
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
				return nil
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
			return nil
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
			Labels: map[string]string{LabelShardLease: "true"},
		}}
		k.fill(&lease, now)
		lease.Spec.AcquireTime = &now
		return k.Client.Create(ctx, &lease)
	}
	if err != nil {
		return err
	}
	if lease.Labels[LabelShardLease] != "true" {
		return fmt.Errorf("lease %s exists without the %s label: not a shard lease", lease.Name, LabelShardLease)
	}
	k.fill(&lease, now)
	return k.Client.Update(ctx, &lease)
}

func (k *Keeper) fill(lease *coordinationv1.Lease, now metav1.MicroTime) {
	lease.Spec.HolderIdentity = ptr.To(k.Replica)
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(k.LeaseDuration / time.Second))
	lease.Spec.RenewTime = &now
}
