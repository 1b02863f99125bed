package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PersonaSpec describes a synthetic principal that probes a RAG system.
// +kubebuilder:validation:XValidation:rule="has(self.credentialSecretRef) != has(self.oauth2)",message="set exactly one of credentialSecretRef and oauth2"
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
	// into status, events or logs. Exactly one of credentialSecretRef and
	// oauth2 is set.
	// +optional
	CredentialSecretRef *SecretKeyReference `json:"credentialSecretRef,omitempty"`

	// oauth2 makes the persona's credential an OAuth2 access token, the form
	// enterprise assistants accept: the operator obtains it from the token
	// endpoint, replaces it before it expires, and sends it only to surfaces
	// on the token endpoint's own origin or on an origin listed in
	// audiences.
	// +optional
	OAuth2 *PersonaOAuth2 `json:"oauth2,omitempty"`
}

// OAuth2Grant is how a persona's OAuth2 tokens are obtained.
// +kubebuilder:validation:Enum=ClientCredentials;RefreshToken
type OAuth2Grant string

const (
	// OAuth2ClientCredentials: the client's own ID and secret (RFC 6749
	// section 4.4); the persona is the client.
	OAuth2ClientCredentials OAuth2Grant = "ClientCredentials"
	// OAuth2RefreshToken: a refresh token issued to the persona once (for
	// example by signing in through the application's consent page),
	// exchanged for each new access token (RFC 6749 section 6).
	OAuth2RefreshToken OAuth2Grant = "RefreshToken"
)

// OAuth2 credential keys of a persona's Secret.
const (
	OAuth2ClientIDKey     = "client_id"
	OAuth2ClientSecretKey = "client_secret"
	OAuth2RefreshTokenKey = "refresh_token"
)

// PersonaOAuth2 is a persona credential obtained from an OAuth2 token
// endpoint.
type PersonaOAuth2 struct {
	// grant: ClientCredentials or RefreshToken.
	// +required
	Grant OAuth2Grant `json:"grant"`

	// tokenURL is the authorization server's token endpoint. Like every URL
	// the operator calls, it must pass the operator's target allowlist and
	// address policy; redirects are not followed.
	// +required
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://[^\s]+$`
	TokenURL string `json:"tokenURL"`

	// secretRef names the persona's Secret (labelled as a ragcanary
	// credential) holding client_id, client_secret and, for the
	// RefreshToken grant, refresh_token. A rotated refresh token is kept in
	// memory only: an authorization server that invalidates each refresh
	// token it exchanges needs the Secret refreshed after an operator
	// restart.
	// +required
	SecretRef LocalObjectReference `json:"secretRef"`

	// scopes to ask for.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=256
	Scopes []string `json:"scopes,omitempty"`

	// refreshBefore: a token is replaced this long before it expires, or
	// when half its life is gone if that comes first, so no probe carries
	// a token about to expire. Defaults to 30s.
	// +optional
	RefreshBefore *metav1.Duration `json:"refreshBefore,omitempty"`

	// audiences are further origins (scheme://host[:port]) the token may be
	// sent to, beyond the token endpoint's own. A run whose probed surfaces
	// lie elsewhere is refused before any token is sent.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=512
	// +kubebuilder:validation:items:Pattern=`^https?://[^/\s]+$`
	Audiences []string `json:"audiences,omitempty"`

	// revocation says how a RevokeCredential canary revokes this persona's
	// client at its authorization server, and restores it at cleanup:
	// requests to the server's administrative API. Without it the persona
	// cannot be the probed persona of a RevokeCredential canary.
	// +optional
	Revocation *CredentialRevocation `json:"revocation,omitempty"`
}

// CredentialRevocation is how a persona's OAuth2 client is revoked and
// restored. Both requests go to url, through the operator's allowlist and
// address policy, follow no redirect, and send body as JSON; a reply
// outside expect (any 2xx by default) fails the step. Use a revocation
// that can be undone with the same credential (patch the client's grant
// types, or disable it): a deleted client or a rotated secret cannot be
// restored from the persona's Secret.
type CredentialRevocation struct {
	// url is the client's resource at the administrative API, for example
	// Hydra's http://hydra-admin:4445/admin/clients/<client_id>.
	// +required
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://[^\s]+$`
	URL string `json:"url"`

	// tokenSecretRef, when set, is a bearer token for the administrative
	// API, from a Secret labelled as a ragcanary credential.
	// +optional
	TokenSecretRef *SecretKeyReference `json:"tokenSecretRef,omitempty"`

	// revoke is the request that revokes the client.
	// +required
	Revoke CredentialRequest `json:"revoke"`

	// restore is the request that undoes it.
	// +required
	Restore CredentialRequest `json:"restore"`
}

// CredentialRequest is one request to a credential's administrative API.
type CredentialRequest struct {
	// method of the request.
	// +required
	// +kubebuilder:validation:Enum=POST;PUT;PATCH;DELETE
	Method string `json:"method"`

	// body is sent as is, as JSON (a JSON Patch for PATCH); no templating.
	// +optional
	// +kubebuilder:validation:MaxLength=8192
	Body string `json:"body,omitempty"`

	// expect are the accepted status codes; default any 2xx.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Minimum=200
	// +kubebuilder:validation:items:Maximum=499
	Expect []int32 `json:"expect,omitempty"`
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
