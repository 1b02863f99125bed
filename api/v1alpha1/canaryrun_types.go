package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CanaryPhase is the step of the canary lifecycle a run is in.
// +kubebuilder:validation:Enum=Pending;Planting;Sharing;AwaitingVisibility;Revoking;AwaitingExclusion;Watching;CleaningUp;Succeeded;Failed
type CanaryPhase string

const (
	PhasePending            CanaryPhase = "Pending"
	PhasePlanting           CanaryPhase = "Planting"
	PhaseSharing            CanaryPhase = "Sharing"
	PhaseAwaitingVisibility CanaryPhase = "AwaitingVisibility"
	PhaseRevoking           CanaryPhase = "Revoking"
	PhaseAwaitingExclusion  CanaryPhase = "AwaitingExclusion"
	// PhaseWatching: a sentinel visible to its owner is probed by the
	// control personas until its lifetime ends.
	PhaseWatching   CanaryPhase = "Watching"
	PhaseCleaningUp CanaryPhase = "CleaningUp"
	PhaseSucceeded  CanaryPhase = "Succeeded"
	PhaseFailed     CanaryPhase = "Failed"
)

// CanaryRunSpec is the configuration of one canary measurement.
// +kubebuilder:validation:XValidation:rule="!has(self.controlPersonaRefs) || self.controlPersonaRefs.all(c, c.name != self.personaRef.name)",message="controlPersonaRefs must not include personaRef"
// +kubebuilder:validation:XValidation:rule="!has(self.revocation) || !has(self.revocation.method) || self.revocation.method != 'UpdateContent' || !has(self.probing) || !has(self.probing.surfaces) || !self.probing.surfaces.exists(s, s == 'Conversation' || s == 'InFlight')",message="UpdateContent measures the Search and Answer surfaces; remove Conversation and InFlight from probing.surfaces"
// +kubebuilder:validation:XValidation:rule="!(has(self.sentinel) && (!has(self.controlPersonaRefs) || size(self.controlPersonaRefs) == 0))",message="a sentinel needs at least one controlPersonaRefs entry: the personas outside its access list that watch it"
// +kubebuilder:validation:XValidation:rule="!(has(self.sentinel) && has(self.revocation) && ((has(self.revocation.method) && self.revocation.method != 'RemoveGrant') || has(self.revocation.group)))",message="a sentinel is shared with its owner by a grant and never revoked: remove revocation (or leave method RemoveGrant without a group)"
// +kubebuilder:validation:XValidation:rule="!(has(self.sentinel) && has(self.probing) && has(self.probing.surfaces) && self.probing.surfaces.exists(s, s == 'InFlight'))",message="a sentinel is never revoked, so nothing is in flight across a revocation: remove InFlight from probing.surfaces"
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: a run is one measurement"
type CanaryRunSpec struct {
	CanarySpec `json:",inline"`
}

// ProbeCounts counts probes of one surface by outcome.
type ProbeCounts struct {
	// positive probes saw the token.
	// +optional
	Positive int32 `json:"positive,omitempty"`
	// negative probes established the token was absent.
	// +optional
	Negative int32 `json:"negative,omitempty"`
	// errors are probes that failed, timed out or got an unparseable reply.
	// They are never counted as absences.
	// +optional
	Errors int32 `json:"errors,omitempty"`
}

// SurfaceMeasurement is the persisted exclusion measurement of one surface.
// Timestamps here cannot be observed again, so they are written before the
// run acts on them.
type SurfaceMeasurement struct {
	// surface measured.
	// +required
	Surface Surface `json:"surface"`

	// lastPositiveStart is the start of the latest probe that saw the token.
	// +optional
	LastPositiveStart *metav1.MicroTime `json:"lastPositiveStart,omitempty"`

	// firstNegativeEnd is the end of the first probe of the current run of
	// consecutive negative probes.
	// +optional
	FirstNegativeEnd *metav1.MicroTime `json:"firstNegativeEnd,omitempty"`

	// negativeStreak is the number of consecutive negative probes so far.
	// +optional
	NegativeStreak int32 `json:"negativeStreak,omitempty"`

	// reappearances counts positive probes that followed a negative one:
	// a replica or cache serving revoked content.
	// +optional
	Reappearances int32 `json:"reappearances,omitempty"`

	// excluded is true once negativeStreak reached the required confirmations.
	// +optional
	Excluded bool `json:"excluded,omitempty"`

	// lastReply is what the last probe with a valid reply saw: Present or
	// Absent. It survives an operator restart (unlike the negative streak),
	// so a run whose probes only failed after a restart is not mistaken for
	// one still serving the canary.
	// +optional
	// +kubebuilder:validation:Enum=Present;Absent
	LastReply string `json:"lastReply,omitempty"`

	// errorsSinceReply counts the probes that failed since the last valid
	// reply. An error is no evidence: when the last valid reply saw the
	// token and probes failed since, whether it is still served is unknown,
	// and the run is Inconclusive rather than NotExcluded.
	// +optional
	ErrorsSinceReply int32 `json:"errorsSinceReply,omitempty"`

	// bounds is the interval-censored time-to-exclusion.
	// +optional
	Bounds *ExclusionBounds `json:"bounds,omitempty"`

	// probes counts probes after revocation by outcome.
	// +optional
	Probes ProbeCounts `json:"probes,omitempty"`

	// newContent is, for an UpdateContent run, when the replaced document's
	// new content became visible on this surface. The fields above then
	// measure the old content: its exclusion is the old payload gone.
	// +optional
	NewContent *ContentMeasurement `json:"newContent,omitempty"`

	// slo is what the verdict judged this surface by, set with the
	// verdict, so readers never recompute it from a Corpus that may have
	// changed since.
	// +optional
	SLO *metav1.Duration `json:"slo,omitempty"`
	// sloSource says where slo came from, e.g. "corpus freshness.exclusionSLO".
	// +optional
	// +kubebuilder:validation:MaxLength=128
	SLOSource string `json:"sloSource,omitempty"`

	// exclusion is bounds as an interval rounded outwards for people:
	// "1.2s–1.7s"; ">30m" when only a lower bound is known (still visible
	// at the timeout); "?" when nothing was established. Set with the
	// verdict; a printer column.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Exclusion string `json:"exclusion,omitempty"`
}

