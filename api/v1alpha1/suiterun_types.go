package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SuiteRunPhase is where a suite run is.
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Failed
type SuiteRunPhase string

const (
	SuiteRunPending   SuiteRunPhase = "Pending"
	SuiteRunRunning   SuiteRunPhase = "Running"
	SuiteRunSucceeded SuiteRunPhase = "Succeeded"
	SuiteRunFailed    SuiteRunPhase = "Failed"
)

// SuiteRunSpec is one execution of a suite.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: a run is one execution"
type SuiteRunSpec struct {
	// suiteRef names the EvalSuite executed.
	// +required
	SuiteRef LocalObjectReference `json:"suiteRef"`
}

// Ratio is a metric with its numerator and denominator. value is unset when
// the denominator is zero: an undefined metric is never reported as 0 or 1.
type Ratio struct {
	// numerator of the ratio as a decimal string: a count for rates, the sum
	// of the per-case values for means (mean recall 2.5/4), which is why it
	// is not an integer.
	// +optional
	// +kubebuilder:validation:MaxLength=24
	Numerator string `json:"numerator"`
	// denominator of the ratio.
	// +optional
	Denominator int32 `json:"denominator"`
	// value is numerator/denominator as a decimal string, unset when undefined.
	// +optional
	// +kubebuilder:validation:MaxLength=16
	Value *string `json:"value,omitempty"`
}

// PersonaResult summarises a suite run for one persona and stratum: the
// counts and rates of the scoring engine's statistics table, each by name
// (docs/eval.md, "Summary").
type PersonaResult struct {
	// persona name.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Persona string `json:"persona"`
	// stratum, empty for all strata.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Stratum string `json:"stratum,omitempty"`
	// counts of executions by name: answerable and required_block (by
	// expected action), each outcome (supported, false_blocks,
	// disclosures, failed_to_abstain, …), affected_answers (executions of
	// any expected action that exposed anything forbidden) and
	// invalid_citation_cases. 0 is listed; a name the run did not record
	// is absent.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Counts []NamedCount `json:"counts,omitempty"`
	// rates and means by name, each with its numerator and denominator:
	// utility, false_block_rate, disclosure_rate (disclosures /
	// required_block), failed_to_abstain_rate, recall_at_k, mrr_at_k, …
	// A value is unset when its denominator is zero.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Rates []NamedRatio `json:"rates,omitempty"`
	// correctAbstention is, per expected status (not_found, not_applicable,
	// clarify, conflict), the cases answered with that status / the cases
	// expecting it; never pooled across statuses.
	// +optional
	// +listType=map
	// +listMapKey=status
	// +kubebuilder:validation:MaxItems=4
	CorrectAbstention []StatusRatio `json:"correctAbstention,omitempty"`
}

// NamedCount is one count of a suite run's statistics.
type NamedCount struct {
	// name of the count, as in the JSON report's summary.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9_]*$`
	Name string `json:"name"`
	// count of executions.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Count int32 `json:"count"`
}

// NamedRatio is one rate or mean of a suite run's statistics.
type NamedRatio struct {
	// name of the rate or mean, as in the JSON report's summary.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9_]*$`
	Name  string `json:"name"`
	Ratio `json:",inline"`
}

// Count is the count named name, and whether the run recorded it.
func (p *PersonaResult) Count(name string) (int32, bool) {
	for _, c := range p.Counts {
		if c.Name == name {
			return c.Count, true
		}
	}
	return 0, false
}

// Rate is the rate or mean named name, and whether the run recorded it.
func (p *PersonaResult) Rate(name string) (Ratio, bool) {
	for _, r := range p.Rates {
		if r.Name == name {
			return r.Ratio, true
		}
	}
	return Ratio{}, false
}

// StatusRatio is a rate for one expected status.
type StatusRatio struct {
	// status expected: not_found, not_applicable, clarify or conflict.
	// +required
	// +kubebuilder:validation:MaxLength=32
	Status string `json:"status"`
	// ratio of correct declarations to cases expecting the status.
	// +optional
	Ratio Ratio `json:"ratio"`
}

// FixtureStatus is what a run planted and whether it is gone again.
type FixtureStatus struct {
	// prefix of the run-scoped IDs the fixture was planted under.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Prefix string `json:"prefix,omitempty"`
	// documents planted.
	// +optional
	Documents int32 `json:"documents"`
	// groups planted (memberships counted once per group).
	// +optional
	Groups int32 `json:"groups"`
	// removed is true once every planted document and membership was removed.
	// +optional
	Removed bool `json:"removed"`
}

