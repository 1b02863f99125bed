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
	"slices"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/controllers"
	"github.com/ragcanary/ragcanary/internal/localcluster"
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

// canariesPerCorpus keeps each corpus's probes (two per canary per interval
// with a control persona) well inside the largest rate limit a Corpus may
// declare, 1,000 requests/s.
const canariesPerCorpus = 1000

// shardNamespace is the i-th shard's namespace: one corpus, its personas,
// credentials and 1,000 canaries each. A canary's reconcile lists its runs
// from the API server by label within its namespace, which the API server
// answers by scanning every run there: with the fleet in one namespace that
// is O(canaries) per reconcile and the fleet's start O(canaries²), and at
// 10,000 kube-apiserver's CPU was the setup's limit.
func shardNamespace(i int) string { return fmt.Sprintf("bench-%02d", i) }

// corpusName is every shard's corpus.
const corpusName = "target"

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
	heapProfile    string
	verbose        bool
}

func main() {
	var o options
	serveTarget := flag.Bool("serve-ragtarget", false, "internal: run as the benchmark's ragtarget child process")
	flag.IntVar(&o.canaries, "canaries", 1000, "active canaries (one run each)")
	flag.IntVar(&o.corpora, "corpora", 0, "shards the canaries are spread over, each a namespace with one corpus; 0: one per 1,000 canaries")
	flag.IntVar(&o.targets, "targets", 1, "ragtarget child processes the corpora are spread over")
	flag.BoolVar(&o.fineLag, "fine-lag", true, "read the lag from a 200-bucket histogram per corpus (its memory is reported and netted out) instead of the production 13 buckets (p99 then known to the bucket: …, 100ms, 250ms, 500ms, …)")
	flag.DurationVar(&o.checkpoint, "checkpoint", controllers.DefaultStatusCheckpointInterval, "the manager's --status-checkpoint-interval")
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
	flag.StringVar(&o.heapProfile, "heapprofile", "", "write a heap profile at the end of the window to this file")
	flag.IntVar(&o.showWrites, "show-writes", 0, "print the bodies of the window's first N run status patches")
	flag.BoolVar(&o.verbose, "v", false, "log the manager's info messages")
	flag.Parse()
	// Sample every 64 KiB allocated rather than every 512 KiB, so the
	// in-use breakdown by allocator holds for the small per-canary objects.
	goruntime.MemProfileRate = 64 << 10
	o.fillDefaults()
	if *serveTarget {
		if err := serveRagtarget(); err != nil {
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
		o.corpora = max(1, (o.canaries+canariesPerCorpus-1)/canariesPerCorpus)
	}
	o.targets = max(1, min(o.targets, o.corpora))
	if o.setupTimeout <= 0 {
		o.setupTimeout = 15*time.Minute + time.Duration(max(0, o.canaries-1000))*90*time.Millisecond
	}
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
	step("starting etcd and kube-apiserver from %s", binDir)
	cluster, err := localcluster.Start(localcluster.Options{BinDir: binDir, CRDDir: o.crdDir, Kubeconfig: filepath.Join(tmp, "kubeconfig")})
	if err != nil {
		return nil, err
	}
	defer func() {
		step("stopping the control plane")
		if err := cluster.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping control plane: %v\n", err)
		}
	}()

	step("starting %d ragtarget child process(es) (content and ACL sync every hour)", o.targets)
	targets, err := startTargets(o.targets)
	if err != nil {
		return nil, err
	}
	defer targets.stop()

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	// The benchmark's own client: not counted.
	benchCfg := rest.CopyConfig(cluster.Config)
	benchCfg.QPS, benchCfg.Burst = -1, 0
	c, err := client.New(benchCfg, client.Options{Scheme: scheme})
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
		step("stopping the manager")
		stopMgr()
		<-mgrDone
	}()

	api, err := newAPIServerMetrics(cluster.Config)
	if err != nil {
		return nil, err
	}
	before, err := sampleSetup(ctx, api)
	if err != nil {
		return nil, err
	}
	setupStart := time.Now()
	setupCtx, cancelSetup := context.WithTimeout(ctx, o.setupTimeout)
	defer cancelSetup()
	if err := createFixture(setupCtx, c, targets.urls(), o); err != nil {
		return nil, fmt.Errorf("creating the fixture: %w", err)
	}
	base := sampleMemory()
	step("creating %d canaries over %d corpora", o.canaries, o.corpora)
	if err := createCanaries(setupCtx, c, o); err != nil {
		return nil, fmt.Errorf("creating canaries: %w", err)
	}
	step("waiting until every run probes for visibility")
	if err := waitPhase(setupCtx, c, o.canaries, v1alpha1.PhaseAwaitingVisibility, v1alpha1.PhaseAwaitingExclusion); err != nil {
		return nil, err
	}
	step("syncing the targets once: every canary becomes visible, and no revocation will be applied")
	if err := targets.sync(setupCtx); err != nil {
		return nil, err
	}
	// A run's setup ends with its first sighting after the revocation
	// persisted: at 10,000 runs those writes queue for minutes behind the
	// API server, and counted in the window they would pass for steady
	// state.
	if err := waitRuns(setupCtx, c, o.canaries, "AwaitingExclusion with a persisted sighting", exclusionSighted); err != nil {
		return nil, err
	}
	setup := time.Since(setupStart)
	setupWrites := writes.snapshot()
	after, err := sampleSetup(ctx, api)
	if err != nil {
		return nil, err
	}

	step("all %d runs in AwaitingExclusion after %s; measuring for %s", o.canaries, setup.Round(time.Second), o.measure)
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
	active, err := countPhase(ctx, c, v1alpha1.PhaseAwaitingExclusion)
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
		Cache:                  controllers.CacheOptions(""),
	})
	if err != nil {
		return nil, err
	}
	// The bench target listens on a random loopback port.
	opts := controllers.Options{Door: &target.Door{Reader: mgr.GetAPIReader(), Allow: target.AllowAny()},
		Defaults: controllers.DefaultSettings(), StatusCheckpoint: checkpoint}
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

