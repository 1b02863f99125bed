// Package canaryrun reconciles CanaryRuns: one run plants a canary document,
// shares it with a persona, waits until the persona sees it, revokes the
// access and measures, through the probe engine, how long each surface
// keeps serving it; then it removes what it planted.
//
// The state machine reads top to bottom in steps.go, one step per phase:
//
//	Pending            start            resolve references, fix names
//	Planting           plant            write the canary document
//	Sharing            share            grant the persona access
//	AwaitingVisibility awaitVisibility  probe until the persona sees it
//	Revoking           revoke           revoke by the run's method
//	AwaitingExclusion  awaitExclusion   probe until every surface excludes it
//	Watching           watch            a sentinel, probed by controls only
//	CleaningUp         cleanUp          remove the document and Secrets
//
// controller.go holds the reconcile loop, persisting and the step table;
// the rest are what the steps call: refs.go (references and the door),
// recipe.go (the run's kept target identity), token.go (the canary token
// and its Secret), captures.go (source-side identifiers), conversation.go,
// inflight.go and freshness.go (the surfaces beyond search and answer),
// sentinel.go and sentinel_status.go (sentinels), schedule.go (adaptive
// probing), status.go (verdicts and conditions), cleanup.go (finalizers and
// Secret release) and sharding.go (handing a run to another replica).
package canaryrun
