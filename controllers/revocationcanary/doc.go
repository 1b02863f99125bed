// Package revocationcanary reconciles RevocationCanaries: it creates
// CanaryRuns on the canary's schedule or on run-now (through
// controllers/shared's run scheduler), keeps their history bounded, and
// summarises the latest finished run in status.lastRun and the SLOMet
// condition. It has no phases of its own; controller.go holds it all.
package revocationcanary
