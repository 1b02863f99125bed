package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Expectation is what one persona should get for a case. relevantIDs must be
// a subset of allowedIDs; the suite controller checks that (a CEL rule over
// two lists this size exceeds the API server's cost budget) and marks the
// suite not Ready naming the case. An expectation is v1 (relevantIDs,
// allowedIDs, mustAbstain) or v2 (action and the evidence fields), not both.
// +kubebuilder:validation:XValidation:rule="!has(self.action) || (!has(self.relevantIDs) && !has(self.allowedIDs) && !has(self.mustAbstain))",message="an expectation with action (v2) must not set relevantIDs, allowedIDs or mustAbstain (v1): use allowedEvidence and requiredEvidence"
// +kubebuilder:validation:XValidation:rule="has(self.action) || (!has(self.allowedEvidence) && !has(self.requiredEvidence) && !has(self.requiredAnyOf) && !has(self.forbiddenEvidence) && !has(self.supersededEvidence) && !has(self.expectedCitations) && !has(self.internalReason) && !has(self.publicResponseClass) && !has(self.forbiddenMarkers))",message="v2 evidence fields need action (answer, block, not_found, not_applicable, clarify or conflict)"
type Expectation struct {
	// persona names the Persona, in the same namespace, this expectation is for.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Persona string `json:"persona"`

	// relevantIDs are the evidence IDs that answer the question for this persona.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=256
	RelevantIDs []string `json:"relevantIDs,omitempty"`

	// allowedIDs are every evidence ID this persona may see. Anything else
	// returned or cited is forbidden. Empty means the persona may see nothing.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=500
	// +kubebuilder:validation:items:MaxLength=256
	AllowedIDs []string `json:"allowedIDs,omitempty"`

	// mustAbstain is true when the persona must get a block or not-found.
	// +optional
	MustAbstain bool `json:"mustAbstain,omitempty"`

	// action is the v2 expectation: what the system should do for this
	// persona. Setting it makes the expectation v2; the v1 fields
	// (relevantIDs, allowedIDs, mustAbstain) must then be unset.
	// +optional
	Action ExpectedAction `json:"action,omitempty"`

	// allowedEvidence are the evidence IDs this persona may see (v2). May be
	// omitted in a suite with a fixture: it is then derived from the
	// fixture's principals, the persona's subject and groups and the case's
	// asOf, never from what the target returns.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=500
	// +kubebuilder:validation:items:MaxLength=256
	AllowedEvidence []string `json:"allowedEvidence,omitempty"`

	// requiredEvidence is the recall target, a subset of allowedEvidence.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=256
	RequiredEvidence []string `json:"requiredEvidence,omitempty"`

	// requiredAnyOf lists alternative evidence sets, any one of which is
	// sufficient support; each set is a subset of allowedEvidence.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxItems=16
	RequiredAnyOf [][]string `json:"requiredAnyOf,omitempty"`

	// forbiddenEvidence names evidence this persona must never get; anything
	// outside allowedEvidence is forbidden too.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=500
	// +kubebuilder:validation:items:MaxLength=256
	ForbiddenEvidence []string `json:"forbiddenEvidence,omitempty"`

	// supersededEvidence are older versions: support only from them is
	// stale. Derived from the fixture like allowedEvidence when omitted.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=256
	SupersededEvidence []string `json:"supersededEvidence,omitempty"`

	// expectedCitations are the evidence IDs a good answer cites.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=256
	ExpectedCitations []string `json:"expectedCitations,omitempty"`

	// internalReason is why the system should not answer, for non-answer actions.
	// +optional
	InternalReason InternalReason `json:"internalReason,omitempty"`

	// publicResponseClass is the class of reply the persona should see,
	// for example insufficient_available_information.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9_]*$`
	PublicResponseClass string `json:"publicResponseClass,omitempty"`

	// forbiddenMarkers are texts that must never appear in this persona's answer.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	ForbiddenMarkers []string `json:"forbiddenMarkers,omitempty"`
}

