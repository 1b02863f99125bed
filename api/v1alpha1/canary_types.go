package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Surface is a place where a persona can see a canary token.
// +kubebuilder:validation:Enum=Search;Answer;Conversation;Stream;InFlight
type Surface string

const (
	// SurfaceSearch is the ranked retrieval results.
	SurfaceSearch Surface = "Search"
	// SurfaceAnswer is the generated answer and its citations, including any answer cache.
	SurfaceAnswer Surface = "Answer"
	// SurfaceConversation is follow-up turns in a conversation the persona
	// started about the canary before the revocation: a system answering
	// follow-ups from conversation history keeps revoked content there.
	SurfaceConversation Surface = "Conversation"
	// SurfaceStream is the answer read as a stream of deltas (a chat
	// surface with stream: true).
	SurfaceStream Surface = "Stream"
)

// Revocation says how access is taken away during a canary run.
// +kubebuilder:validation:XValidation:rule="!has(self.method) || self.method != 'RemoveFromGroup' || has(self.group)",message="group is required when method is RemoveFromGroup"
// +kubebuilder:validation:XValidation:rule="(has(self.method) && self.method == 'RemoveFromGroup') || !has(self.group)",message="group is only used when method is RemoveFromGroup"
type Revocation struct {
	// method of revocation: RemoveGrant, RemoveFromGroup, DeleteDocument,
	// RevokeCredential (the persona's OAuth2 client, revoked at its
	// authorization server as its Persona's oauth2.revocation says), or
	// UpdateContent, which keeps the persona's access and replaces the
	// document's body with a second payload (a content-freshness canary,
	// judged by the corpus's freshness.contentFreshnessSLO).
	// +optional
	// +kubebuilder:default=RemoveGrant
	Method RevocationMethod `json:"method,omitempty"`

	// group the canary document is shared with and the persona is removed
	// from, when method is RemoveFromGroup. ragcanary adds the persona to
	// this group while sharing.
	// It travels in request paths, so it follows the driver contract's
	// principal pattern (api/contract/driver.v1.yaml).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=200
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._:@-]{0,199}$`
	Group string `json:"group,omitempty"`
}

// Probing says how often and how long to probe the surfaces. Exclusion is
// confirmed by confirmations consecutive negative probes an interval apart,
// so confirmations × interval must be smaller than exclusionTimeout; the
// token becomes visible with one positive probe, so interval must be smaller
// than visibilityTimeout.
// +kubebuilder:validation:XValidation:rule="!has(self.interval) || !has(self.exclusionTimeout) || duration(self.interval).getMilliseconds() * (has(self.confirmations) ? self.confirmations : 3) < duration(self.exclusionTimeout).getMilliseconds()",message="confirmations × interval must be smaller than exclusionTimeout, or exclusion can never be confirmed"
// +kubebuilder:validation:XValidation:rule="!has(self.interval) || !has(self.visibilityTimeout) || duration(self.interval) < duration(self.visibilityTimeout)",message="interval must be smaller than visibilityTimeout"
// +kubebuilder:validation:XValidation:rule="!has(self.maxInterval) || duration(self.maxInterval) == duration('0s') || duration(self.maxInterval) >= (has(self.interval) ? duration(self.interval) : duration('5s'))",message="maxInterval must not be smaller than interval"
// +kubebuilder:validation:XValidation:rule="!has(self.surfaces) || !self.surfaces.exists(s, s == 'InFlight') || self.surfaces.exists(s, s != 'InFlight')",message="InFlight is measured beside another surface (Search, Answer or Stream), which awaits visibility and exclusion; add one to surfaces"
type Probing struct {
	// The exclusion rule above compares whole milliseconds because CEL cannot
	// multiply a duration by an int; interval is at least 100ms, so the
	// truncation is negligible. An unset confirmations counts as its default,
	// as the controller reads it.

	// interval between probes of one surface.
	// +optional
	// +kubebuilder:default="5s"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('100ms')",message="interval must be at least 100ms"
	Interval metav1.Duration `json:"interval,omitempty"`

	// confirmations is how many consecutive negative probes establish exclusion.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Confirmations int32 `json:"confirmations,omitempty"`

	// visibilityTimeout is how long to wait for a shared canary to become
	// visible before the run fails as SetupFailed.
	// +optional
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="visibilityTimeout must be positive"
	VisibilityTimeout metav1.Duration `json:"visibilityTimeout,omitempty"`

	// exclusionTimeout is how long to wait for exclusion after revoking;
	// a token still visible then is reported NotExcluded (right-censored).
	// +optional
	// +kubebuilder:default="30m"
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="exclusionTimeout must be positive"
	ExclusionTimeout metav1.Duration `json:"exclusionTimeout,omitempty"`

	// schedule spaces the probes. Fixed (the default) probes every interval,
	// as canaries always have: a bound is as wide as one interval whatever
	// the lag, at a cost that grows with the lag. Adaptive spaces probes
	// after sharing and after the revocation geometrically, each gap about
	// precision × the time elapsed in the stage (never below interval, never
	// above maxInterval), so a bound is about precision × the lag wide at a
	// cost that grows with the logarithm of the lag; it adds a probe ending
	// just before each SLO deadline and the stage timeout, so the verdict is
	// decided by an observation, and confirms exclusion at interval spacing.
	// +optional
	// +kubebuilder:default=Fixed
	Schedule ProbeSchedule `json:"schedule,omitempty"`

	// precision is the relative width an Adaptive schedule aims for, as a
	// percentage of the time elapsed in the stage ("10%": a 20m exclusion is
	// bracketed to about 2m). Ignored by Fixed.
	// +optional
	// +kubebuilder:default="10%"
	// +kubebuilder:validation:MaxLength=7
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]{1,3}([.][0-9]{1,2})?%$') && double(self.substring(0, size(self) - 1)) > 0.0 && double(self.substring(0, size(self) - 1)) <= 100.0",message="precision must be a percentage above 0% and at most 100%, such as \"10%\""
	Precision string `json:"precision,omitempty"`

	// maxInterval is the longest gap an Adaptive schedule leaves between
	// probes; it is what bounds the width of very long lags. Ignored by Fixed.
	// 0s means the default (10m): a Go client that leaves the field unset
	// sends 0s, as for every duration here.
	// +optional
	// +kubebuilder:default="10m"
	MaxInterval metav1.Duration `json:"maxInterval,omitempty"`

	// surfaces to probe, each one the corpus can measure
	// (status.measurableSurfaces): Answer needs an answer surface,
	// Conversation a conversation API (driver contract v1.1) or a chat
	// surface, Stream and InFlight a chat surface with stream: true.
	// InFlight is measured beside another surface, which awaits
	// visibility and exclusion.
	// +optional
	// +listType=set
	// +kubebuilder:default={Search}
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=5
	Surfaces []Surface `json:"surfaces,omitempty"`

	// inFlightStreams is how many streams the InFlight surface opens before
	// the revocation request.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4
	InFlightStreams int32 `json:"inFlightStreams,omitempty"`
}

// ProbeSchedule says how probes are spaced in time.
// +kubebuilder:validation:Enum=Fixed;Adaptive
type ProbeSchedule string

const (
	// ScheduleFixed probes every interval.
	ScheduleFixed ProbeSchedule = "Fixed"
	// ScheduleAdaptive spaces probes geometrically with the time elapsed,
	// plus probes at the SLO deadlines and the stage timeout.
	ScheduleAdaptive ProbeSchedule = "Adaptive"
)

// CanarySpec is one canary measurement's configuration. A RevocationCanary
// copies it into every CanaryRun it creates, so editing a canary never
// changes a run in flight.
type CanarySpec struct {
	// corpusRef names the Corpus under test.
	// +required
	CorpusRef LocalObjectReference `json:"corpusRef"`

	// personaRef names the Persona the canary is shared with and revoked from.
	// +required
	PersonaRef LocalObjectReference `json:"personaRef"`

	// controlPersonaRefs name Personas that must never see the canary. Any
	// sighting by one of them is an isolation violation.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	ControlPersonaRefs []LocalObjectReference `json:"controlPersonaRefs,omitempty"`

	// revocation says how access is taken away.
	// +optional
	// +kubebuilder:default={}
	Revocation Revocation `json:"revocation,omitempty"`

	// probing says how often and how long to probe.
	// +optional
	// +kubebuilder:default={}
	Probing Probing `json:"probing,omitempty"`

	// exclusionSLO overrides the corpus's exclusion SLO for this canary.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="exclusionSLO must be positive"
	ExclusionSLO *metav1.Duration `json:"exclusionSLO,omitempty"`

	// sentinel, when set, makes this a sentinel canary (see Sentinel):
	// personaRef is its owner, controlPersonaRefs (at least one) watch it,
	// and nothing is revoked.
	// +optional
	Sentinel *Sentinel `json:"sentinel,omitempty"`
}

// RevocationCanarySpec schedules canary runs.
// +kubebuilder:validation:XValidation:rule="!has(self.controlPersonaRefs) || self.controlPersonaRefs.all(c, c.name != self.personaRef.name)",message="controlPersonaRefs must not include personaRef"
// +kubebuilder:validation:XValidation:rule="!has(self.revocation) || !has(self.revocation.method) || self.revocation.method != 'UpdateContent' || !has(self.probing) || !has(self.probing.surfaces) || !self.probing.surfaces.exists(s, s == 'Conversation' || s == 'InFlight')",message="UpdateContent measures the Search and Answer surfaces; remove Conversation and InFlight from probing.surfaces"
// +kubebuilder:validation:XValidation:rule="!(has(self.sentinel) && (!has(self.controlPersonaRefs) || size(self.controlPersonaRefs) == 0))",message="a sentinel needs at least one controlPersonaRefs entry: the personas outside its access list that watch it"
// +kubebuilder:validation:XValidation:rule="!(has(self.sentinel) && has(self.revocation) && ((has(self.revocation.method) && self.revocation.method != 'RemoveGrant') || has(self.revocation.group)))",message="a sentinel is shared with its owner by a grant and never revoked: remove revocation (or leave method RemoveGrant without a group)"
// +kubebuilder:validation:XValidation:rule="!(has(self.sentinel) && has(self.probing) && has(self.probing.surfaces) && self.probing.surfaces.exists(s, s == 'InFlight'))",message="a sentinel is never revoked, so nothing is in flight across a revocation: remove InFlight from probing.surfaces"
type RevocationCanarySpec struct {
	Scheduling `json:",inline"`
	CanarySpec `json:",inline"`
}

// Verdict is the outcome of one canary run.
// +kubebuilder:validation:Enum=SLOMet;SLOBreached;NotExcluded;Inconclusive;IsolationViolation;SetupFailed;Isolated
type Verdict string

const (
	// VerdictSLOMet: exclusion was confirmed and its upper bound is within the SLO.
	VerdictSLOMet Verdict = "SLOMet"
	// VerdictSLOBreached: exclusion was confirmed but its upper bound exceeds the SLO.
	VerdictSLOBreached Verdict = "SLOBreached"
	// VerdictNotExcluded: the token was still visible at the exclusion timeout.
	VerdictNotExcluded Verdict = "NotExcluded"
	// VerdictInconclusive: probe errors prevented establishing exclusion.
	VerdictInconclusive Verdict = "Inconclusive"
	// VerdictIsolationViolation: a control persona saw the token.
	VerdictIsolationViolation Verdict = "IsolationViolation"
	// VerdictSetupFailed: the token never became visible, or the source rejected a step.
	VerdictSetupFailed Verdict = "SetupFailed"
	// VerdictIsolated: a sentinel's whole lifetime passed with every control
	// persona getting valid replies on every surface and none of them
	// seeing its payload. It claims only what was probed: those personas,
	// those surfaces, that time.
	VerdictIsolated Verdict = "Isolated"
)

// ExclusionBounds is an interval-censored time-to-exclusion: exclusion
// happened no earlier than lower and no later than upper after revocation.
type ExclusionBounds struct {
	// lower bound: last positive probe start minus revocation acknowledged (floor 0).
	// For a right-censored run it is the exclusion timeout.
	// +optional
	Lower *metav1.Duration `json:"lower,omitempty"`

	// upper bound: first negative probe end of the confirmed streak minus
	// revocation requested. Unset when exclusion was not established.
	// +optional
	Upper *metav1.Duration `json:"upper,omitempty"`
}

// RunSummary is the latest finished run of a canary.
type RunSummary struct {
	// name of the CanaryRun.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// verdict of the run.
	// +optional
	Verdict Verdict `json:"verdict,omitempty"`

	// completionTime of the run.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// timeToVisibility from the share request to the first positive probe's end.
	// +optional
	TimeToVisibility *metav1.Duration `json:"timeToVisibility,omitempty"`

	// visibleAfter is timeToVisibility rounded for people, e.g. "5.9s".
	// +optional
	// +kubebuilder:validation:MaxLength=32
	VisibleAfter string `json:"visibleAfter,omitempty"`

	// surfaces are the run's results per probed surface, one entry each,
	// the same shape for every surface.
	// +optional
	// +listType=map
	// +listMapKey=surface
	// +kubebuilder:validation:MaxItems=8
	Surfaces []SurfaceSummary `json:"surfaces,omitempty"`

	// inFlight is the run's post-revocation delivery on the InFlight surface.
	// +optional
	InFlight *InFlightSummary `json:"inFlight,omitempty"`
}

// SurfaceSummary is a finished run's result on one surface.
type SurfaceSummary struct {
	// surface measured.
	// +required
	Surface Surface `json:"surface"`

	// bounds is the interval-censored time-to-exclusion (for an
	// UpdateContent run: of the old content).
	// +optional
	Bounds *ExclusionBounds `json:"bounds,omitempty"`

	// exclusion is bounds as an interval rounded outwards for people:
	// "1.2s–1.7s", ">30m" when right-censored, "?" when not established.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Exclusion string `json:"exclusion,omitempty"`

	// contentFreshness is, for an UpdateContent run, the time until the
	// surface served only the new content: the later of the new content
	// appearing and the old content going.
	// +optional
	ContentFreshness *ExclusionBounds `json:"contentFreshness,omitempty"`

	// slo is what the run was judged by on this surface.
	// +optional
	SLO *metav1.Duration `json:"slo,omitempty"`
	// sloSource says where slo came from, e.g. "corpus freshness.exclusionSLO".
	// +optional
	// +kubebuilder:validation:MaxLength=128
	SLOSource string `json:"sloSource,omitempty"`
}

// RevocationCanaryStatus is the observed state of a RevocationCanary.
type RevocationCanaryStatus struct {
	// observedGeneration is the generation last fully evaluated.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready (references resolve, schedule valid) and SLOMet
	// (the latest finished run met its SLO).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// active runs, oldest first.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	Active []LocalObjectReference `json:"active,omitempty"`

	// lastScheduleTime is when a run was last created.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`

	// nextScheduleTime is when the next run is due.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`

	// lastRunNowToken is the run-now annotation value last acted on.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	LastRunNowToken string `json:"lastRunNowToken,omitempty"`

	// lastRun summarises the latest finished run.
	// +optional
	LastRun *RunSummary `json:"lastRun,omitempty"`
}

