package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PersonaSpec describes a synthetic principal that probes a RAG system.
type PersonaSpec struct {
	// subject is the principal identifier the RAG system knows this persona by
	// (for example a user ID or e-mail address used in document ACLs).
	// It travels in request paths, so it follows the driver contract's
	// principal pattern (api/contract/driver.v1.yaml): no "/", "%", and no
	// "." or ".." that would rewrite the path.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=200
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._:@-]{0,199}$`
	Subject string `json:"subject"`

	// tenant is the tenant or workspace the subject belongs to, for systems
	// that partition principals by tenant.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Tenant string `json:"tenant,omitempty"`

	// groups the persona is a member of at the source, as the RAG system
	// names them. Each follows the driver contract's principal pattern.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=200
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z0-9][A-Za-z0-9._:@-]{0,199}$`
	Groups []string `json:"groups,omitempty"`

	// credentialSecretRef selects the Secret key holding the persona's bearer
	// credential. Retrieval runs with this credential so it passes through
	// the RAG system's real authorization path. The value is never copied
	// into status, events or logs.
	// +required
	CredentialSecretRef SecretKeyReference `json:"credentialSecretRef"`
}

// PersonaStatus is the observed state of a Persona.
type PersonaStatus struct {
	// observedGeneration is the generation last fully evaluated.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready is True when the credential Secret exists and holds
	// the named key.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Persona is a synthetic principal: a subject, its tenant and groups, and a
// credential that ragcanary uses to retrieve as that principal.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rcp;persona,categories=ragcanary
// +kubebuilder:printcolumn:name="Subject",type=string,JSONPath=`.spec.subject`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Persona struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired persona.
	// +required
	Spec PersonaSpec `json:"spec"`

	// status is the observed state of the persona.
	// +optional
	Status PersonaStatus `json:"status,omitempty"`
}

// PersonaList is a list of Personas.
// +kubebuilder:object:root=true
type PersonaList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Persona `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Persona{}, &PersonaList{})
}