// ExpectedAction is what a system should do with a request.
// +kubebuilder:validation:Enum=answer;block;not_found;not_applicable;clarify;conflict
type ExpectedAction string

// Actions of a v2 expectation, the same vocabulary as a declared response.
const (
	ActionAnswer        ExpectedAction = "answer"
	ActionBlock         ExpectedAction = "block"
	ActionNotFound      ExpectedAction = "not_found"
	ActionNotApplicable ExpectedAction = "not_applicable"
	ActionClarify       ExpectedAction = "clarify"
	ActionConflict      ExpectedAction = "conflict"
)

// InternalReason is the reason code behind a non-answer.
// +kubebuilder:validation:Enum=NO_EVIDENCE;OUT_OF_SCOPE;UNAUTHORIZED;STALE_ONLY;CONFLICTING_EVIDENCE;INSUFFICIENT_CONFIDENCE
type InternalReason string

// EvalCase is one golden question with per-persona expectations.
type EvalCase struct {
	// id identifies the case; unique within the suite.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	ID string `json:"id"`

	// question asked as each persona.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Question string `json:"question"`

	// stratum groups cases for reporting, for example "hr" or "multi-hop".
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Stratum string `json:"stratum,omitempty"`

	// asOf is the time the question is about, RFC 3339 (v2). Fixture
	// evidence is eligible when asOf falls in its [validFrom, validTo);
	// without asOf, at the run's start.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	AsOf string `json:"asOf,omitempty"`

	// askAnswer also asks the answer surface and scores its citations.
	// +optional
	AskAnswer bool `json:"askAnswer,omitempty"`

	// expectations per persona; the case runs once for each.
	// +required
	// +listType=map
	// +listMapKey=persona
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Expectations []Expectation `json:"expectations"`
}

// CaseSource names a ConfigMap key holding cases as a JSON or YAML array
// of EvalCase, for suites too large to inline.
type CaseSource struct {
	// configMapRef names the ConfigMap in the same namespace.
	// +required
	ConfigMapRef LocalObjectReference `json:"configMapRef"`

	// key within the ConfigMap.
	// +optional
	// +kubebuilder:default="cases.json"
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
}

// FixtureDocument is one document version a suite plants for its run.
type FixtureDocument struct {
	// id is the evidence ID cases and reports use for this version. The run
	// plants it under a run-scoped ID and maps the target's IDs back.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][-._A-Za-z0-9]*$`
	ID string `json:"id"`

	// versionOf names the logical document this entry is a version of;
	// versions of one document must have non-overlapping validity
	// intervals. Defaults to id (a document with one version).
	// +optional
	// +kubebuilder:validation:MaxLength=128
	VersionOf string `json:"versionOf,omitempty"`

	// version label, recorded in the frozen evidence.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Version string `json:"version,omitempty"`

	// title of the document.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Title string `json:"title,omitempty"`

	// body is the document's text. A persona not allowed to see it must
	// never get it in an answer: the scorer checks answers for it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=16384
	Body string `json:"body"`

	// validFrom starts the half-open validity interval [validFrom, validTo),
	// RFC 3339; unset means valid since always.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	ValidFrom string `json:"validFrom,omitempty"`

	// validTo ends the validity interval (exclusive), RFC 3339; unset means
	// still valid.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	ValidTo string `json:"validTo,omitempty"`

	// principals allowed to read the document: persona subjects, or groups
	// (a fixture group's name stands for the run's copy of that group).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=256
	Principals []string `json:"principals,omitempty"`
}

// FixtureGroup is a group membership the run plants.
type FixtureGroup struct {
	// name of the group; the run plants a run-scoped copy.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][-._:@A-Za-z0-9]*$`
	Name string `json:"name"`

	// members of the group: persona subjects.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=256
	Members []string `json:"members,omitempty"`
}

