// Command canaries benchmarks the operator with many active canaries: it
// starts a local control plane (etcd and kube-apiserver from bin/), one or
// more ragtargets in child processes, and the manager in this process,
// creates N RevocationCanaries spread over corpora of at most 1,000 canaries
// each (a corpus's rate limit is at most 1,000 requests/s), each starting one
// run at once, waits until every run is in AwaitingExclusion (probing a
// revocation the target never applies), then measures for a fixed time: the
// manager's RSS, heap and CPU, memory per canary and where it goes, the p99
// probe scheduling lag, the manager's API writes, and the API server's
// requests by verb. It prints the figures next to the goals, stops
// everything it started and exits 0, or 1 when a goal is missed (so it can
// gate a make target), or 2 when the setup failed.
//
//	go run ./hack/bench/canaries --canaries 1000 --for 3m
//	go run ./hack/bench/canaries --canaries 10000 --for 3m
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	goruntime "runtime"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"

	"github.com/ragcanary/ragcanary/controllers/canaryrun"
	"github.com/ragcanary/ragcanary/controllers/shared"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/controllers"
	"github.com/ragcanary/ragcanary/hack/bench/internal/benchkit"
	"github.com/ragcanary/ragcanary/internal/dev/localcluster"
	"github.com/ragcanary/ragcanary/internal/target"
)

// Goals from the issues: 1,000 canaries in 200 MiB (issue 5), 10,000 in
// 1 GiB (issue 10); one status write per active run every 1,000 s at most
// (issue 23).
const (
	goalLagP99         = 250 * time.Millisecond
	goalWritesPerRunPS = 0.001
)

// goalRSSMiB is the resident-set goal for n canaries.
func goalRSSMiB(n int) float64 {
	if n <= 1000 {
		return 200
	}
	return 1024
}

type options struct {
	canaries       int
	corpora        int
	targets        int
	checkpoint     time.Duration
	fineLag        bool
	measure        time.Duration
	interval       time.Duration
	controls       bool
	setupTimeout   time.Duration
	showWrites     int
	binDir         string
	crdDir         string
	scrapeInterval time.Duration
	childNice      int
	apiProfile     string
	cpuProfile     string
	setupProfile   string
	heapProfile    string
	verbose        bool
}