// RevocationCanary schedules CanaryRuns that plant, share and revoke a
// canary document and measure how long revoked content stays retrievable.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rcan;canary,categories=ragcanary
// +kubebuilder:printcolumn:name="Corpus",type=string,JSONPath=`.spec.corpusRef.name`
// +kubebuilder:printcolumn:name="Persona",type=string,JSONPath=`.spec.personaRef.name`,priority=1
// +kubebuilder:printcolumn:name="SLO Met",type=string,JSONPath=`.status.conditions[?(@.type=="SLOMet")].status`
// +kubebuilder:printcolumn:name="Verdict",type=string,JSONPath=`.status.lastRun.verdict`
// +kubebuilder:printcolumn:name="Search Exclusion",type=string,JSONPath=`.status.lastRun.surfaces[?(@.surface=="Search")].exclusion`
// +kubebuilder:printcolumn:name="Cache Invalidation",type=string,JSONPath=`.status.lastRun.surfaces[?(@.surface=="Answer")].exclusion`
// +kubebuilder:printcolumn:name="Conversation Exclusion",type=string,JSONPath=`.status.lastRun.surfaces[?(@.surface=="Conversation")].exclusion`
// +kubebuilder:printcolumn:name="Visible After",type=string,JSONPath=`.status.lastRun.visibleAfter`,priority=1
// +kubebuilder:printcolumn:name="In-Flight Delivery",type=string,JSONPath=`.status.lastRun.inFlight.delivery`,priority=1
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.probing.schedule`,priority=1
// +kubebuilder:printcolumn:name="Last Run",type=date,JSONPath=`.status.lastRun.completionTime`
// +kubebuilder:printcolumn:name="Next Run",type=string,JSONPath=`.status.nextScheduleTime`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RevocationCanary struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired canary schedule and measurement.
	// +required
	Spec RevocationCanarySpec `json:"spec"`

	// status is the observed state of the canary.
	// +optional
	Status RevocationCanaryStatus `json:"status,omitempty"`
}

// RevocationCanaryList is a list of RevocationCanaries.
// +kubebuilder:object:root=true
type RevocationCanaryList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RevocationCanary `json:"items"`
}

func init() {
	SchemeBuilder.Register(&RevocationCanary{}, &RevocationCanaryList{})
}