// FixtureSource names a ConfigMap key holding a fixture as JSON or YAML:
// an object with documents and groups, as in spec.fixture.
type FixtureSource struct {
	// configMapRef names the ConfigMap in the same namespace.
	// +required
	ConfigMapRef LocalObjectReference `json:"configMapRef"`

	// key within the ConfigMap.
	// +optional
	// +kubebuilder:default="fixture.yaml"
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
}

// Fixture is a corpus a suite plants, evaluates against and removes, so its
// cases' expectations come from a policy rather than from the index.
type Fixture struct {
	// documents inline.
	// +optional
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MaxItems=200
	Documents []FixtureDocument `json:"documents,omitempty"`

	// groups inline.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Groups []FixtureGroup `json:"groups,omitempty"`

	// sources are ConfigMaps holding more documents and groups.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	Sources []FixtureSource `json:"sources,omitempty"`

	// visibilityTimeout bounds the wait until every planted document is
	// retrievable by a persona allowed to read it; a run that times out
	// fails with FixtureNotVisible and still removes what it planted.
	// +optional
	// +kubebuilder:default="2m"
	VisibilityTimeout *metav1.Duration `json:"visibilityTimeout,omitempty"`
}

// Gates decide whether a suite run passes.
type Gates struct {
	// maxDisclosures is how many cases may disclose forbidden evidence. Zero
	// tolerance by default.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	MaxDisclosures int32 `json:"maxDisclosures"`

	// maxInvalidCitations is how many cases may cite evidence outside
	// retrieved ∩ allowed. Zero tolerance by default.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	MaxInvalidCitations int32 `json:"maxInvalidCitations"`

	// minRecall is the least acceptable mean recall@k per persona, a decimal in [0, 1].
	// +optional
	// +kubebuilder:validation:Pattern=`^(0(\.[0-9]{1,4})?|1(\.0{1,4})?)$`
	MinRecall string `json:"minRecall,omitempty"`

	// minMRR is the least acceptable mean MRR@k per persona, a decimal in [0, 1].
	// +optional
	// +kubebuilder:validation:Pattern=`^(0(\.[0-9]{1,4})?|1(\.0{1,4})?)$`
	MinMRR string `json:"minMRR,omitempty"`

	// minUtility is the least acceptable utility (supported / answerable)
	// per persona, a decimal in [0, 1].
	// +optional
	// +kubebuilder:validation:Pattern=`^(0(\.[0-9]{1,4})?|1(\.0{1,4})?)$`
	MinUtility string `json:"minUtility,omitempty"`

	// maxFalseBlockRate is the highest acceptable false-block rate per
	// persona, a decimal in [0, 1].
	// +optional
	// +kubebuilder:validation:Pattern=`^(0(\.[0-9]{1,4})?|1(\.0{1,4})?)$`
	MaxFalseBlockRate string `json:"maxFalseBlockRate,omitempty"`

	// maxStaleRate is the highest acceptable stale-evidence rate per
	// persona, a decimal in [0, 1].
	// +optional
	// +kubebuilder:validation:Pattern=`^(0(\.[0-9]{1,4})?|1(\.0{1,4})?)$`
	MaxStaleRate string `json:"maxStaleRate,omitempty"`
}

