package v1alpha1

// The vocabulary users and tools see: condition types, condition and event
// reasons, and the label and annotation keys ragcanary reads or writes. It
// is defined here once; controllers, the door, the CLI and the charts'
// tests use these names. Alerts, kubectl filters and dashboards match on
// these strings, so changing one is an API change.

// Condition types.
const (
	// ConditionReady summarises whether a Corpus or Persona is usable.
	ConditionReady = "Ready"
	// ConditionComplete is True once a CanaryRun reached Succeeded or
	// Failed; its reason is the verdict.
	ConditionComplete = "Complete"
	// ConditionCleanupPending is True while a CanaryRun's canary document
	// could not yet be removed from the target.
	ConditionCleanupPending = "CleanupPending"
	// ConditionWaiting is True while an object a CanaryRun references is
	// missing or unusable; the run waits instead of failing.
	ConditionWaiting = "Waiting"
	// ConditionTargetChanged is True once a run's Corpus named another
	// target than the one the canary was planted in; the run then probes,
	// revokes and cleans up through its kept copy, or, when that copy
	// cannot reach the planted target, ends Inconclusive.
	ConditionTargetChanged = "TargetChanged"
	// ConditionSLOMet on a RevocationCanary reports whether the latest
	// finished run met its SLO.
	ConditionSLOMet = "SLOMet"
	// ConditionPassed on an EvalSuite reports its latest finished run; on a
	// SuiteRun, whether the run passed.
	ConditionPassed = "Passed"
	// ConditionFixtureRemoved on a SuiteRun with a fixture is True once
	// every planted document and membership is gone from the target.
	ConditionFixtureRemoved = "FixtureRemoved"
)

// Reasons about credentials and Secrets (Corpus, Persona, CanaryRun).
const (
	ReasonSecretNotFound = "SecretNotFound"
	ReasonKeyNotFound    = "KeyNotFound"
	ReasonSecretFound    = "CredentialFound"
	// ReasonTokenIssued: the persona's OAuth2 token endpoint issued it a
	// token.
	ReasonTokenIssued = "TokenIssued"
	// ReasonInvalidRevocation: spec.oauth2.revocation declares a request
	// the operator cannot send (named in the message).
	ReasonInvalidRevocation = "InvalidRevocation"
	// ReasonSecretNotLabeled: the Secret exists but does not carry
	// LabelCredential, so the operator will not read it.
	ReasonSecretNotLabeled = "SecretNotLabeled"
	// ReasonSecretAccessDenied: the operator's RBAC does not let it read
	// Secrets in the namespace (the chart binds Secret access only in
	// secretNamespaces).
	ReasonSecretAccessDenied = "SecretAccessDenied"
)

// Corpus Ready reasons.
const (
	// ReasonReachable: the target answered its capabilities check with a
	// supported contract.
	ReasonReachable = "Reachable"
	// ReasonUnreachable: the target could not be reached or failed the check.
	ReasonUnreachable = "Unreachable"
	// ReasonContractMismatch: the target speaks a contract version
	// ragcanary does not.
	ReasonContractMismatch = "ContractMismatch"
	// ReasonCredentialRejected: the target refused the corpus credential.
	ReasonCredentialRejected = "CredentialRejected"
	// ReasonPermissionsSchemaMismatch: the permissions backend's schema
	// lacks a definition or relation the corpus's mapping names.
	ReasonPermissionsSchemaMismatch = "PermissionsSchemaMismatch"
	// ReasonURLNotAllowed: a URL of the spec is outside the operator's
	// allowlist or resolves to an address it refuses.
	ReasonURLNotAllowed = "URLNotAllowed"
	// ReasonInvalidURL: a URL of the spec does not parse.
	ReasonInvalidURL = "InvalidURL"
	// ReasonDriverUnsupported: spec.driver names a type this build lacks.
	ReasonDriverUnsupported = "DriverUnsupported"
	// ReasonInvalidRESTSource: spec.driver.rest declares something the
	// operator cannot build (named in the message).
	ReasonInvalidRESTSource = "InvalidRESTSource"
	// ReasonInvalidSurface: a spec.surfaces entry the operator cannot build
	// (a bad template, pointer or header), named in the message.
	ReasonInvalidSurface = "InvalidSurface"
	// ReasonStatementInvalid: a Postgres statement (named in the message)
	// does not prepare, takes more parameters than its operation passes, or
	// search returns other columns than (chunk id, document id, score).
	ReasonStatementInvalid = "StatementInvalid"
	// ReasonReaderBypassesRLS: the Postgres reader role is a superuser, has
	// BYPASSRLS, or owns the reference tables without forced row-level
	// security, so every isolation result would be meaningless.
	ReasonReaderBypassesRLS = "ReaderBypassesRLS"
	// ReasonReaderNotCaughtUp: the Postgres reader is a standby still
	// replaying what the writer holds; a wait, re-checked within seconds,
	// not a statement to fix.
	ReasonReaderNotCaughtUp = "ReaderNotCaughtUp"
)

