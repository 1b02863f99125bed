// Command manager runs the ragcanary reconcilers.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ragcanary/ragcanary/controllers/canaryrun"
	"github.com/ragcanary/ragcanary/controllers/shared"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/controllers"
	"github.com/ragcanary/ragcanary/internal/manager"
	"github.com/ragcanary/ragcanary/internal/secretcache"
	"github.com/ragcanary/ragcanary/internal/shard"
	"github.com/ragcanary/ragcanary/internal/surface"
	"github.com/ragcanary/ragcanary/internal/target"
)

// settings are the operator's command-line options.
type settings struct {
	metrics           manager.MetricsServing
	probeAddr         string
	pprofAddr         string
	leaderElect       bool
	leaderElectionNS  string
	allowedTargetURLs string
	allowAnyTarget    bool
	deniedCIDRs       string
	allowedCIDRs      string
	watchNamespace    string
	secretNamespaces  string
	statusCheckpoint  time.Duration
	secretCache       secretcache.Limits
	historyBytes      int64
	sharding          bool
	shardName         string
	shardLease        time.Duration
	shardRenew        time.Duration
	shardDrain        time.Duration
	defaults          shared.Defaults
	zapOptions        zap.Options
}

// parseFlags reads options from the process flag set, where controller-runtime
// has already registered --kubeconfig.
func parseFlags(args []string) (settings, error) {
	var s settings
	fs := flag.CommandLine
	fs.StringVar(&s.metrics.BindAddress, "metrics-bind-address", ":8080", "Address the Prometheus metrics endpoint binds to; \"0\" disables it.")
	fs.BoolVar(&s.metrics.Secure, "metrics-secure", true, "Serve metrics over HTTPS to callers whose token the API server authenticates and authorizes for GET /metrics. --metrics-secure=false serves plain HTTP to anyone who reaches the port: only for local runs.")
	fs.StringVar(&s.metrics.CertDir, "metrics-cert-path", "", "Directory holding the metrics server certificate and key (default: a self-signed certificate generated at start).")
	fs.StringVar(&s.metrics.CertName, "metrics-cert-name", manager.DefaultCertName, "Name of the metrics server certificate file in --metrics-cert-path.")
	fs.StringVar(&s.metrics.KeyName, "metrics-cert-key", manager.DefaultKeyName, "Name of the metrics server key file in --metrics-cert-path.")
	fs.BoolVar(&s.metrics.EnableHTTP2, "enable-http2", false, "Allow HTTP/2 on the metrics server (off: HTTP/2 rapid reset).")
	fs.StringVar(&s.probeAddr, "health-probe-bind-address", ":8081", "Address the /healthz and /readyz probes bind to.")
	fs.StringVar(&s.pprofAddr, "pprof-bind-address", "0", "Address the Go profiler (/debug/pprof) binds to; \"0\" disables it. It serves anyone who reaches the port: bind it to loopback and reach it with kubectl port-forward.")
	fs.BoolVar(&s.leaderElect, "leader-elect", false, "Elect a leader so only one replica reconciles at a time.")
	fs.StringVar(&s.leaderElectionNS, "leader-election-namespace", "", "Namespace of the leader election lease (default: the pod's namespace).")
	fs.StringVar(&s.allowedTargetURLs, "allowed-target-urls", "", "Comma-separated URL prefixes the operator may call, for example https://rag.internal/tenant-a/ (required unless --allow-any-target). Paths match on whole segments.")
	fs.BoolVar(&s.allowAnyTarget, "allow-any-target", false, "Allow the operator to call any http(s) target. Only for a cluster where everyone who can create a Corpus may also read every credential Secret it could name.")
	fs.StringVar(&s.deniedCIDRs, "denied-target-cidrs", strings.Join(target.DefaultDeniedCIDRs, ","), "Comma-separated CIDRs the operator never connects to, checked on the resolved address of every connection to a target (\"none\": no denied range). Loopback is denied too unless an --allowed-target-urls entry is a loopback address or --allowed-target-cidrs holds one.")
	fs.StringVar(&s.allowedCIDRs, "allowed-target-cidrs", "", "Comma-separated CIDRs the operator may connect to (default: any address not denied); a denied range wins.")
	fs.StringVar(&s.watchNamespace, "watch-namespace", "", "Only reconcile objects in this namespace (default: all namespaces).")
	fs.StringVar(&s.secretNamespaces, "secret-namespaces", "", "Comma-separated namespaces the operator may read and watch Secrets in, as the chart's secretNamespaces binds them (default: all namespaces). A credential in any other namespace is refused with SecretAccessDenied.")
	fs.BoolVar(&s.sharding, "sharding", false, "Split canaries and suites between the manager replicas: each holds a shard Lease and reconciles, caches and probes only its share; the elected leader assigns them. Off: one replica (the leader) does everything.")
	fs.StringVar(&s.shardName, "shard-name", shard.DefaultName(), "This replica's name in shard labels, its shard Lease name and the User-Agent of its probes (default: $POD_NAME, else the host name).")
	fs.DurationVar(&s.shardLease, "shard-lease-duration", shard.DefaultLeaseDuration, "How long a replica's shard Lease lives without a renewal before its share moves to the others.")
	fs.DurationVar(&s.shardRenew, "shard-renew-interval", shard.DefaultRenewInterval, "How often a replica renews its shard Lease.")
	fs.DurationVar(&s.shardDrain, "shard-drain-timeout", shard.DefaultDrain, "On SIGTERM, how long a replica waits, after deleting its shard Lease, for the leader to move its share to the others; keep it below the Pod's terminationGracePeriodSeconds and under 30s, the manager's own shutdown bound. 0 leaves the Lease to expire instead (the share then waits --shard-lease-duration).")
	s.secretCache = secretcache.DefaultLimits
	fs.IntVar(&s.secretCache.MaxEntries, "secret-cache-max-entries", secretcache.DefaultMaxEntries, "Credential and run token Secrets whose values the operator keeps in memory between reconciles, served while its Secret metadata watch shows them unchanged; 0 reads every one from the API server each time (no values kept in memory).")
	fs.Func("secret-cache-max-bytes", fmt.Sprintf("Memory the kept Secret values may take (default %d).", secretcache.DefaultMaxBytes), positiveInt64(&s.secretCache.MaxBytes))
	s.historyBytes = surface.DefaultHistoryBytes
	fs.Func("conversation-history-bytes", fmt.Sprintf("Memory the conversation history of every chat surface may take together (the operator keeps each conversation to resend it with every follow-up). Over it, the corpus holding the most gives up its least recently used conversation: a follow-up in it is then a probe error (default %d).", surface.DefaultHistoryBytes), positiveInt64(&s.historyBytes))
	def := shared.DefaultSettings()
	fs.DurationVar(&s.statusCheckpoint, "status-checkpoint-interval", canaryrun.DefaultStatusCheckpointInterval, "How often probe counters and the latest sighting are checkpointed into CanaryRun status while a run probes; what a restart could not observe again (a first negative, a reappearance, a confirmed exclusion, a sentinel sighting) is written when it happens. A restart can widen a run's interval by up to this much. The default keeps an active run under 0.001 status writes per second (docs/scaling.md).")
	fs.DurationVar(&s.statusCheckpoint, "probe-heartbeat", canaryrun.DefaultStatusCheckpointInterval, "Deprecated: the former name of --status-checkpoint-interval.")
	s.defaults = def
	fs.Func("default-requests-per-second", fmt.Sprintf("Rate limit for corpora that set none (default %d).", def.RateLimit.RequestsPerSecond), positiveInt32(&s.defaults.RateLimit.RequestsPerSecond))
	fs.Func("default-burst", fmt.Sprintf("Burst for corpora that set none (default %d).", def.RateLimit.Burst), positiveInt32(&s.defaults.RateLimit.Burst))
	fs.Func("max-reply-bytes-per-corpus", fmt.Sprintf("Reply bytes the operator holds at once for one corpus, over all its calls in flight; a call whose reply finds them taken fails as a probe error (default %d).", def.RateLimit.ReplyBytes), positiveInt64(&s.defaults.RateLimit.ReplyBytes))
	fs.Func("default-successful-runs-history-limit", fmt.Sprintf("Successful runs kept for canaries and suites that set no limit (default %d).", def.SuccessfulRunsHistoryLimit), nonNegativeInt32(&s.defaults.SuccessfulRunsHistoryLimit))
	fs.Func("default-failed-runs-history-limit", fmt.Sprintf("Failed runs kept for canaries and suites that set no limit (default %d).", def.FailedRunsHistoryLimit), nonNegativeInt32(&s.defaults.FailedRunsHistoryLimit))
	s.zapOptions.BindFlags(fs)
	return s, fs.Parse(args)
}

