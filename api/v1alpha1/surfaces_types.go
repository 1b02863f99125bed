package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// CorpusSurfaces say where surfaces are probed when not through the driver:
// the assistant's own chat API, a search API of its own shape. The driver
// (and spec.permissions) still plants, shares and revokes; a surface not
// listed here is probed through the driver.
type CorpusSurfaces struct {
	// chat probes the Answer and Conversation surfaces, and the Stream
	// surface when stream is true, through an OpenAI-compatible
	// chat-completions API.
	// +optional
	Chat *ChatSurface `json:"chat,omitempty"`

	// search probes the Search surface through a JSON search API.
	// +optional
	Search *SearchSurface `json:"search,omitempty"`
}

// ChatSurfaceType names a chat API shape.
// +kubebuilder:validation:Enum=OpenAI
type ChatSurfaceType string

// ChatOpenAI is the OpenAI-compatible chat-completions API.
const ChatOpenAI ChatSurfaceType = "OpenAI"

// ChatSurface is an OpenAI-compatible chat-completions endpoint. The
// persona's credential is the API key (Authorization: Bearer).
type ChatSurface struct {
	// type of the API.
	// +required
	Type ChatSurfaceType `json:"type"`

	// url is the API's base URL; requests go to <url>/chat/completions. It
	// must be allowed by the operator's --allowed-target-urls.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://`
	URL string `json:"url"`

	// model is the request's model field.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Model string `json:"model"`

	// stream adds the Stream surface: the answer read as server-sent
	// events, the concatenated deltas.
	// +optional
	Stream bool `json:"stream,omitempty"`

	// systemPrompt, when set, is the first message of every request.
	// +optional
	// +kubebuilder:validation:MaxLength=8192
	SystemPrompt string `json:"systemPrompt,omitempty"`

	// extraBody is merged into every request body (fields some assistants
	// need: a collection, a tenant).
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	ExtraBody *apiextensionsv1.JSON `json:"extraBody,omitempty"`

	// citations is a JSON pointer (RFC 6901) into the completion to an
	// array of cited passages (strings, or objects with an "id"), for APIs
	// that carry citations outside the standard fields, e.g.
	// /choices/0/message/context/citations; in a stream it is read in every
	// chunk with "message" as "delta". Without it, detection relies on the
	// answer's text.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^(/.*)?$`
	Citations string `json:"citations,omitempty"`

	// sendClientHeaders sends the OpenAI SDK's X-Stainless-* headers, which
	// tell the API the operator's OS, architecture, Go and SDK versions
	// (some gateways route or log by them). Off: they are stripped.
	// +optional
	SendClientHeaders bool `json:"sendClientHeaders,omitempty"`
}

// SearchSurfaceType names a search API shape.
// +kubebuilder:validation:Enum=HTTP
type SearchSurfaceType string

// SearchHTTP is any JSON search API described by a request template and
// JSON pointers.
const SearchHTTP SearchSurfaceType = "HTTP"

// SearchSurface is a JSON search API: a request template and JSON pointers
// to the hits.
// +kubebuilder:validation:XValidation:rule="!has(self.headers) || !self.headers.exists(h, h.lowerAscii() == self.credentialHeader.name.lowerAscii())",message="headers must not set the credential header"
type SearchSurface struct {
	// type of the API.
	// +required
	Type SearchSurfaceType `json:"type"`

	// url of the search endpoint, without a query or fragment (query
	// parameters go in query); it must be allowed by the operator's
	// --allowed-target-urls.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://`
	URL string `json:"url"`

	// method of the request.
	// +optional
	// +kubebuilder:default=POST
	// +kubebuilder:validation:Enum=GET;POST
	Method string `json:"method,omitempty"`

	// headers sent with every request (never the credential: that goes in
	// credentialHeader only).
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	Headers map[string]string `json:"headers,omitempty"`

	// query are the URL's query parameters, e.g. api-version: 2025-05-01-preview
	// or q: "{{.Query}}": each value a template with the same values as body,
	// URL-escaped after rendering. No persona's credential may appear in
	// one.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) > 0 && size(k) <= 128)",message="query parameter names must be 1-128 characters"
	Query map[string]SearchQueryValue `json:"query,omitempty"`

	// body is a Go template of the request body with {{.Query}} and
	// {{.K}}; {{json .Query}} writes the query as a JSON string. It sees
	// those named values only: variables, assignments, with, range and
	// define are refused, and what it builds is bounded. It has no access
	// to the credential, files or the environment, and no persona's
	// credential may appear in it.
	// +optional
	// +kubebuilder:validation:MaxLength=8192
	Body string `json:"body,omitempty"`

	// credentialHeader is the header that carries the persona's credential,
	// and only it.
	// +required
	CredentialHeader CredentialHeader `json:"credentialHeader"`

	// hits is a JSON pointer to the array of hits in the reply, e.g.
	// /hits/hits or /value.
	// +required
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^(/.*)?$`
	Hits string `json:"hits"`

	// id is a JSON pointer, within a hit, to its document or chunk ID
	// ("<document>#<n>" counts as the document's).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^/`
	ID string `json:"id"`

	// text is a JSON pointer, within a hit, to its text, where the canary's
	// payload is looked for when the IDs are the system's own.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^/`
	Text string `json:"text,omitempty"`
}

// SearchQueryValue is the template of one URL query parameter's value.
// +kubebuilder:validation:MaxLength=1024
type SearchQueryValue string

// QueryTemplates are the query parameters as the surface package takes
// them; nil when there are none.
func (s *SearchSurface) QueryTemplates() map[string]string {
	if len(s.Query) == 0 {
		return nil
	}
	out := make(map[string]string, len(s.Query))
	for k, v := range s.Query {
		out[k] = string(v)
	}
	return out
}

// CredentialHeader names the header a persona's credential travels in.
type CredentialHeader struct {
	// name of the header, e.g. Authorization or api-key.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9-]+$`
	Name string `json:"name"`

	// prefix written before the credential, e.g. "Bearer " or "ApiKey ".
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Prefix string `json:"prefix,omitempty"`
}
