package shared

import (
	"sync"
	"time"

	"github.com/ragcanary/ragcanary/internal/probe"
	"github.com/ragcanary/ragcanary/internal/secretcache"
	"github.com/ragcanary/ragcanary/internal/shard"
	"github.com/ragcanary/ragcanary/internal/target"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
	// Secrets is the Door's Secret reader, which the Persona and
	// CanaryRun reconcilers share; SetupAll sets it (completeOptions).
	Secrets client.Reader
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

// WithFallbacks treats an all-zero Defaults (as in tests) as an unconfigured
// operator, and never lets a rate limit be zero.
func (d Defaults) WithFallbacks() Defaults {
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

// NewParentReconciler wires a scheduling reconciler: schedules run on the
// schedule clock, history limits default to the operator's.
func NewParentReconciler(mgr ctrl.Manager, c client.Client, opts Options, recorderName string) ParentReconciler {
	return ParentReconciler{Client: c, APIReader: mgr.GetAPIReader(), Clock: opts.ScheduleClock,
		Recorder: mgr.GetEventRecorder(recorderName), History: opts.Defaults.History(), Held: &sync.Map{},
		Created: NewCreatedRuns(), Shard: opts.Shard, ForgetCanary: opts.ForgetCanary, ForgetSuite: opts.ForgetSuite}
}

func (d Defaults) History() HistoryDefaults {
	return HistoryDefaults{successful: d.SuccessfulRunsHistoryLimit, failed: d.FailedRunsHistoryLimit}
}
