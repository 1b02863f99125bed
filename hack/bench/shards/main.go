// Command shards benchmarks the operator split over manager replicas: it
// starts a local control plane (etcd, kube-apiserver and
// kube-controller-manager from bin/), ragtargets in child processes that
// record every search with the User-Agent naming the replica that sent it,
// builds cmd/manager once and runs it as N separate, sharded,
// leader-elected replica processes, creates the canaries (each with one run
// probing a revocation the target never applies), and measures per replica
// RSS, CPU, p99 probe scheduling lag and canaries owned, and the API
// server's CPU and writes. Halfway through the window it SIGKILLs one
// replica and measures the hand-over: how long its canaries went unprobed,
// whether two replicas ever probed one canary in interleaved streams, whether
// a run was lost or duplicated, and whether the moved runs' measurements
// still hold. Before that it runs the same fleet on one replica (mode B) on
// a fresh control plane, for comparison; the two are printed side by side.
//
// It exits 0 when every goal is met, 1 when one is missed, 2 when the setup
// failed; every process it started is stopped, on Ctrl-C too.
//
//	go run ./hack/bench/shards --canaries 9000 --replicas 3 --for 3m
//	go run ./hack/bench/shards --canaries 300 --replicas 3 --for 1m
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/ragcanary/ragcanary/hack/bench/internal/benchkit"
	"github.com/ragcanary/ragcanary/internal/shard"
)

type options struct {
	canaries     int
	replicas     int
	single       bool
	measure      time.Duration
	killAt       time.Duration
	killLeader   bool
	interval     time.Duration
	controls     bool
	targets      int
	checkpoint   time.Duration
	shardLease   time.Duration
	setupTimeout time.Duration
	binDir       string
	crdDir       string
	manager      string
	logDir       string
	heapProfiles bool
	verbose      bool

	corpora int
}

func main() {
	var o options
	serveTarget := flag.Bool(benchkit.ServeTargetFlag, false, "internal: run as the benchmark's ragtarget child process")
	flag.IntVar(&o.canaries, "canaries", 9000, "active canaries in all (one run each), split over the replicas")
	flag.IntVar(&o.replicas, "replicas", 3, "manager replicas of mode A; 1 runs mode B alone")
	flag.BoolVar(&o.single, "single", true, "with --replicas above 1, first run the same canaries on one replica (mode B, a fresh control plane) for comparison; its RSS is then the total the per-replica memory goal divides")
	flag.DurationVar(&o.measure, "for", 3*time.Minute, "measurement window, after every run is active")
	flag.DurationVar(&o.killAt, "kill-after", 0, "SIGKILL one replica this far into the window (mode A); 0: halfway")
	flag.BoolVar(&o.killLeader, "kill-leader", false, "kill the elected leader (which runs the sharder) instead of a follower")
	flag.DurationVar(&o.interval, "interval", 5*time.Second, "probe interval of every canary")
	flag.BoolVar(&o.controls, "controls", false, "give each canary a control persona (two probes per round instead of one)")
	flag.IntVar(&o.targets, "targets", 2, "ragtarget child processes the corpora are spread over (at most one per corpus of 1,000 canaries)")
	flag.DurationVar(&o.checkpoint, "checkpoint", 20*time.Minute, "the replicas' --status-checkpoint-interval; below half the window the moved runs' lower bounds can be seen growing in status")
	flag.DurationVar(&o.shardLease, "shard-lease", shard.DefaultLeaseDuration, "the replicas' --shard-lease-duration")
	flag.DurationVar(&o.setupTimeout, "setup-timeout", 0, "how long creating the canaries and reaching AwaitingExclusion may take; 0: 15m, plus 90s per 1,000 canaries above 1,000")
	flag.StringVar(&o.binDir, "bin", "bin", "directory holding etcd, kube-apiserver and kube-controller-manager")
	flag.StringVar(&o.crdDir, "crds", filepath.Join("config", "crd", "bases"), "directory holding the CRD manifests")
	flag.StringVar(&o.manager, "manager", "", "manager binary to run; empty: go build ./cmd/manager into a temporary directory")
	flag.StringVar(&o.logDir, "log-dir", "", "keep the replicas' logs here; empty: a temporary directory, removed at the end")
	flag.BoolVar(&o.verbose, "v", false, "log the replicas' info messages")
	flag.BoolVar(&o.heapProfiles, "heap-profiles", false, "serve each replica's profiler on loopback and keep its heap profile at the end of the steady window beside its log (the leader's named <name>-leader.heap)")
	flag.Parse()
	if *serveTarget {
		var rec recorder
		if err := benchkit.ServeRagtarget(benchkit.TargetHooks{Wrap: rec.wrap, Routes: rec.routes}); err != nil {
			fmt.Fprintf(os.Stderr, "ragtarget: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if err := o.fillDefaults(); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(2)
	}
	// envtest logs through controller-runtime: errors only.
	ctrl.SetLogger(zap.New(zap.UseDevMode(false), zap.Level(zapcore.ErrorLevel)))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := run(ctx, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchmark failed: %v\n", err)
		os.Exit(2)
	}
	if !rep.print(os.Stdout) {
		os.Exit(1)
	}
}

func (o *options) fillDefaults() error {
	if o.canaries < 1 || o.replicas < 1 {
		return fmt.Errorf("--canaries and --replicas must be at least 1")
	}
	o.corpora = benchkit.CorporaFor(o.canaries)
	o.targets = max(1, min(o.targets, o.corpora))
	if o.killAt <= 0 {
		o.killAt = o.measure / 2
	}
	if o.killAt >= o.measure {
		return fmt.Errorf("--kill-after %s must fall inside the window (--for %s)", o.killAt, o.measure)
	}
	if o.setupTimeout <= 0 {
		o.setupTimeout = 15*time.Minute + time.Duration(max(0, o.canaries-1000))*90*time.Millisecond
	}
	return nil
}

func (o options) fleet() benchkit.Fleet {
	return benchkit.Fleet{Canaries: o.canaries, Corpora: o.corpora, Interval: o.interval, Controls: o.controls,
		// Long enough for the whole setup and window.
		RunTimeout: o.setupTimeout + o.measure + 10*time.Minute}
}

// run builds the manager, then runs mode B (when asked) and mode A, each
// on its own control plane.
func run(ctx context.Context, o options) (*report, error) {
	tmp, err := os.MkdirTemp("", "ragcanary-bench-shards-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if o.logDir == "" {
		o.logDir = filepath.Join(tmp, "logs")
	}
	if err := os.MkdirAll(o.logDir, 0o755); err != nil {
		return nil, err
	}
	if o.manager == "" {
		benchkit.Step("building cmd/manager")
		if o.manager, err = buildManager(ctx, tmp); err != nil {
			return nil, err
		}
	}
	rep := &report{o: o}
	if o.replicas > 1 && o.single {
		if rep.single, err = runMode(ctx, o, 1, filepath.Join(tmp, "single")); err != nil {
			return nil, fmt.Errorf("mode B (1 replica): %w", err)
		}
	}
	mode, err := runMode(ctx, o, o.replicas, filepath.Join(tmp, "sharded"))
	if err != nil {
		return nil, fmt.Errorf("%d replicas: %w", o.replicas, err)
	}
	if o.replicas == 1 {
		rep.single = mode
	} else {
		rep.sharded = mode
	}
	return rep, nil
}
