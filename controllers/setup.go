package controllers

import (
	"errors"
	"sync"
	"time"

	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/internal/measure"
	"github.com/ragcanary/ragcanary/internal/metrics"
	"github.com/ragcanary/ragcanary/internal/probe"
	"github.com/ragcanary/ragcanary/internal/secretcache"
	"github.com/ragcanary/ragcanary/internal/shard"
	"github.com/ragcanary/ragcanary/internal/target"
)

// Options are the dependencies and operator settings shared by the reconcilers.
type Options struct {
	// Door is how every reconciler reaches a system under test. SetupAll
	// fills in its rate limiters (shared with the probe engine) and default
	// rate limit.
	Door *target.Door
	// Clock drives lifecycle steps and probes. Tests keep it real: probes
	// measure real latency against a real target.
	Clock clock.WithTicker
	// ScheduleClock decides when scheduled runs are due. Tests replace it with
	// a fake clock to step through schedules without waiting.
	ScheduleClock clock.Clock
	// Probes runs canary probe loops. SetupAll creates one and adds it to
	// the manager when nil; a caller passing one (to share its per-corpus
	// rate limiters) adds it to the manager itself.
	Probes *probe.Engine
	// StatusCheckpoint is how often probe results reach CanaryRun status
	// between transitions; DefaultStatusCheckpointInterval when zero.
	StatusCheckpoint time.Duration
	// Defaults apply where an object leaves a setting unset; the operator's
	// flags set them, so platform teams tune them once for the fleet.
	Defaults Defaults
	// Shard is this replica's place among the replicas; the zero value is
	// one replica doing everything (with leader election).
	Shard shard.Replica
	// ForgetCanary and ForgetSuite drop a canary's or suite's metric series
	// when it leaves this replica; metrics.Forget and metrics.ForgetSuite
	// when nil.
	ForgetCanary, ForgetSuite func(namespace, name string)
	// SecretCache bounds the memory cache of credential and run token
	// Secret values (package secretcache); its defaults when nil, none
	// when MaxEntries ≤ 0.
	SecretCache *secretcache.Limits
	// secrets is the Door's Secret reader, which the Persona and
	// CanaryRun reconcilers share (completeOptions).
	secrets client.Reader
}

// Defaults are the operator-wide values for settings objects may leave unset.
type Defaults struct {
	// RateLimit applies to a Corpus without spec.rateLimit values.
	RateLimit target.Limit
	// SuccessfulRunsHistoryLimit and FailedRunsHistoryLimit apply to
	// canaries and suites without their own limits.
	SuccessfulRunsHistoryLimit int32
	FailedRunsHistoryLimit     int32
}

// DefaultSettings are the Defaults when the operator is not configured.
func DefaultSettings() Defaults {
	return Defaults{
		RateLimit:                  target.DefaultLimit,
		SuccessfulRunsHistoryLimit: 3,
		FailedRunsHistoryLimit:     3,
	}
}

// withFallbacks treats an all-zero Defaults (as in tests) as an unconfigured
// operator, and never lets a rate limit be zero.
func (d Defaults) withFallbacks() Defaults {
	if d == (Defaults{}) {
		return DefaultSettings()
	}
	def := DefaultSettings()
	if d.RateLimit.RequestsPerSecond <= 0 {
		d.RateLimit.RequestsPerSecond = def.RateLimit.RequestsPerSecond
	}
	if d.RateLimit.Burst <= 0 {
		d.RateLimit.Burst = def.RateLimit.Burst
	}
	return d
}

// SetupAll registers every reconciler and the object collector with the
// manager. Both the manager binary and the envtest suite call it, so tests
// exercise the same wiring.
func SetupAll(mgr ctrl.Manager, opts Options) error {
	opts, err := completeOptions(mgr, opts)
	if err != nil {
		return err
	}
	if err := addRunnable(mgr, opts, newObjectCollector(mgr, opts)); err != nil {
		return err
	}
	return setupReconcilers(mgr, opts)
}