func main() {
	s, err := parseFlags(os.Args[1:])
	if err != nil {
		os.Exit(2)
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&s.zapOptions)))
	if limit := manager.ApplyMemoryLimit(); limit > 0 {
		ctrl.Log.Info("Go memory limit set from the container's", "bytes", limit)
	}
	if err := run(s); err != nil {
		ctrl.Log.Error(err, "manager exited")
		os.Exit(1)
	}
}

// allowlist is the operator's target allowlist. It is required: an operator
// that may call any URL sends credentials wherever a Corpus points.
func (s settings) allowlist() (target.Allowlist, error) {
	return target.AllowlistFromFlags(s.allowedTargetURLs, s.allowAnyTarget)
}

func run(s settings) error {
	allow, err := s.allowlist()
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	metricsOpts, err := s.metrics.Options()
	if err != nil {
		return err
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	cacheOpts, err := shared.ScopeSecrets(shared.CacheOptions(s.watchNamespace), splitList(s.secretNamespaces))
	if err != nil {
		return fmt.Errorf("--secret-namespaces: %w", err)
	}
	replica, err := s.replica()
	if err != nil {
		return err
	}
	cacheOpts = shared.ShardedCache(cacheOpts, replica)
	shutdown := managerShutdown
	opts := ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsOpts,
		HealthProbeBindAddress:  s.probeAddr,
		PprofBindAddress:        s.pprofAddr,
		LeaderElection:          s.leaderElect,
		LeaderElectionID:        "ragcanary.dev",
		LeaderElectionNamespace: s.leaderElectionNS,
		// The process exits as soon as the manager stops, so handing the
		// lease back on a graceful stop is safe, and a rolling upgrade's
		// new Pod takes over at once instead of after the lease expires.
		LeaderElectionReleaseOnCancel: true,
		Cache:                         cacheOpts,
		GracefulShutdownTimeout:       &shutdown,
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	addrs, err := target.AddressPolicyFromFlags(s.deniedCIDRs, s.allowedCIDRs, allow)
	if err != nil {
		return err
	}
	door := &target.Door{Reader: mgr.GetAPIReader(), Allow: allow, Addresses: addrs, UserAgent: target.UserAgent(replica.Name),
		History: surface.NewHistory(s.historyBytes)}
	if err := controllers.SetupAll(mgr, shared.Options{Door: door, StatusCheckpoint: s.statusCheckpoint, SecretCache: &s.secretCache, Defaults: s.defaults, Shard: replica}); err != nil {
		return fmt.Errorf("setting up controllers: %w", err)
	}
	if err := s.setupSharding(mgr, replica); err != nil {
		return fmt.Errorf("setting up sharding: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	ctrl.Log.Info("starting manager", "metricsAddress", s.metrics.BindAddress, "metricsSecure", s.metrics.Secure, "leaderElection", s.leaderElect,
		"sharding", s.sharding, "shardName", replica.Name, "allowedTargets", allow.String(), "targetAddresses", addrs.String())
	return mgr.Start(ctrl.SetupSignalHandler())
}

// managerShutdown is how long the manager waits for its runnables to stop
// (controller-runtime's default), a replica's leave included.
const managerShutdown = 30 * time.Second

// replica is this process's place among the replicas. Sharding needs
// leader election: the sharder must run on exactly one replica.
func (s settings) replica() (shard.Replica, error) {
	if !s.sharding {
		return shard.Replica{Name: s.shardName}, nil
	}
	if !s.leaderElect {
		return shard.Replica{}, errors.New("--sharding needs --leader-elect: one elected replica assigns the shares")
	}
	if s.shardRenew <= 0 || s.shardLease <= 2*s.shardRenew {
		return shard.Replica{}, errors.New("--shard-lease-duration must be more than twice --shard-renew-interval")
	}
	if s.shardDrain < 0 || s.shardDrain >= managerShutdown {
		return shard.Replica{}, fmt.Errorf("--shard-drain-timeout must be at least 0 and under %s, the manager's shutdown bound", managerShutdown)
	}
	return shard.Replica{Name: s.shardName, Sharded: true}, shard.CheckName(s.shardName)
}

// setupSharding adds the shard Lease keeper and the sharder when sharding.
func (s settings) setupSharding(mgr ctrl.Manager, replica shard.Replica) error {
	if !replica.Sharded {
		return nil
	}
	ns, err := shard.Namespace(s.leaderElectionNS)
	if err != nil {
		return err
	}
	return shared.SetupSharding(mgr, shared.ShardingOptions{Replica: replica, Namespace: ns,
		WatchNamespace: s.watchNamespace, LeaseDuration: s.shardLease, RenewInterval: s.shardRenew, Drain: s.shardDrain})
}

// positiveInt32 parses a flag value that must be at least 1.
func positiveInt32(into *int32) func(string) error {
	return boundedInt32(into, 1)
}

// positiveInt64 parses a flag value that must be at least 1.
func positiveInt64(into *int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return errors.New("must be an integer of at least 1")
		}
		*into = n
		return nil
	}
}

// nonNegativeInt32 parses a flag value that must be at least 0.
func nonNegativeInt32(into *int32) func(string) error {
	return boundedInt32(into, 0)
}

func boundedInt32(into *int32, least int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < least {
			return fmt.Errorf("must be an integer of at least %d", least)
		}
		*into = int32(n)
		return nil
	}
}

func splitList(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