// Reasons on RevocationCanary and CanaryRun conditions and events. Verdict
// names are reasons too.
const (
	ReasonInvalidSchedule = "InvalidSchedule"
	ReasonCorpusNotFound  = "CorpusNotFound"
	ReasonPersonaNotFound = "PersonaNotFound"
	ReasonScheduled       = "Scheduled"
	ReasonSuspended       = "Suspended"
	ReasonNoRunFinished   = "NoRunFinished"
	ReasonNoVerdict       = "NoVerdict"
	ReasonRunCreated      = "RunCreated"
	ReasonRecovered       = "Recovered"
	// ReasonTooManyActiveRuns: a due run waits because maxActiveRuns are
	// active.
	ReasonTooManyActiveRuns = "TooManyActiveRuns"
	ReasonCleanupFailed     = "CleanupFailed"
	ReasonCleanedUp         = "CleanedUp"
	ReasonCleanupAbandoned  = "CleanupAbandoned"
	// ReasonCleanupRejected: the target refused the cleanup call; retrying
	// the same call cannot help, so it is re-checked rarely.
	ReasonCleanupRejected = "CleanupRejected"
	// ReasonTargetChanged is ConditionTargetChanged's reason, and that of
	// the Warning event sent when the change is first seen.
	ReasonTargetChanged = "TargetChanged"
	// ReasonSourceRetrying: a source-side step failed transiently and is
	// retried until the phase deadline.
	ReasonSourceRetrying = "SourceRetrying"
	// ReasonConversationNotShowingCanary: the first turn of the
	// conversation a run starts before revoking did not show the canary
	// yet; it is retried with a new conversation until the deadline.
	ReasonConversationNotShowingCanary = "ConversationNotShowingCanary"
	// ReasonInFlightNotShowingCanary: a stream opened before the
	// revocation ended before it could be requested, or without showing
	// the canary; the streams are opened again until the deadline.
	ReasonInFlightNotShowingCanary = "InFlightNotShowingCanary"
	// ReasonSentinelSighting is the reason of the Warning event on a
	// sentinel's first sighting.
	ReasonSentinelSighting = "SentinelSighting"
)

// Reasons on EvalSuite and SuiteRun conditions and events.
const (
	// ReasonOnDemand: the suite has no schedule and runs only on run-now.
	ReasonOnDemand = "OnDemand"
	// ReasonSuitePassed: every gate passed and every execution got a reply.
	ReasonSuitePassed = "SuitePassed"
	// ReasonSuiteFailed: the run finished and did not pass.
	ReasonSuiteFailed = "SuiteFailed"
	// ReasonDisclosureDetected: a persona got evidence outside its allowed
	// set.
	ReasonDisclosureDetected = "DisclosureDetected"
	// ReasonProbeErrors: some executions got no usable reply, so the run
	// cannot claim a pass.
	ReasonProbeErrors = "ProbeErrors"
	// ReasonGatesFailed: a quality or citation gate failed.
	ReasonGatesFailed = "GatesFailed"
	// ReasonRunning: executions are in progress.
	ReasonRunning = "Running"
	// ReasonFinished: every execution was attempted and scored.
	ReasonFinished = "Finished"
	// ReasonSuiteNotFound: the run's suite does not exist.
	ReasonSuiteNotFound = "SuiteNotFound"
	// ReasonReportConflict: the report ConfigMap's name is taken by another
	// object.
	ReasonReportConflict = "ReportConflict"
	// ReasonInvalidCases: the suite's cases, or its fixture (duplicate IDs,
	// unparsable or overlapping validity intervals), are wrong; the message
	// names the case or document and the field.
	ReasonInvalidCases = "InvalidCases"
	// ReasonConfigMapNotFound: the ConfigMap holding the cases is missing.
	ReasonConfigMapNotFound = "ConfigMapNotFound"
	// ReasonFixturePlantFailed: the target refused or failed a planting
	// call.
	ReasonFixturePlantFailed = "FixturePlantFailed"
	// ReasonFixtureNotVisible: planted documents did not become retrievable
	// within spec.fixture.visibilityTimeout.
	ReasonFixtureNotVisible = "FixtureNotVisible"
	// ReasonFixtureRemoved: everything a fixture planted was removed.
	ReasonFixtureRemoved = "FixtureRemoved"
	// ReasonFixtureRemovalFailed: the target failed a removal; retried.
	ReasonFixtureRemovalFailed = "FixtureRemovalFailed"
	// ReasonFixtureRemovalPending: the run ended before it could use a
	// fixture an earlier attempt planted; removal follows.
	ReasonFixtureRemovalPending = "FixtureRemovalPending"
	// ReasonFixtureAbandoned: the run was deleted and its corpus or plan no
	// longer resolves, so planted documents may remain at the target.
	ReasonFixtureAbandoned = "FixtureAbandoned"
)