// ContentMeasurement is the persisted measurement of when new content
// appeared on one surface. It is interval-censored like exclusion: the new
// content appeared after the start of the last probe that did not show it
// and no later than the end of the first probe that did.
type ContentMeasurement struct {
	// lastUnseenStart is the start of the latest probe with a valid reply
	// that did not show the new content, before it was first seen.
	// +optional
	LastUnseenStart *metav1.MicroTime `json:"lastUnseenStart,omitempty"`

	// firstSeenEnd is the end of the first probe that showed the new content.
	// +optional
	FirstSeenEnd *metav1.MicroTime `json:"firstSeenEnd,omitempty"`

	// visible is true once a probe showed the new content.
	// +optional
	Visible bool `json:"visible,omitempty"`

	// bounds is the interval-censored time until the new content was
	// visible: lower = lastUnseenStart − revokeAcknowledged (floor 0),
	// upper = firstSeenEnd − revokeRequested. Without an upper bound the
	// new content was not seen by the end of the run (right-censored).
	// +optional
	Bounds *ExclusionBounds `json:"bounds,omitempty"`

	// probes counts probes by what they showed of the new content.
	// +optional
	Probes ProbeCounts `json:"probes,omitempty"`
}

// CanaryRunStatus is the persisted state machine of one canary run.
type CanaryRunStatus struct {
	// observedGeneration is the generation last fully evaluated.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase of the lifecycle.
	// +optional
	Phase CanaryPhase `json:"phase,omitempty"`

	// verdict once the measurement is decided.
	// +optional
	Verdict Verdict `json:"verdict,omitempty"`

	// message explains the verdict or the current wait in a sentence.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`

	// conditions: Complete, and CleanupPending while the canary document
	// could not yet be removed from the target.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// documentID of the canary document at the source, derived from the run's
	// UID. It travels in request paths, so it follows the driver contract's
	// document ID pattern (api/contract/driver.v1.yaml).
	// +optional
	// +kubebuilder:validation:MaxLength=200
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._:@-]{0,199}$`
	DocumentID string `json:"documentID,omitempty"`

	// sourceCaptures are the values a REST source captured from its replies
	// for this run's document (a created item's ID, a permission ID), kept
	// so later steps and cleanup can address what the run created after a
	// restart. They are the target's text, bounded and validated; never a
	// credential.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	SourceCaptures map[string]CaptureValue `json:"sourceCaptures,omitempty"`

	// tokenSecretName names the Secret, owned by this run, holding the canary token.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	TokenSecretName string `json:"tokenSecretName,omitempty"`

	// tokenHash is a short hash of the canary token for correlation; never the token.
	// +optional
	// +kubebuilder:validation:MaxLength=16
	TokenHash string `json:"tokenHash,omitempty"`

	// startTime is when the run started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// shareRequestedTime is when the share request was sent.
	// +optional
	ShareRequestedTime *metav1.MicroTime `json:"shareRequestedTime,omitempty"`

	// visibleTime is the end of the first probe that saw the token.
	// +optional
	VisibleTime *metav1.MicroTime `json:"visibleTime,omitempty"`

	// timeToVisibility is visibleTime minus shareRequestedTime.
	// +optional
	TimeToVisibility *metav1.Duration `json:"timeToVisibility,omitempty"`

	// conversationID names the conversation the persona started about the
	// canary before the revocation (Conversation surface); its follow-ups
	// are the probes after it. Persisted before the revocation is sent. An
	// ID, not a credential.
	// +optional
	// +kubebuilder:validation:MaxLength=200
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._:@-]{0,199}$`
	ConversationID string `json:"conversationID,omitempty"`

	// inFlight is what the streams opened before the revocation delivered
	// after it (InFlight surface); set with the verdict.
	// +optional
	InFlight *InFlightMeasurement `json:"inFlight,omitempty"`

	// revokeRequestedTime is when the revocation request was sent.
	// +optional
	RevokeRequestedTime *metav1.MicroTime `json:"revokeRequestedTime,omitempty"`

	// revokeAcknowledgedTime is when the source acknowledged the revocation.
	// +optional
	RevokeAcknowledgedTime *metav1.MicroTime `json:"revokeAcknowledgedTime,omitempty"`

	// surfaces holds the exclusion measurement per probed surface.
	// +optional
	// +listType=map
	// +listMapKey=surface
	// +kubebuilder:validation:MaxItems=4
	Surfaces []SurfaceMeasurement `json:"surfaces,omitempty"`

	// isolationViolations counts control-persona probes that saw the token.
	// +optional
	IsolationViolations int32 `json:"isolationViolations,omitempty"`

	// controlProbes counts, per control persona and surface, probes that got
	// a valid reply and probes that failed. A control persona that never got
	// a valid reply on a surface never tested isolation there, so the run
	// cannot claim it.
	// +optional
	// +listType=map
	// +listMapKey=persona
	// +listMapKey=surface
	// +kubebuilder:validation:MaxItems=64
	ControlProbes []ControlProbeCounts `json:"controlProbes,omitempty"`

	// sentinel is what a sentinel run observed while watching.
	// +optional
	Sentinel *SentinelStatus `json:"sentinel,omitempty"`

	// lastHeartbeatTime is when status was last written while probing.
	// +optional
	LastHeartbeatTime *metav1.Time `json:"lastHeartbeatTime,omitempty"`

	// completionTime is when the run reached Succeeded or Failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// The fields below are the measurement rounded for people, for printer
	// columns; the exact values are the ones above. They are set when the
	// verdict is known.

	// visibleAfter is timeToVisibility rounded, e.g. "5.9s".
	// +optional
	// +kubebuilder:validation:MaxLength=32
	VisibleAfter string `json:"visibleAfter,omitempty"`

	// contentFreshness is, for an UpdateContent run, the time until every
	// probed surface served only the new content (new content visible and
	// old content gone), as an interval rounded outwards like the fields
	// above.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	ContentFreshness string `json:"contentFreshness,omitempty"`
}