func main() {
	var o options
	serveTarget := flag.Bool(benchkit.ServeTargetFlag, false, "internal: run as the benchmark's ragtarget child process")
	flag.IntVar(&o.canaries, "canaries", 1000, "active canaries (one run each)")
	flag.IntVar(&o.corpora, "corpora", 0, "shards the canaries are spread over, each a namespace with one corpus; 0: one per 1,000 canaries")
	flag.IntVar(&o.targets, "targets", 1, "ragtarget child processes the corpora are spread over")
	flag.BoolVar(&o.fineLag, "fine-lag", true, "read the lag from a 200-bucket histogram per corpus (its memory is reported and netted out) instead of the production 13 buckets (p99 then known to the bucket: …, 100ms, 250ms, 500ms, …)")
	flag.DurationVar(&o.checkpoint, "checkpoint", canaryrun.DefaultStatusCheckpointInterval, "the manager's --status-checkpoint-interval")
	flag.DurationVar(&o.measure, "for", 3*time.Minute, "measurement window, after every run is active")
	flag.DurationVar(&o.interval, "interval", 5*time.Second, "probe interval of every canary")
	flag.BoolVar(&o.controls, "controls", true, "give each canary a control persona (two probes per round instead of one)")
	flag.DurationVar(&o.setupTimeout, "setup-timeout", 0, "how long creating the canaries and reaching AwaitingExclusion may take; 0: 15m, plus 90s per 1,000 canaries above 1,000")
	flag.StringVar(&o.binDir, "bin", "bin", "directory holding etcd and kube-apiserver")
	flag.StringVar(&o.crdDir, "crds", filepath.Join("config", "crd", "bases"), "directory holding the CRD manifests")
	flag.DurationVar(&o.scrapeInterval, "scrape-interval", 30*time.Second, "gather and encode the manager's whole metrics registry this often during the window, as Prometheus scraping it would; 0: never")
	flag.IntVar(&o.childNice, "child-nice", 0, "nice value for etcd, kube-apiserver, kube-controller-manager and the ragtargets during the window (0: as started, sharing the CPUs equally with the manager; 10: the manager first, as when they run on other machines)")
	flag.StringVar(&o.apiProfile, "apiserver-cpuprofile", "", "write a CPU profile of kube-apiserver over the window (up to 5 min of it) to this file")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the measurement window to this file")
	flag.StringVar(&o.setupProfile, "setup-cpuprofile", "", "write a CPU profile of the manager (and the benchmark's own client) over the setup to this file")
	flag.StringVar(&o.heapProfile, "heapprofile", "", "write a heap profile at the end of the window to this file")
	flag.IntVar(&o.showWrites, "show-writes", 0, "print the bodies of the window's first N run status patches")
	flag.BoolVar(&o.verbose, "v", false, "log the manager's info messages")
	flag.Parse()
	// Sample every 64 KiB allocated rather than every 512 KiB, so the
	// in-use breakdown by allocator holds for the small per-canary objects.
	goruntime.MemProfileRate = 64 << 10
	o.fillDefaults()
	if *serveTarget {
		if err := benchkit.ServeRagtarget(benchkit.TargetHooks{}); err != nil {
			fmt.Fprintf(os.Stderr, "ragtarget: %v\n", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchmark failed: %v\n", err)
		os.Exit(2)
	}
	if !res.print(os.Stdout, o) {
		os.Exit(1)
	}
}

// fillDefaults derives the settings left at 0 from the canary count.
func (o *options) fillDefaults() {
	if o.corpora <= 0 {
		o.corpora = benchkit.CorporaFor(o.canaries)
	}
	o.targets = max(1, min(o.targets, o.corpora))
	if o.setupTimeout <= 0 {
		o.setupTimeout = 15*time.Minute + time.Duration(max(0, o.canaries-1000))*90*time.Millisecond
	}
}

// fleet is the canaries the options describe.
func (o options) fleet() benchkit.Fleet {
	return benchkit.Fleet{Canaries: o.canaries, Corpora: o.corpora, Interval: o.interval, Controls: o.controls,
		// Long enough for the whole setup and window.
		RunTimeout: o.setupTimeout + o.measure + 10*time.Minute}
}

// run sets everything up, measures and tears everything down again; every
// process it started is stopped before it returns.
func run(ctx context.Context, o options) (*result, error) {
	level := zapcore.ErrorLevel
	if o.verbose {
		level = zapcore.InfoLevel
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(false), zap.Level(level)))

	tmp, err := os.MkdirTemp("", "ragcanary-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	binDir, err := filepath.Abs(o.binDir)
	if err != nil {
		return nil, err
	}
	benchkit.Step("starting etcd and kube-apiserver from %s", binDir)
	cluster, err := localcluster.Start(localcluster.Options{BinDir: binDir, CRDDir: o.crdDir, Kubeconfig: filepath.Join(tmp, "kubeconfig")})
	if err != nil {
		return nil, err
	}
	defer func() {
		benchkit.Step("stopping the control plane")
		if err := cluster.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping control plane: %v\n", err)
		}
	}()

	benchkit.Step("starting %d ragtarget child process(es) (content and ACL sync every hour)", o.targets)
	targets, err := benchkit.StartTargets(o.targets)
	if err != nil {
		return nil, err
	}
	defer targets.Stop()

	scheme, err := benchkit.NewScheme()
	if err != nil {
		return nil, err
	}
	// The benchmark's own client: not counted.
	c, err := benchkit.NewClient(cluster.Config, scheme)
	if err != nil {
		return nil, err
	}

	writes := newWriteCounter()
	lagRegistry := installLagHistogram(o.fineLag)
	mgrCtx, stopMgr := context.WithCancel(ctx)
	mgrDone, err := startManager(mgrCtx, cluster.Config, scheme, writes, o.checkpoint)
	if err != nil {
		stopMgr()
		return nil, err
	}
	defer func() {
		benchkit.Step("stopping the manager")
		stopMgr()
		<-mgrDone
	}()

	api, err := benchkit.NewAPIServerMetrics(cluster.Config)
	if err != nil {
		return nil, err
	}
	before, err := sampleSetup(ctx, api)
	if err != nil {
		return nil, err
	}
	stopProfile, err := startProfile(o.setupProfile)
	if err != nil {
		return nil, err
	}
	defer stopProfile()
	setupStart := time.Now()
	setupCtx, cancelSetup := context.WithTimeout(ctx, o.setupTimeout)
	defer cancelSetup()
	if err := benchkit.CreateFixture(setupCtx, c, targets.URLs(), o.fleet()); err != nil {
		return nil, fmt.Errorf("creating the fixture: %w", err)
	}
	base := sampleMemory()
	benchkit.Step("creating %d canaries over %d corpora", o.canaries, o.corpora)
	if err := benchkit.CreateCanaries(setupCtx, c, o.fleet()); err != nil {
		return nil, fmt.Errorf("creating canaries: %w", err)
	}
	benchkit.Step("waiting until every run probes for visibility")
	if err := benchkit.WaitPhase(setupCtx, c, o.canaries, v1alpha1.PhaseAwaitingVisibility, v1alpha1.PhaseAwaitingExclusion); err != nil {
		return nil, err
	}
	benchkit.Step("syncing the targets once: every canary becomes visible, and no revocation will be applied")
	if err := targets.Sync(setupCtx); err != nil {
		return nil, err
	}
	// A run's setup ends with its first sighting after the revocation
	// persisted: at 10,000 runs those writes queue for minutes behind the
	// API server, and counted in the window they would pass for steady
	// state.
	if err := benchkit.WaitRuns(setupCtx, c, o.canaries, "AwaitingExclusion with a persisted sighting", benchkit.ExclusionSighted); err != nil {
		return nil, err
	}
	setup := time.Since(setupStart)
	stopProfile()
	setupWrites := writes.snapshot()
	after, err := sampleSetup(ctx, api)
	if err != nil {
		return nil, err
	}
	benchkit.Step("all %d runs in AwaitingExclusion after %s; measuring for %s", o.canaries, setup.Round(time.Second), o.measure)
	res, err := measure(ctx, o, writes, lagRegistry, api)
	if err != nil {
		return nil, err
	}
	res.setup = setup
	res.setupWrites = setupWrites
	res.setupBefore, res.setupAfter = before, after
	res.base = base
	if res.objects, err = measureObjects(ctx, c); err != nil {
		return nil, err
	}
	active, err := benchkit.CountPhase(ctx, c, v1alpha1.PhaseAwaitingExclusion)
	if err != nil {
		return nil, err
	}
	res.activeAtEnd = active
	return res, nil
}

// startManager runs the manager in this process with every reconciler, as
// cmd/manager wires it: client-side rate limiting off (QPS -1, API priority
// and fairness decides), metrics on a loopback port. Its transport counts
// writes.
func startManager(ctx context.Context, base *rest.Config, scheme *runtime.Scheme, writes *writeCounter, checkpoint time.Duration) (<-chan struct{}, error) {
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = -1, 0
	cfg.WrapTransport = writes.wrap
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "127.0.0.1:0"},
		HealthProbeBindAddress: "0",
		Cache:                  shared.CacheOptions(""),
	})
	if err != nil {
		return nil, err
	}
	// The bench target listens on a random loopback port.
	opts := shared.Options{Door: &target.Door{Reader: mgr.GetAPIReader(), Allow: target.AllowAny()},
		Defaults: shared.DefaultSettings(), StatusCheckpoint: checkpoint}
	if err := controllers.SetupAll(mgr, opts); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "manager stopped: %v\n", err)
		}
	}()
	return done, nil
}

// startProfile starts a CPU profile of this process into path, if one is
// asked for, and returns what stops it (safe to call more than once).
func startProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { pprof.StopCPUProfile(); f.Close() }) }, nil
}
