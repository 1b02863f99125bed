// Package schedule holds the pure scheduling decisions shared by the
// scheduling kinds (RevocationCanary → CanaryRun, EvalSuite → SuiteRun):
// parsing a v1alpha1.Schedule, finding the scheduled time that is due now
// (with CronJob-like missed-run handling), deterministic jitter and run
// names, run-now tokens, concurrency policy and history pruning.
//
// Everything here works on plain values and takes the current time as an
// argument, so a reconciler can be replayed and the logic is table-tested
// without a clock. Scheduled times are whole seconds in UTC because status
// timestamps are persisted with second precision: a time written to status
// and read back must name the same run.
package schedule
