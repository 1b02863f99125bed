// Package suiterun reconciles SuiteRuns through their phases:
//
//	Pending    controller.go  start: the run is marked Running
//	Running    execute.go     plan the run (freeze the suite's cases and the
//	                          report name), run every case as every persona,
//	                          score the replies
//	Succeeded  status.go      finish: the report, the Passed condition,
//	Failed                    events and metrics
//
// cleanup.go removes what a run's fixture planted and releases the run's
// finalizer, whatever the phase.
package suiterun
