// Package controllers holds the ragcanary reconcilers. RevocationCanary and
// EvalSuite create runs on a schedule or on request, keep their history
// bounded and summarise the latest finished run. A CanaryRun plants a canary
// document, waits until the persona sees it, revokes access and, through the
// probe engine, measures how long each surface keeps serving it; a SuiteRun
// executes an evaluation suite against a corpus and scores the replies.
// Corpus and Persona report Ready with a reason a person can act on.
//
// Every reconciler reaches a system under test through one target.Door and
// emits events only on transitions. The short status fields printer columns
// show are formatted by internal/format, never by the kubectl plugin's
// package. SetupAll wires the reconcilers to a manager.
//
// Each kind lives in its own package: canaryrun, revocationcanary,
// evalsuite, suiterun, corpus and persona; what they share is in
// controllers/shared. No kind's package imports another's. This package
// wires them together and holds the envtest suite that runs them all.
package controllers
