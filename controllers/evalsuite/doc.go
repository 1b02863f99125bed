// Package evalsuite reconciles EvalSuites: it creates SuiteRuns on the
// suite's schedule or on run-now (through controllers/shared's run
// scheduler), keeps their history and report ConfigMaps bounded
// (reports.go), and summarises the latest finished run in the Passed
// condition (controller.go).
package evalsuite