// CanaryRun is one canary lifecycle: plant, share, await visibility, revoke,
// await exclusion, clean up. It is the record of one measurement.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rcr;canaryrun,categories=ragcanary
// +kubebuilder:printcolumn:name="Corpus",type=string,JSONPath=`.spec.corpusRef.name`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Verdict",type=string,JSONPath=`.status.verdict`
// +kubebuilder:printcolumn:name="Visible After",type=string,JSONPath=`.status.visibleAfter`
// +kubebuilder:printcolumn:name="Search Exclusion",type=string,JSONPath=`.status.surfaces[?(@.surface=="Search")].exclusion`
// +kubebuilder:printcolumn:name="Cache Invalidation",type=string,JSONPath=`.status.surfaces[?(@.surface=="Answer")].exclusion`
// +kubebuilder:printcolumn:name="Conversation Exclusion",type=string,JSONPath=`.status.surfaces[?(@.surface=="Conversation")].exclusion`
// +kubebuilder:printcolumn:name="Content Freshness",type=string,JSONPath=`.status.contentFreshness`
// +kubebuilder:printcolumn:name="In-Flight Delivery",type=string,JSONPath=`.status.inFlight.delivery`,priority=1
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.probing.schedule`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type CanaryRun struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the measurement configuration, fixed at creation.
	// +required
	Spec CanaryRunSpec `json:"spec"`

	// status is the persisted lifecycle state.
	// +optional
	Status CanaryRunStatus `json:"status,omitempty"`
}

// CanaryRunList is a list of CanaryRuns.
// +kubebuilder:object:root=true
type CanaryRunList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CanaryRun `json:"items"`
}

func init() {
	SchemeBuilder.Register(&CanaryRun{}, &CanaryRunList{})
}

// ControlProbeCounts are the probe outcomes of one control persona on one surface.
type ControlProbeCounts struct {
	// persona is the control Persona's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Persona string `json:"persona"`
	// surface probed.
	// +required
	Surface Surface `json:"surface"`
	// answered counts probes with a valid reply (with or without the canary).
	// +optional
	Answered int64 `json:"answered,omitempty"`
	// errors counts probes that failed, timed out or got no valid reply.
	// +optional
	Errors int64 `json:"errors,omitempty"`
}

// CaptureValue is one value a REST source captured from a reply.
// +kubebuilder:validation:MaxLength=256
type CaptureValue string