// createFixture creates, per shard, the namespace, credentials, the
// personas and the corpus (with the largest rate limit a Corpus may
// declare, well above its canaries' probes per second); corpora are spread
// round-robin over the targets.
func createFixture(ctx context.Context, c client.Client, urls []string, o options) error {
	var objs []client.Object
	for i := range o.corpora {
		ns := shardNamespace(i)
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
			secret(ns, "source", benchSourceToken), secret(ns, "alice-cred", benchAliceToken), secret(ns, "mallory-cred", benchMalloryToken),
			persona(ns, "alice", "alice@example.com"), persona(ns, "mallory", "mallory@example.com"),
			&v1alpha1.Corpus{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: corpusName},
				Spec: v1alpha1.CorpusSpec{
					Driver: v1alpha1.Driver{Type: v1alpha1.DriverHTTP, HTTP: &v1alpha1.HTTPDriver{URL: urls[i%len(urls)],
						CredentialSecretRef: v1alpha1.SecretKeyReference{Name: "source", Key: "token"}}},
					RateLimit: v1alpha1.RateLimit{RequestsPerSecond: 1000, Burst: 2000},
				},
			})
	}
	for _, obj := range objs {
		if err := c.Create(ctx, obj); err != nil {
			return err
		}
	}
	return nil
}

func secret(ns, name, token string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{target.CredentialLabel: target.CredentialLabelValue}},
		Data: map[string][]byte{"token": []byte(token)}}
}

func persona(ns, name, subject string) *v1alpha1.Persona {
	return &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.PersonaSpec{Subject: subject,
			CredentialSecretRef: v1alpha1.SecretKeyReference{Name: name + "-cred", Key: "token"}}}
}

// createCanaries creates the canaries with 8 workers. Each runs daily and
// asks for one run at once (run-now), so exactly one run per canary exists
// during the window.
func createCanaries(ctx context.Context, c client.Client, o options) error {
	type named struct{ name, namespace string }
	names := make(chan named)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for name := range names {
				if err := c.Create(ctx, canary(name.name, name.namespace, o)); err != nil && !apierrors.IsAlreadyExists(err) {
					errs <- err
					return
				}
			}
		})
	}
	var err error
feed:
	for i := range o.canaries {
		select {
		case names <- named{fmt.Sprintf("canary-%05d", i), shardNamespace(i % o.corpora)}:
		case err = <-errs:
			break feed
		}
	}
	close(names)
	wg.Wait()
	if err != nil {
		return err
	}
	select {
	case err = <-errs:
	default:
	}
	return err
}