// EvalSuiteSpec describes golden cases and when to run them.
// +kubebuilder:validation:XValidation:rule="(has(self.cases) && size(self.cases) > 0) || (has(self.caseSources) && size(self.caseSources) > 0)",message="set cases or caseSources"
type EvalSuiteSpec struct {
	// corpusRef names the Corpus the suite runs against.
	// +required
	CorpusRef LocalObjectReference `json:"corpusRef"`

	// schedule says when runs are created; without it the suite runs only
	// when the run-now annotation is set.
	// +optional
	Schedule *Schedule `json:"schedule,omitempty"`

	// suspend stops new scheduled runs.
	// +optional
	Suspend *bool `json:"suspend,omitempty"`

	// successfulRunsHistoryLimit is how many passed runs to keep. Unset uses
	// the operator's default (3 unless configured).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	SuccessfulRunsHistoryLimit *int32 `json:"successfulRunsHistoryLimit,omitempty"`

	// failedRunsHistoryLimit is how many failed runs to keep. Unset uses the
	// operator's default (3 unless configured).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	FailedRunsHistoryLimit *int32 `json:"failedRunsHistoryLimit,omitempty"`

	// k is the retrieval depth scored.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	K int32 `json:"k,omitempty"`

	// parallelism bounds concurrent case × persona executions; all of them
	// also share the corpus rate limit.
	// +optional
	// +kubebuilder:default=4
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	Parallelism int32 `json:"parallelism,omitempty"`

	// gates decide pass or fail.
	// +optional
	// +kubebuilder:default={}
	Gates Gates `json:"gates,omitempty"`

	// cases inline. IDs must be unique.
	// +optional
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MaxItems=200
	Cases []EvalCase `json:"cases,omitempty"`

	// caseSources are ConfigMaps holding more cases.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	CaseSources []CaseSource `json:"caseSources,omitempty"`

	// fixture is a corpus each run plants under run-scoped IDs, evaluates
	// the cases against and removes afterwards (also on failure and when
	// the run is deleted).
	// +optional
	Fixture *Fixture `json:"fixture,omitempty"`

	// reportHistoryLimit is how many runs' frozen evidence reports
	// (ConfigMaps named <run>-report, owned by the suite, not the run) are
	// kept. Pruning runs never deletes a report; the oldest reports beyond
	// this limit are deleted, and deleting the suite deletes them all.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	ReportHistoryLimit *int32 `json:"reportHistoryLimit,omitempty"`
}

// SuiteRunSummary is the latest finished run of a suite.
type SuiteRunSummary struct {
	// name of the SuiteRun.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// passed is true when every gate passed.
	// +optional
	Passed bool `json:"passed"`

	// disclosures counts cases that disclosed forbidden evidence.
	// +optional
	Disclosures int32 `json:"disclosures"`

	// completionTime of the run.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// EvalSuiteStatus is the observed state of an EvalSuite.
type EvalSuiteStatus struct {
	// observedGeneration is the generation last fully evaluated.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready (references and schedule valid) and Passed (latest run).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// active runs.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	Active []LocalObjectReference `json:"active,omitempty"`

	// lastScheduleTime is when a run was last created.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`

	// nextScheduleTime is when the next scheduled run is due.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`

	// lastRunNowToken is the run-now annotation value last acted on.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	LastRunNowToken string `json:"lastRunNowToken,omitempty"`

	// lastRun summarises the latest finished run.
	// +optional
	LastRun *SuiteRunSummary `json:"lastRun,omitempty"`
}

// EvalSuite holds golden cases with per-persona expected evidence, gates and
// a schedule; each execution is a SuiteRun.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rcs;suite,categories=ragcanary
// +kubebuilder:printcolumn:name="Corpus",type=string,JSONPath=`.spec.corpusRef.name`
// +kubebuilder:printcolumn:name="Passed",type=boolean,JSONPath=`.status.lastRun.passed`
// +kubebuilder:printcolumn:name="Disclosures",type=integer,JSONPath=`.status.lastRun.disclosures`
// +kubebuilder:printcolumn:name="Last Run",type=date,JSONPath=`.status.lastRun.completionTime`
// +kubebuilder:printcolumn:name="Next Run",type=string,JSONPath=`.status.nextScheduleTime`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EvalSuite struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired suite.
	// +required
	Spec EvalSuiteSpec `json:"spec"`

	// status is the observed state of the suite.
	// +optional
	Status EvalSuiteStatus `json:"status,omitempty"`
}

// EvalSuiteList is a list of EvalSuites.
// +kubebuilder:object:root=true
type EvalSuiteList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EvalSuite `json:"items"`
}

func init() {
	SchemeBuilder.Register(&EvalSuite{}, &EvalSuiteList{})
}
