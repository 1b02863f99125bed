// Package probe asks a corpus, as a persona, whether the canary is still
// there. An Engine runs one probe loop per active CanaryRun, at the stage
// the controller asks for (waiting for visibility, or measuring exclusion
// after the revocation); each round probes every planned surface through the
// run's driver, rate-limited per corpus, and classifies each reply
// (Probe, ProbeContent) into a measure.Outcome recorded in an in-memory
// State. The controller reads a Snapshot of that State and persists it; the
// Engine only tells it when a transition needs persisting promptly
// (OnTransition). NextDue spaces the rounds: every jittered interval, or
// adaptively so each bound is bracketed to within the run's precision.
//
// A Plan and a Target hold credentials and the canary's secret handle and
// payload: nothing in this package logs or prints them.
package probe