func canary(name, namespace string, o options) *v1alpha1.RevocationCanary {
	spec := v1alpha1.CanarySpec{
		CorpusRef:  v1alpha1.LocalObjectReference{Name: corpusName},
		PersonaRef: v1alpha1.LocalObjectReference{Name: "alice"},
		Revocation: v1alpha1.Revocation{Method: v1alpha1.RevokeRemoveGrant},
		Probing: v1alpha1.Probing{
			Interval:      metav1.Duration{Duration: o.interval},
			MaxInterval:   metav1.Duration{Duration: o.interval},
			Confirmations: 3,
			// Long enough for the whole setup and window.
			VisibilityTimeout: metav1.Duration{Duration: o.setupTimeout + o.measure + 10*time.Minute},
			ExclusionTimeout:  metav1.Duration{Duration: o.setupTimeout + o.measure + 10*time.Minute},
			Surfaces:          []v1alpha1.Surface{v1alpha1.SurfaceSearch},
		},
	}
	if o.controls {
		spec.ControlPersonaRefs = []v1alpha1.LocalObjectReference{{Name: "mallory"}}
	}
	return &v1alpha1.RevocationCanary{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name,
			Annotations: map[string]string{v1alpha1.RunNowAnnotation: "bench"}},
		Spec: v1alpha1.RevocationCanarySpec{
			Scheduling: v1alpha1.Scheduling{Schedule: v1alpha1.Schedule{Every: &metav1.Duration{Duration: 24 * time.Hour}}},
			CanarySpec: spec,
		},
	}
}

// waitPhase waits until n runs are in one of phases. A run that finished
// fails the wait: the setup did not hold.
func waitPhase(ctx context.Context, c client.Client, n int, phases ...v1alpha1.CanaryPhase) error {
	return waitRuns(ctx, c, n, fmt.Sprint(phases), func(r *v1alpha1.CanaryRun) bool {
		return slices.Contains(phases, r.Status.Phase)
	})
}

// exclusionSighted: the run persisted its first sighting after the
// revocation, the last write of its setup.
func exclusionSighted(r *v1alpha1.CanaryRun) bool {
	if r.Status.Phase != v1alpha1.PhaseAwaitingExclusion || len(r.Status.Surfaces) == 0 {
		return false
	}
	for _, m := range r.Status.Surfaces {
		if m.LastPositiveStart == nil {
			return false
		}
	}
	return true
}

// waitRuns polls until n runs satisfy ok (described by what).
func waitRuns(ctx context.Context, c client.Client, n int, what string, ok func(*v1alpha1.CanaryRun) bool) error {
	// Each poll lists every run: poll less often the more there are, so
	// the benchmark's own reads stay a small part of the API server's work.
	t := time.NewTicker(max(2*time.Second, time.Duration(n)*time.Millisecond))
	defer t.Stop()
	last := time.Now()
	for {
		var list v1alpha1.CanaryRunList
		// Every run in the cluster is the benchmark's.
		if err := c.List(ctx, &list); err != nil {
			return err
		}
		byPhase := map[v1alpha1.CanaryPhase]int{}
		in := 0
		// waiting is one waiting run's message, for a setup that stalls.
		waiting := ""
		for _, r := range list.Items {
			byPhase[r.Status.Phase]++
			if waiting == "" && r.Status.Message != "" {
				waiting = r.Name + ": " + r.Status.Message
			}
			if ok(&r) {
				in++
			}
			if r.Status.Phase == v1alpha1.PhaseSucceeded || r.Status.Phase == v1alpha1.PhaseFailed {
				return fmt.Errorf("run %s finished during setup: %s %s (%s)", r.Name, r.Status.Phase, r.Status.Verdict, r.Status.Message)
			}
		}
		if in >= n {
			return nil
		}
		if time.Since(last) >= 10*time.Second {
			step("  %d runs, by phase %v; %s", len(list.Items), byPhase, waiting)
			last = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d runs in %s: %w (by phase %v)", n, what, ctx.Err(), byPhase)
		case <-t.C:
		}
	}
}

func countPhase(ctx context.Context, c client.Client, phase v1alpha1.CanaryPhase) (int, error) {
	var list v1alpha1.CanaryRunList
	if err := c.List(ctx, &list); err != nil {
		return 0, err
	}
	n := 0
	for _, r := range list.Items {
		if r.Status.Phase == phase {
			n++
		}
	}
	return n, nil
}

func step(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
