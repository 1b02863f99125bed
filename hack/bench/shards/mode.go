package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/hack/bench/internal/benchkit"
	"github.com/ragcanary/ragcanary/internal/dev/localcluster"
)

// modeResult is one mode's figures.
type modeResult struct {
	replicas int
	setup    time.Duration
	// steady is the window until the kill (the whole window without one).
	steady phaseFigures
	// failover is the rest of the window after the kill; nil without one.
	failover *failoverResult
}

// runMode runs n replicas on a fresh control plane; with more than one it
// kills one halfway through the window. Every process it started is
// stopped before it returns.
func runMode(ctx context.Context, o options, n int, dir string) (*modeResult, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	binDir, err := filepath.Abs(o.binDir)
	if err != nil {
		return nil, err
	}
	benchkit.Step("[%d replica(s)] starting etcd, kube-apiserver and kube-controller-manager from %s", n, binDir)
	cluster, err := localcluster.Start(localcluster.Options{BinDir: binDir, CRDDir: o.crdDir, Kubeconfig: filepath.Join(dir, "kubeconfig")})
	if err != nil {
		return nil, err
	}
	defer func() {
		benchkit.Step("[%d replica(s)] stopping the control plane", n)
		if err := cluster.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping control plane: %v\n", err)
		}
	}()
	benchkit.Step("[%d replica(s)] starting %d recording ragtarget child process(es)", n, o.targets)
	targets, err := benchkit.StartTargets(o.targets)
	if err != nil {
		return nil, err
	}
	defer targets.Stop()
	scheme, err := benchkit.NewScheme()
	if err != nil {
		return nil, err
	}
	c, err := benchkit.NewClient(cluster.Config, scheme)
	if err != nil {
		return nil, err
	}
	logDir := filepath.Join(o.logDir, fmt.Sprintf("%d-replicas", n))
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	benchkit.Step("[%d replica(s)] starting %d manager replica process(es), logs in %s", n, n, logDir)
	set, err := startReplicas(replicaConfig{binary: o.manager, kubeconfig: cluster.Kubeconfig, logDir: logDir,
		targetURLs: targets.URLs(), checkpoint: o.checkpoint, shardLease: o.shardLease, verbose: o.verbose, pprof: o.heapProfiles}, n)
	if err != nil {
		return nil, err
	}
	defer func() {
		benchkit.Step("[%d replica(s)] stopping the replicas", n)
		set.stop()
	}()

	setupStart := time.Now()
	setupCtx, cancel := context.WithTimeout(ctx, o.setupTimeout)
	defer cancel()
	if err := waitLeases(setupCtx, c, set); err != nil {
		return nil, err
	}
	if err := benchkit.CreateFixture(setupCtx, c, targets.URLs(), o.fleet()); err != nil {
		return nil, fmt.Errorf("creating the fixture: %w", err)
	}
	benchkit.Step("[%d replica(s)] creating %d canaries over %d corpora", n, o.canaries, o.corpora)
	if err := benchkit.CreateCanaries(setupCtx, c, o.fleet()); err != nil {
		return nil, fmt.Errorf("creating canaries: %w", err)
	}
	benchkit.Step("[%d replica(s)] waiting until every run probes for visibility", n)
	if err := benchkit.WaitPhase(setupCtx, c, o.canaries, v1alpha1.PhaseAwaitingVisibility, v1alpha1.PhaseAwaitingExclusion); err != nil {
		return nil, err
	}
	benchkit.Step("[%d replica(s)] syncing the targets once: every canary becomes visible, no revocation will be applied", n)
	if err := targets.Sync(setupCtx); err != nil {
		return nil, err
	}
	if err := benchkit.WaitRuns(setupCtx, c, o.canaries, "AwaitingExclusion with a persisted sighting", benchkit.ExclusionSighted); err != nil {
		return nil, err
	}
	if err := set.exitError(); err != nil {
		return nil, err
	}
	res := &modeResult{replicas: n, setup: time.Since(setupStart)}
	benchkit.Step("[%d replica(s)] all %d runs in AwaitingExclusion after %s; measuring for %s", n, o.canaries, res.setup.Round(time.Second), o.measure)
	if err := measureMode(ctx, o, c, cluster, targets, set, res); err != nil {
		return nil, err
	}
	return res, nil
}

// waitLeases waits until every replica holds its shard Lease, so the
// canaries are assigned over all of them from the start.
func waitLeases(ctx context.Context, c client.Client, set replicaSet) error {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		var leases coordinationv1.LeaseList
		if err := c.List(ctx, &leases, client.InNamespace(leaderElectionNamespace), client.MatchingLabels{v1alpha1.LabelShardLease: "true"}); err != nil {
			return err
		}
		if len(leases.Items) >= len(set) {
			return nil
		}
		if err := set.exitError(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d shard Leases (%d so far): %w", len(set), len(leases.Items), ctx.Err())
		case <-t.C:
		}
	}
}
