package controllers

import (
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ragcanary/ragcanary/internal/corpusdriver"
)

// Options are the dependencies and operator settings shared by the reconcilers.
type Options struct {
	// Drivers builds the driver for a Corpus.
	Drivers corpusdriver.Factory
	// Clock drives lifecycle steps and probes. Tests keep it real: probes
	// measure real latency against a real target.
	Clock clock.WithTicker
	// ScheduleClock decides when scheduled runs are due. Tests replace it with
	// a fake clock to step through schedules without waiting.
	ScheduleClock clock.Clock
}

// SetupAll registers every reconciler with the manager. Both the manager
// binary and the envtest suite call it, so tests exercise the same wiring.
func SetupAll(mgr ctrl.Manager, opts Options) error {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.ScheduleClock == nil {
		opts.ScheduleClock = opts.Clock
	}
	setups := []func() error{
		func() error {
			return (&PersonaReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader()}).SetupWithManager(mgr)
		},
		func() error {
			return (&RevocationCanaryReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Clock: opts.ScheduleClock, Recorder: mgr.GetEventRecorder("revocationcanary-controller")}).SetupWithManager(mgr)
		},
		func() error {
			return (&CorpusReconciler{Client: mgr.GetClient(), Drivers: opts.Drivers, Clock: opts.Clock}).SetupWithManager(mgr)
		},
	}
	for _, setup := range setups {
		if err := setup(); err != nil {
			return err
		}
	}
	return nil
}