// GateResult is one gate's verdict.
type GateResult struct {
	// name of the gate.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// passed is true when the gate passed.
	// +optional
	Passed bool `json:"passed"`
	// value observed, as a decimal string; unset when undefined.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Value string `json:"value,omitempty"`
	// threshold applied.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Threshold string `json:"threshold,omitempty"`
}

// FailingCase is a case × persona that failed a gate.
type FailingCase struct {
	// caseID of the failing case.
	// +required
	// +kubebuilder:validation:MaxLength=128
	CaseID string `json:"caseID"`
	// persona it failed for.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Persona string `json:"persona"`
	// outcome class of the case.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Outcome string `json:"outcome,omitempty"`
	// disclosed is true when the execution exposed forbidden evidence, a
	// forbidden marker or a forbidden document's text, whatever its outcome
	// (an answerable case that leaked is "unsupported" and disclosed).
	// +optional
	Disclosed bool `json:"disclosed,omitempty"`
	// forbiddenIDs returned or cited (first few).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	ForbiddenIDs []string `json:"forbiddenIDs,omitempty"`
}

// SuiteRunStatus is the result of one suite execution.
type SuiteRunStatus struct {
	// observedGeneration is the generation last fully evaluated.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase of the run.
	// +optional
	Phase SuiteRunPhase `json:"phase,omitempty"`

	// conditions: Complete and Passed.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// startTime of the run.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completionTime of the run.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// executions is the number of case × persona executions; set, like
	// disclosures and probeErrors, when the run finishes (so 0 shows as 0).
	// +optional
	Executions *int32 `json:"executions,omitempty"`

	// disclosures counts executions that disclosed forbidden evidence.
	// +optional
	Disclosures *int32 `json:"disclosures,omitempty"`

	// probeErrors counts executions that failed to get a reply.
	// +optional
	ProbeErrors *int32 `json:"probeErrors,omitempty"`

	// personas holds per-persona and per-stratum results.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	Personas []PersonaResult `json:"personas,omitempty"`

	// gates and their verdicts.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Gates []GateResult `json:"gates,omitempty"`

	// failingCases lists the first failing executions.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	FailingCases []FailingCase `json:"failingCases,omitempty"`

	// reportConfigMapRef names the ConfigMap holding the full JSON report
	// and the frozen evidence. It is owned by the suite, not the run, and
	// kept by the suite's reportHistoryLimit.
	// +optional
	ReportConfigMapRef *LocalObjectReference `json:"reportConfigMapRef,omitempty"`

	// casesHash is the SHA-256 of the resolved cases the run froze at its
	// start; two runs with the same hash evaluated the same cases.
	// +optional
	// +kubebuilder:validation:MaxLength=80
	CasesHash string `json:"casesHash,omitempty"`

	// fixture is what the run planted, when the suite has a fixture.
	// +optional
	Fixture *FixtureStatus `json:"fixture,omitempty"`
}

// SuiteRun is one execution of an EvalSuite: per-persona, per-stratum
// metrics and gate verdicts.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rcsr;suiterun,categories=ragcanary
// +kubebuilder:printcolumn:name="Suite",type=string,JSONPath=`.spec.suiteRef.name`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Passed",type=string,JSONPath=`.status.conditions[?(@.type=="Passed")].status`
// +kubebuilder:printcolumn:name="Disclosures",type=integer,JSONPath=`.status.disclosures`
// +kubebuilder:printcolumn:name="Probe Errors",type=integer,JSONPath=`.status.probeErrors`
// +kubebuilder:printcolumn:name="Executions",type=integer,JSONPath=`.status.executions`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SuiteRun struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec names the suite executed.
	// +required
	Spec SuiteRunSpec `json:"spec"`

	// status is the result of the run.
	// +optional
	Status SuiteRunStatus `json:"status,omitempty"`
}

// SuiteRunList is a list of SuiteRuns.
// +kubebuilder:object:root=true
type SuiteRunList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SuiteRun `json:"items"`
}

func init() {
	SchemeBuilder.Register(&SuiteRun{}, &SuiteRunList{})
}