// completeOptions fills in what SetupAll's callers may leave unset, adding
// a probe engine to the manager when opts has none.
func completeOptions(mgr ctrl.Manager, opts Options) (Options, error) {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	// Lifecycle and probe timestamps follow the monotonic clock, so a wall
	// clock step while the operator runs cannot shrink a bound.
	opts.Clock = measure.Steady(opts.Clock)
	if opts.ScheduleClock == nil {
		opts.ScheduleClock = opts.Clock
	}
	opts.Defaults = opts.Defaults.withFallbacks()
	if opts.ForgetCanary == nil {
		opts.ForgetCanary = metrics.Forget
	}
	if opts.ForgetSuite == nil {
		opts.ForgetSuite = metrics.ForgetSuite
	}
	if opts.Probes == nil {
		opts.Probes = probe.NewEngine(opts.Clock, target.NewLimiters(opts.Clock))
		if err := addRunnable(mgr, opts, opts.Probes); err != nil {
			return opts, err
		}
	}
	if opts.Door == nil {
		return opts, errors.New("controllers: Options.Door is required")
	}
	door := *opts.Door
	door.Reader = secretReader(mgr, door.Reader, opts.SecretCache)
	opts.secrets = door.Reader
	door.Limiters = opts.Probes.Limiters()
	door.DefaultLimit = opts.Defaults.RateLimit
	opts.Door = &door
	return opts, nil
}

// secretReader serves the Secret reads of the door and of run tokens from
// a bounded value cache checked against the manager's metadata-only Secret
// informer (package secretcache), reading from api when the cache is off.
// api may be nil in a door that reads no Secret.
func secretReader(mgr ctrl.Manager, api client.Reader, limits *secretcache.Limits) client.Reader {
	if api == nil {
		api = mgr.GetAPIReader()
	}
	l := secretcache.DefaultLimits
	if limits != nil {
		l = *limits
	}
	if l.MaxEntries <= 0 {
		return api
	}
	return secretcache.New(api, mgr.GetCache(), l)
}

// setupReconcilers registers every reconciler, without the object
// collector: that one registers on the process-wide metrics registry, so a
// test running a second manager in the process sets up only these. Every
// reconciler reads ConfigMaps from the API server (see uncachedConfigMaps).
func setupReconcilers(mgr ctrl.Manager, opts Options) error {
	c := newUncachedConfigMaps(mgr.GetClient(), mgr.GetAPIReader())
	setups := []func() error{
		func() error {
			return (&PersonaReconciler{Client: c, Secrets: opts.secrets}).SetupWithManager(mgr)
		},
		func() error {
			return (&RevocationCanaryReconciler{newParentReconciler(mgr, c, opts, "revocationcanary-controller")}).SetupWithManager(mgr)
		},
		func() error {
			return (&CorpusReconciler{Client: c, Door: opts.Door, Clock: opts.Clock}).SetupWithManager(mgr)
		},
		func() error {
			return (&CanaryRunReconciler{Client: c, APIReader: mgr.GetAPIReader(), Secrets: opts.secrets, Door: opts.Door,
				Clock: opts.Clock, Probes: opts.Probes, Checkpoint: opts.StatusCheckpoint, Shard: opts.Shard,
				Recorder: mgr.GetEventRecorder("canaryrun-controller")}).SetupWithManager(mgr)
		},
		func() error {
			return (&EvalSuiteReconciler{newParentReconciler(mgr, c, opts, "evalsuite-controller")}).SetupWithManager(mgr)
		},
		func() error {
			// Suites draw from the same per-corpus limiters as the canary probes.
			return (&SuiteRunReconciler{Client: c, APIReader: mgr.GetAPIReader(), Door: opts.Door, Clock: opts.Clock,
				Shard: opts.Shard, Recorder: mgr.GetEventRecorder("suiterun-controller")}).SetupWithManager(mgr)
		},
	}
	for _, setup := range setups {
		if err := setup(); err != nil {
			return err
		}
	}
	return nil
}

// newParentReconciler wires a scheduling reconciler: schedules run on the
// schedule clock, history limits default to the operator's.
func newParentReconciler(mgr ctrl.Manager, c client.Client, opts Options, recorderName string) parentReconciler {
	return parentReconciler{Client: c, APIReader: mgr.GetAPIReader(), Clock: opts.ScheduleClock,
		Recorder: mgr.GetEventRecorder(recorderName), History: opts.Defaults.history(), held: &sync.Map{},
		created: newCreatedRuns(), Shard: opts.Shard, forgetCanary: opts.ForgetCanary, forgetSuite: opts.ForgetSuite}
}

func (d Defaults) history() historyDefaults {
	return historyDefaults{successful: d.SuccessfulRunsHistoryLimit, failed: d.FailedRunsHistoryLimit}
}