// Label keys and values.
const (
	// LabelCanary on a CanaryRun names the RevocationCanary whose series
	// its measurements belong to (schedule.LabelValue of the name), also
	// for runs made from a canary's spec without an owner reference
	// (kubectl ragcanary run). Listing also checks the owner reference, so
	// the label only narrows the query.
	LabelCanary = "ragcanary.dev/canary"
	// LabelSuite on a SuiteRun and its report ConfigMap names the
	// EvalSuite (schedule.LabelValue of the name).
	LabelSuite = "ragcanary.dev/suite"
	// LabelReport marks a run's report ConfigMap (its plan, report and
	// frozen evidence), so retention finds reports by label and never
	// touches other ConfigMaps of the suite.
	LabelReport = "ragcanary.dev/report"
	// LabelRun on a Secret a run created names the run (shortened with a
	// hash when the name is longer than a label value may be).
	LabelRun = "ragcanary.dev/run"
	// LabelManagedBy with value ManagedBy marks the Secrets a run creates,
	// so they can be told apart from the user's (see docs/secrets.md).
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "ragcanary"
	// LabelCredential with value LabelCredentialValue marks a Secret as
	// meant for ragcanary. Without it the operator refuses to read the
	// Secret, so whoever may create a Corpus or Persona cannot make the
	// operator send an arbitrary Secret of the namespace to a target.
	LabelCredential      = "ragcanary.dev/credential"
	LabelCredentialValue = "true"
	// LabelShardOwner names the replica that reconciles an object.
	LabelShardOwner = "shard.ragcanary.dev/owner"
	// LabelShardDrain asks the owner to let an object go.
	LabelShardDrain = "shard.ragcanary.dev/drain"
	// LabelShardLease marks the replicas' shard Leases.
	LabelShardLease = "ragcanary.dev/shard-lease"
)

// Annotation keys.
const (
	// AnnotationRunNow on a RevocationCanary or EvalSuite asks for one run
	// at once; its value is any new string (for example a timestamp), so
	// setting it again to a new value asks for another run.
	AnnotationRunNow = "ragcanary.dev/run-now"
	// AnnotationScheduledTime on a CanaryRun or SuiteRun is the RFC 3339
	// scheduled time it was created for, so the last schedule time can be
	// recovered from the runs themselves if status is lost or read stale.
	AnnotationScheduledTime = "ragcanary.dev/scheduled-time"
	// AnnotationCompletedAt on a finished SuiteRun is its completion time
	// with sub-second precision: status.completionTime has whole seconds,
	// and two runs finishing within one second must still be ordered, or
	// history pruning could delete the newest run.
	AnnotationCompletedAt = "ragcanary.dev/completed-at"
	// AnnotationRunUID on a report ConfigMap names the run that wrote it:
	// the ConfigMap is owned by the suite, so the owner cannot say which
	// run.
	AnnotationRunUID = "ragcanary.dev/run-uid"
)

// Finalizers.
const (
	// FinalizerCanaryRun removes the canary document from the target before
	// a run is deleted.
	FinalizerCanaryRun = "ragcanary.dev/cleanup"
	// FinalizerRevocationCanary holds a RevocationCanary being deleted until
	// its runs are gone. Each run's own finalizer (FinalizerCanaryRun)
	// revokes and deletes its canary document, so nothing the canary
	// planted outlives it, whether or not a garbage collector removes owned
	// objects (envtest has none, and `kubectl delete --cascade=orphan` asks
	// it not to).
	FinalizerRevocationCanary = "ragcanary.dev/runs"
)
