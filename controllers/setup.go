package controllers

import (
	"errors"

	"github.com/ragcanary/ragcanary/controllers/canaryrun"
	"github.com/ragcanary/ragcanary/controllers/corpus"
	"github.com/ragcanary/ragcanary/controllers/evalsuite"
	"github.com/ragcanary/ragcanary/controllers/persona"
	"github.com/ragcanary/ragcanary/controllers/revocationcanary"
	"github.com/ragcanary/ragcanary/controllers/suiterun"

	"github.com/ragcanary/ragcanary/controllers/shared"

	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/internal/measure"
	"github.com/ragcanary/ragcanary/internal/metrics"
	"github.com/ragcanary/ragcanary/internal/probe"
	"github.com/ragcanary/ragcanary/internal/secretcache"
	"github.com/ragcanary/ragcanary/internal/target"
)

// SetupAll registers every reconciler and the object collector with the
// manager. Both the manager binary and the envtest suite call it, so tests
// exercise the same wiring.
func SetupAll(mgr ctrl.Manager, opts shared.Options) error {
	opts, err := completeOptions(mgr, opts)
	if err != nil {
		return err
	}
	if err := shared.AddRunnable(mgr, opts, shared.NewObjectCollector(mgr, opts)); err != nil {
		return err
	}
	return setupReconcilers(mgr, opts)
}

// completeOptions fills in what SetupAll's callers may leave unset, adding
// a probe engine to the manager when opts has none.
func completeOptions(mgr ctrl.Manager, opts shared.Options) (shared.Options, error) {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	// Lifecycle and probe timestamps follow the monotonic clock, so a wall
	// clock step while the operator runs cannot shrink a bound.
	opts.Clock = measure.Steady(opts.Clock)
	if opts.ScheduleClock == nil {
		opts.ScheduleClock = opts.Clock
	}
	opts.Defaults = opts.Defaults.WithFallbacks()
	if opts.ForgetCanary == nil {
		opts.ForgetCanary = metrics.Forget
	}
	if opts.ForgetSuite == nil {
		opts.ForgetSuite = metrics.ForgetSuite
	}
	if opts.Probes == nil {
		opts.Probes = probe.NewEngine(opts.Clock, target.NewLimiters(opts.Clock))
		if err := shared.AddRunnable(mgr, opts, opts.Probes); err != nil {
			return opts, err
		}
	}
	if opts.Door == nil {
		return opts, errors.New("controllers: shared.Options.Door is required")
	}
	door := *opts.Door
	door.Reader = secretReader(mgr, door.Reader, opts.SecretCache)
	opts.Secrets = door.Reader
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
func setupReconcilers(mgr ctrl.Manager, opts shared.Options) error {
	c := shared.NewUncachedConfigMaps(mgr.GetClient(), mgr.GetAPIReader())
	setups := []func() error{
		func() error {
			return (&persona.PersonaReconciler{Client: c, Secrets: opts.Secrets, Door: opts.Door}).SetupWithManager(mgr)
		},
		func() error {
			return (&revocationcanary.RevocationCanaryReconciler{ParentReconciler: shared.NewParentReconciler(mgr, c, opts, "revocationcanary-controller")}).SetupWithManager(mgr)
		},
		func() error {
			return (&corpus.CorpusReconciler{Client: c, Door: opts.Door, Clock: opts.Clock}).SetupWithManager(mgr)
		},
		func() error {
			return (&canaryrun.CanaryRunReconciler{Client: c, APIReader: mgr.GetAPIReader(), Secrets: opts.Secrets, Door: opts.Door,
				Clock: opts.Clock, Probes: opts.Probes, Checkpoint: opts.StatusCheckpoint, Shard: opts.Shard,
				Recorder: mgr.GetEventRecorder("canaryrun-controller")}).SetupWithManager(mgr)
		},
		func() error {
			return (&evalsuite.EvalSuiteReconciler{ParentReconciler: shared.NewParentReconciler(mgr, c, opts, "evalsuite-controller")}).SetupWithManager(mgr)
		},
		func() error {
			// Suites draw from the same per-corpus limiters as the canary probes.
			return (&suiterun.SuiteRunReconciler{Client: c, APIReader: mgr.GetAPIReader(), Door: opts.Door, Clock: opts.Clock,
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
