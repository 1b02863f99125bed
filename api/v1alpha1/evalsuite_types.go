package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Expectation is what one persona should get for a case. relevantIDs must be
// a subset of allowedIDs; the suite controller checks that (a CEL rule over
// two lists this size exceeds the API server's cost budget) and marks the
// suite not Ready naming the case.
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
}

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
