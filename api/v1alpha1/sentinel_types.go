package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Sentinel makes a canary a sentinel: a restricted document planted for its
// owner (personaRef) alone, never shared with anyone else and never
// revoked, watched for its whole lifetime by the control personas on every
// probed surface. Its payload reaching a control persona through any
// document (a digest, an FAQ, a summary a pipeline derived from it) is an
// isolation violation naming the carrier. Each run plants a fresh sentinel
// (new document, new payload), so a RevocationCanary's schedule re-plants
// it and derivation jobs keep seeing fresh content.
type Sentinel struct {
	// lifetime is how long one planted sentinel is watched after its owner
	// first saw it; then the run decides and removes the document, and the
	// canary's schedule plants the next one.
	// +optional
	// +kubebuilder:default="24h"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s')",message="lifetime must be at least 1s"
	Lifetime metav1.Duration `json:"lifetime,omitempty"`
}

// Bounds of the sentinel's evidence: status.sentinel.sightings keeps the
// first MaxSentinelSightings (totalSightings counts on), each naming at
// most MaxSightingCarriers carriers.
const (
	MaxSentinelSightings = 16
	MaxSightingCarriers  = 4
)

// SentinelStatus is what a sentinel run observed while watching.
type SentinelStatus struct {
	// watchStartTime is when watching began: the end of the owner's first
	// probe that saw the sentinel (status.visibleTime).
	// +optional
	WatchStartTime *metav1.MicroTime `json:"watchStartTime,omitempty"`

	// watchUntil is when the lifetime ends: watchStartTime + lifetime.
	// +optional
	WatchUntil *metav1.MicroTime `json:"watchUntil,omitempty"`

	// totalSightings counts control-persona probes that saw the payload,
	// also past the sightings kept below.
	// +optional
	TotalSightings int32 `json:"totalSightings,omitempty"`

	// sightings are the first sightings, in the order seen, at most 16:
	// the evidence of a violation.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Sightings []SentinelSighting `json:"sightings,omitempty"`
}

// SentinelSighting is one control-persona probe that saw the sentinel's
// payload (or its document).
type SentinelSighting struct {
	// persona is the control Persona that saw it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Persona string `json:"persona"`

	// surface it was seen on.
	// +required
	Surface Surface `json:"surface"`

	// carriers are the document or chunk IDs that carried it: the search
	// hits that showed it (each one a carrier), or the citations of the
	// answer that quoted it (the payload came from one of them; an answer
	// does not say which). Empty when an answer quoted the payload citing
	// nothing. Target-chosen text, sanitised and bounded; an ID holding a
	// canary secret is replaced by a placeholder.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=4
	// +kubebuilder:validation:items:MaxLength=256
	Carriers []string `json:"carriers,omitempty"`

	// ownDocument is true when a carrier is the sentinel's own document
	// (listed first): an access-list bug, not a derivation.
	// +optional
	OwnDocument bool `json:"ownDocument,omitempty"`

	// time is the end of the probe that saw it.
	// +required
	Time metav1.MicroTime `json:"time"`
}
