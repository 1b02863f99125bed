package shard

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Timings for the leave test: a shard Lease long enough that a share
// moved when it expires and one moved when its replica leaves are far
// apart even on a loaded machine, and a drain bound below it.
var leaveTiming = replicaTiming{lease: 6 * time.Second, renew: time.Second, drain: 4 * time.Second}

// TestStoppedReplicaHandsOverItsShare stops one of two replicas the way
// SIGTERM does (its manager's context is cancelled), once the follower
// and once the leader, and checks that every canary and run it owned is
// owned by the survivor within a third of a shard Lease of the stop, each
// taken in one patch; a replica letting its Lease expire would keep its
// share unprobed for a whole Lease.
func TestStoppedReplicaHandsOverItsShare(t *testing.T) {
	for _, leaving := range []string{"follower", "leader"} {
		t.Run(leaving, func(t *testing.T) {
			ns := newNamespace(t)
			names := canaryNames(16)
			for _, n := range names {
				createCanary(t, ns, n)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			history := watchOwners(ctx, t, ns)
			a := startReplicaManagerTimed(t, ns, "r-a", leaveTiming)
			b := startReplicaManagerTimed(t, ns, "r-b", leaveTiming)
			assignedAsRing(t, ns, names, []string{"r-a", "r-b"})
			gone, survivor := waitLeader(t, a, b)
			if leaving == "follower" {
				gone, survivor = survivor, gone
			}
			share := movingTo(ns, names, gone.name, []string{"r-a", "r-b"})
			if len(share) == 0 {
				t.Fatalf("%s owns no canary: pick other names", gone.name)
			}

			stopped := time.Now()
			gone.stop()
			assignedAsRing(t, ns, names, []string{survivor.name})
			cancel()
			states := history()
			var moved time.Duration
			for _, n := range share {
				for _, name := range []string{n, n + "-run"} {
					at, err := ownedSince(states[name], survivor.name, stopped)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					moved = max(moved, at.Sub(stopped))
					if err := noDirectMove(states[name], gone.name); err != nil {
						t.Errorf("%s: %v", name, err)
					}
				}
			}
			t.Logf("the %s %s stopped; its %d canaries and their runs were all owned by %s %s later (shard Lease %s)",
				leaving, gone.name, len(share), survivor.name, moved, leaveTiming.lease)
			if bound := leaveTiming.lease / 3; moved >= bound {
				t.Errorf("the share of the stopped %s moved %s after the stop, want under %s (a third of its shard Lease)",
					gone.name, moved, bound)
			}
		})
	}
}

// ownedSince is when an object was first seen owned by owner after from.
func ownedSince(states []ownerState, owner string, from time.Time) (time.Time, error) {
	for _, s := range states {
		if s.owner == owner && s.at.After(from) {
			return s.at, nil
		}
	}
	return time.Time{}, fmt.Errorf("never owned by %s after the stop (versions %+v)", owner, states)
}
