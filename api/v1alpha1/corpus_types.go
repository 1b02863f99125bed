package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DriverType names how ragcanary talks to a RAG system.
// +kubebuilder:validation:Enum=HTTP;Postgres;REST
type DriverType string

const (
	// DriverHTTP speaks the versioned REST driver contract
	// (api/contract/driver.v1.yaml); the reference ragtarget implements it.
	DriverHTTP DriverType = "HTTP"
	// DriverPostgres writes to a PostgreSQL/pgvector store with row-level security.
	DriverPostgres DriverType = "Postgres"
	// DriverREST plants through the source's own REST API, each operation
	// a short list of declared requests (docs/rest-source.md).
	DriverREST DriverType = "REST"
)

// HTTPDriver configures the REST contract driver.
type HTTPDriver struct {
	// url is the base URL of the contract implementation, for example
	// "http://ragtarget.rag.svc:8089". It must be allowed by the operator's
	// target URL allowlist and must not carry credentials.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['http', 'https']",message="url must be an absolute http or https URL"
	// +kubebuilder:validation:XValidation:rule="!isURL(self) || url(self).getHostname() != ''",message="url must name a host, for example http://ragtarget.rag.svc:8089"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[a-zA-Z][a-zA-Z0-9+.-]*://[^/]*@')",message="url must not embed credentials; use credentialSecretRef"
	URL string `json:"url"`

	// credentialSecretRef selects the Secret key holding the source-side
	// bearer credential used to create documents and change permissions.
	// +required
	CredentialSecretRef SecretKeyReference `json:"credentialSecretRef"`
}

// PostgresDriver configures the PostgreSQL/pgvector driver (docs/postgres.md).
type PostgresDriver struct {
	// dsnSecretRef selects the Secret key holding the writer's connection
	// string (URL or key=value form): documents, grants and memberships are
	// written there, normally the primary. Its host and port must be allowed
	// by the operator's allowlist as postgres://host:port; Unix sockets are
	// refused. The password lives only in the Secret.
	// +required
	DSNSecretRef SecretKeyReference `json:"dsnSecretRef"`

	// readDSNSecretRef selects the Secret key holding the connection string
	// personas read through, for example a hot standby the application reads
	// from. Its role must not bypass row-level security. Defaults to
	// dsnSecretRef.
	// +optional
	ReadDSNSecretRef *SecretKeyReference `json:"readDSNSecretRef,omitempty"`

	// schema holding the document, chunk and ACL tables.
	// +optional
	// +kubebuilder:default=public
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z_][a-z0-9_]*$`
	Schema string `json:"schema,omitempty"`

	// manageSchema creates the reference schema (tables, row-level security
	// policies, the reader's grants) when it is missing.
	// +optional
	ManageSchema bool `json:"manageSchema,omitempty"`

	// statements replace the reference schema's statements, so ragcanary
	// writes and reads the user's own tables. Each is validated by preparing
	// it when the Corpus is checked.
	// +optional
	Statements *PostgresStatements `json:"statements,omitempty"`
}

// PostgresStatements are parameterised SQL statements, one per operation;
// an unset one uses the reference schema's. Parameters are documented in
// docs/postgres.md; a statement may use a prefix of its operation's.
type PostgresStatements struct {
	// createDocument inserts a document: $1 id, $2 title, $3 body,
	// $4 principals text[], $5 chunk texts text[], $6 chunk embeddings text[].
	// It runs after deleteDocument in the same transaction.
	// +optional
	// +kubebuilder:validation:MaxLength=8192
	CreateDocument string `json:"createDocument,omitempty"`

	// deleteDocument deletes a document and its chunks and grants: $1 id.
	// +optional
	// +kubebuilder:validation:MaxLength=8192
	DeleteDocument string `json:"deleteDocument,omitempty"`

	// grant allows a principal to read a document: $1 document id, $2 principal.
	// +optional
	// +kubebuilder:validation:MaxLength=8192
	Grant string `json:"grant,omitempty"`

	// revoke removes a grant: $1 document id, $2 principal.
	// +optional
	// +kubebuilder:validation:MaxLength=8192
	Revoke string `json:"revoke,omitempty"`

	// addMember adds a principal to a group: $1 group, $2 principal.
	// +optional
	// +kubebuilder:validation:MaxLength=8192
	AddMember string `json:"addMember,omitempty"`

	// removeMember removes a principal from a group: $1 group, $2 principal.
	// +optional
	// +kubebuilder:validation:MaxLength=8192
	RemoveMember string `json:"removeMember,omitempty"`

	// session runs first in each read transaction: $1 persona subject. A
	// statement returning columns but no row refuses the persona.
	// +optional
	// +kubebuilder:validation:MaxLength=8192
	Session string `json:"session,omitempty"`

	// search retrieves as the persona: $1 query, $2 k, $3 query embedding
	// (pgvector literal); returns (chunk id, document id, score), best first.
	// +optional
	// +kubebuilder:validation:MaxLength=8192
	Search string `json:"search,omitempty"`
}

// RESTDriver plants through a source's own REST API (docs/rest-source.md):
// each driver operation is a short list of declared requests. Templates see
// only named values; captured reply values are bounded, validated and
// escaped wherever they are used, and no request leaves url's path.
type RESTDriver struct {
	// url is the base URL every request path is appended to, for example
	// "https://gitea.example/api/v1". It must be allowed by the operator's
	// target URL allowlist and must not carry credentials; its path is a
	// prefix no rendered path can leave.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['http', 'https']",message="url must be an absolute http or https URL"
	// +kubebuilder:validation:XValidation:rule="!isURL(self) || url(self).getHostname() != ''",message="url must name a host, for example https://gitea.example/api/v1"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[a-zA-Z][a-zA-Z0-9+.-]*://[^/]*@')",message="url must not embed credentials; use auth.secretRef"
	URL string `json:"url"`

	// auth is how requests authenticate; unset sends no credential.
	// +optional
	Auth *RESTAuth `json:"auth,omitempty"`

	// values are static named values templates read as {{.Values.<name>}},
	// for example org: ragcanary.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	Values map[string]RESTValue `json:"values,omitempty"`

	// operations are the requests each driver operation sends, in order.
	// createDocument and deleteDocument are required; the others decide
	// which revocation methods the corpus supports.
	// +required
	Operations RESTOperations `json:"operations"`
}

// RESTValue is a static value or a template of the REST source.
// +kubebuilder:validation:MaxLength=1024
type RESTValue string

// RESTAuthType names how a REST source authenticates.
// +kubebuilder:validation:Enum=Bearer;Basic;Header;OAuth2ClientCredentials
type RESTAuthType string

// REST source authentication types.
const (
	// RESTAuthBearer sends "Authorization: <scheme> <secret>".
	RESTAuthBearer RESTAuthType = "Bearer"
	// RESTAuthBasic sends HTTP basic auth with username and the secret as password.
	RESTAuthBasic RESTAuthType = "Basic"
	// RESTAuthHeader sends the secret as the value of header.
	RESTAuthHeader RESTAuthType = "Header"
	// RESTAuthOAuth2ClientCredentials fetches a token from tokenURL with
	// clientID and the secret, caches it until it expires, and sends it as
	// a bearer token.
	RESTAuthOAuth2ClientCredentials RESTAuthType = "OAuth2ClientCredentials"
)

// RESTAuth is a REST source's credential. It travels only in its own
// header (and, for OAuth2, to tokenURL); a rendered path, query, header or
// body holding it is refused.
// +kubebuilder:validation:XValidation:rule="self.type != 'Basic' || has(self.username)",message="username is required when type is Basic"
// +kubebuilder:validation:XValidation:rule="self.type != 'Header' || has(self.header)",message="header is required when type is Header"
// +kubebuilder:validation:XValidation:rule="self.type != 'OAuth2ClientCredentials' || (has(self.tokenURL) && has(self.clientID))",message="tokenURL and clientID are required when type is OAuth2ClientCredentials"
// +kubebuilder:validation:XValidation:rule="self.type == 'Bearer' || !has(self.scheme)",message="scheme is only for type Bearer"
type RESTAuth struct {
	// type of credential.
	// +required
	Type RESTAuthType `json:"type"`

	// secretRef selects the Secret key holding the token, password, header
	// value or OAuth2 client secret; the Secret must be labelled
	// ragcanary.dev/credential=true.
	// +required
	SecretRef SecretKeyReference `json:"secretRef"`

	// scheme precedes a Bearer token in the Authorization header, for
	// example "token" for Gitea. Defaults to Bearer.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9_-]*$`
	Scheme string `json:"scheme,omitempty"`

	// username for Basic.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[^:\x00-\x1f\x7f]+$`
	Username string `json:"username,omitempty"`

	// header carries the secret for type Header, for example X-API-Key.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9!#$%&'*+.^_|~-]+$`
	Header string `json:"header,omitempty"`

	// tokenURL is the OAuth2 token endpoint; allowed by the operator's
	// allowlist like every URL.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['http', 'https']",message="tokenURL must be an absolute http or https URL"
	TokenURL string `json:"tokenURL,omitempty"`

	// clientID is the OAuth2 client.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	ClientID string `json:"clientID,omitempty"`

	// scopes requested with the OAuth2 token.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=256
	Scopes []string `json:"scopes,omitempty"`
}

// RESTOperations are the requests of each driver operation. An operation
// not declared does not exist: the corpus's revocation methods follow from
// those declared (RemoveGrant: grant and revoke; DeleteDocument: grant and
// deleteDocument; RemoveFromGroup: addToGroup, removeFromGroup, and
// grantGroup or grant; UpdateContent: updateContent).
type RESTOperations struct {
	// createDocument creates the document ({{.DocumentID}}, {{.Title}},
	// {{.Body}}); required.
	// +optional
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	CreateDocument []RESTRequest `json:"createDocument,omitempty"`

	// deleteDocument deletes it; required. A 404 is "already gone".
	// +optional
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	DeleteDocument []RESTRequest `json:"deleteDocument,omitempty"`

	// grant lets {{.Principal}} read the document.
	// +optional
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	Grant []RESTRequest `json:"grant,omitempty"`

	// revoke removes that grant. A 404 is "already gone".
	// +optional
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	Revoke []RESTRequest `json:"revoke,omitempty"`

	// grantGroup lets the members of {{.Group}} read the document; without
	// it a group is granted through grant with {{.Principal}} the group.
	// +optional
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	GrantGroup []RESTRequest `json:"grantGroup,omitempty"`

	// revokeGroup removes the group's grant. A 404 is "already gone".
	// +optional
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	RevokeGroup []RESTRequest `json:"revokeGroup,omitempty"`

	// addToGroup adds {{.Subject}} to {{.Group}}.
	// +optional
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	AddToGroup []RESTRequest `json:"addToGroup,omitempty"`

	// removeFromGroup removes {{.Subject}} from {{.Group}}. A 404 is
	// "already gone".
	// +optional
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	RemoveFromGroup []RESTRequest `json:"removeFromGroup,omitempty"`

	// updateContent replaces the document's title and body (UpdateContent
	// canaries).
	// +optional
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	UpdateContent []RESTRequest `json:"updateContent,omitempty"`

	// lookupDocument finds a created document again by {{.DocumentID}} and
	// captures every name createDocument captures, for a run restarted
	// before createDocument's captures were persisted. A 404 means not
	// found.
	// +optional
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	LookupDocument []RESTRequest `json:"lookupDocument,omitempty"`
}

// RESTMethod is an HTTP method a REST source request may use.
// +kubebuilder:validation:Enum=GET;POST;PUT;PATCH;DELETE
type RESTMethod string

// RESTRequest is one declared request. Its templates see {{.DocumentID}},
// {{.Title}}, {{.Body}}, {{.Subject}}, {{.Group}}, {{.Principal}},
// {{.Run}}, {{.Values.<name>}} and {{.Captured.<name>}}, nothing else.
type RESTRequest struct {
	// method of the request.
	// +required
	Method RESTMethod `json:"method"`

	// path is a template appended to url's path. Values in it are
	// path-segment escaped; the result may not leave url's path ("..",
	// "//", a scheme or host, "?" or "#").
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Path string `json:"path,omitempty"`

	// query maps parameter names to value templates; values are always
	// URL-escaped.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	Query map[string]RESTValue `json:"query,omitempty"`

	// headers maps header names to value templates. Hop-by-hop headers,
	// Authorization, Cookie, Host and the auth header are refused.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	Headers map[string]RESTValue `json:"headers,omitempty"`

	// body is a JSON body template; it must render JSON for any value
	// (write values as {{json .Title}}).
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

	// capture maps names to RFC 6901 JSON pointers into the reply; each
	// must name a string or a number. Captured values are kept per
	// document and read by later requests as {{.Captured.<name>}}.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	Capture map[string]RESTValue `json:"capture,omitempty"`
}

// Driver selects and configures the driver for a corpus.
// +kubebuilder:validation:XValidation:rule="self.type != 'HTTP' || has(self.http)",message="http is required when type is HTTP"
// +kubebuilder:validation:XValidation:rule="self.type != 'Postgres' || has(self.postgres)",message="postgres is required when type is Postgres"
// +kubebuilder:validation:XValidation:rule="self.type != 'REST' || has(self.rest)",message="rest is required when type is REST"
// +kubebuilder:validation:XValidation:rule="(has(self.http) ? 1 : 0) + (has(self.postgres) ? 1 : 0) + (has(self.rest) ? 1 : 0) <= 1",message="set only the block matching type"
type Driver struct {
	// type of driver.
	// +required
	Type DriverType `json:"type"`

	// http configures the HTTP contract driver.
	// +optional
	HTTP *HTTPDriver `json:"http,omitempty"`

	// postgres configures the PostgreSQL driver.
	// +optional
	Postgres *PostgresDriver `json:"postgres,omitempty"`

	// rest configures the declarative REST source.
	// +optional
	REST *RESTDriver `json:"rest,omitempty"`

	// timeout bounds each call to the RAG system.
	// +optional
	// +kubebuilder:default="10s"
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s') && duration(self) <= duration('5m')",message="timeout must be positive and at most 5m"
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// Freshness holds the corpus's service-level objectives for permission and
// content changes.
// +kubebuilder:validation:XValidation:rule="!has(self.visibilitySLO) || !has(self.contentFreshnessSLO)",message="visibilitySLO is the deprecated name of contentFreshnessSLO; set only contentFreshnessSLO"
type Freshness struct {
	// visibilitySLO is deprecated: it was declared and never used. It is
	// read as contentFreshnessSLO when that is unset; set
	// contentFreshnessSLO instead (only one of the two may be set).
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="visibilitySLO must be positive"
	VisibilitySLO *metav1.Duration `json:"visibilitySLO,omitempty"`

	// contentFreshnessSLO is how soon an edited document must be served
	// only in its new version: the new content visible and the old content
	// gone, on every probed surface. UpdateContent canaries are judged by
	// it. Defaults to the surface's exclusion SLO (exclusionSLO, or
	// cacheInvalidationSLO for answers) when unset.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="contentFreshnessSLO must be positive"
	ContentFreshnessSLO *metav1.Duration `json:"contentFreshnessSLO,omitempty"`

	// exclusionSLO is how soon revoked content must stop being retrievable.
	// +optional
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="exclusionSLO must be positive"
	ExclusionSLO *metav1.Duration `json:"exclusionSLO,omitempty"`

	// cacheInvalidationSLO is how soon answers must stop citing revoked content.
	// Defaults to exclusionSLO when unset.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="cacheInvalidationSLO must be positive"
	CacheInvalidationSLO *metav1.Duration `json:"cacheInvalidationSLO,omitempty"`

	// postRevocationDeliverySLO is how long after a revocation request an
	// answer already streaming may still deliver the revoked content
	// (InFlight surface). 0s requires none at all: any canary content after
	// the request breaches. Defaults to exclusionSLO when unset.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="postRevocationDeliverySLO must not be negative"
	PostRevocationDeliverySLO *metav1.Duration `json:"postRevocationDeliverySLO,omitempty"`
}

// RateLimit bounds the request rate to one corpus, shared by every canary and
// suite that targets it.
type RateLimit struct {
	// requestsPerSecond is the sustained rate. Unset uses the operator's
	// default (--default-requests-per-second, 10 unless configured).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	RequestsPerSecond int32 `json:"requestsPerSecond,omitempty"`

	// burst is the largest number of requests sent at once. Unset uses the
	// operator's default (--default-burst, 20 unless configured).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	Burst int32 `json:"burst,omitempty"`
}

// CorpusSpec describes a RAG system under test.
// PermissionsType names a permissions backend.
// +kubebuilder:validation:Enum=SpiceDB;OpenFGA
type PermissionsType string

const (
	// PermissionsSpiceDB keeps permissions as SpiceDB relationships.
	PermissionsSpiceDB PermissionsType = "SpiceDB"
	// PermissionsOpenFGA keeps permissions as OpenFGA relationship tuples.
	PermissionsOpenFGA PermissionsType = "OpenFGA"
)

// Permissions selects and configures a permissions backend.
// +kubebuilder:validation:XValidation:rule="self.type != 'SpiceDB' || has(self.spicedb)",message="spicedb is required when type is SpiceDB"
// +kubebuilder:validation:XValidation:rule="self.type != 'OpenFGA' || has(self.openfga)",message="openfga is required when type is OpenFGA"
type Permissions struct {
	// type of permissions backend.
	// +required
	Type PermissionsType `json:"type"`

	// spicedb configures the SpiceDB backend.
	// +optional
	SpiceDB *SpiceDBPermissions `json:"spicedb,omitempty"`

	// openfga configures the OpenFGA backend.
	// +optional
	OpenFGA *OpenFGAPermissions `json:"openfga,omitempty"`
}

// OpenFGAPermissions maps ragcanary's permission operations onto an OpenFGA
// store's model: a grant is the tuple (subjectType:<subject>, grantRelation,
// documentType:<doc>) or (groupType:<group>#memberRelation, ...), a
// membership is (subjectType:<subject>, memberRelation, groupType:<group>).
// +kubebuilder:validation:XValidation:rule="has(self.storeID) != has(self.storeName)",message="set exactly one of storeID and storeName"
type OpenFGAPermissions struct {
	// apiURL is OpenFGA's HTTP API, http(s)://host:port. It must be allowed
	// by the operator's --allowed-target-urls like any HTTP target.
	// +required
	// +kubebuilder:validation:MinLength=8
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://`
	APIURL string `json:"apiURL"`

	// storeID is the store tuples are written to.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[0-9A-HJKMNP-TV-Z]{26}$`
	StoreID string `json:"storeID,omitempty"`

	// storeName names the store instead of storeID; it must name exactly
	// one store. It is resolved once per check and shown in
	// status.permissions.storeID.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	StoreName string `json:"storeName,omitempty"`

	// authorizationModelID pins the model checks and writes use; empty is
	// the store's latest model.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^$|^[0-9A-HJKMNP-TV-Z]{26}$`
	AuthorizationModelID string `json:"authorizationModelID,omitempty"`

	// apiTokenSecretRef selects the Secret key holding OpenFGA's preshared
	// key, sent as a bearer token to apiURL only; the Secret must be
	// labelled ragcanary.dev/credential=true.
	// +required
	APITokenSecretRef SecretKeyReference `json:"apiTokenSecretRef"`

	// The model's names a grant and a membership are written under.
	PermissionsMapping `json:",inline"`
}

// PermissionsMapping names the types and relations ragcanary's permission
// operations are written as, in SpiceDB and OpenFGA alike.
type PermissionsMapping struct {
	// documentType is the definition of documents.
	// +optional
	// +kubebuilder:default=document
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9_]{1,62}[a-z0-9](/[a-z][a-z0-9_]{1,62}[a-z0-9])?$`
	DocumentType string `json:"documentType,omitempty"`

	// grantRelation is the document relation that grants reading.
	// +optional
	// +kubebuilder:default=viewer
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9_]{1,62}[a-z0-9]$`
	GrantRelation string `json:"grantRelation,omitempty"`

	// groupType is the definition of groups.
	// +optional
	// +kubebuilder:default=group
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9_]{1,62}[a-z0-9](/[a-z][a-z0-9_]{1,62}[a-z0-9])?$`
	GroupType string `json:"groupType,omitempty"`

	// memberRelation is the group relation holding its members.
	// +optional
	// +kubebuilder:default=member
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9_]{1,62}[a-z0-9]$`
	MemberRelation string `json:"memberRelation,omitempty"`

	// subjectType is the definition persona subjects are (e.g. user).
	// +optional
	// +kubebuilder:default=user
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9_]{1,62}[a-z0-9](/[a-z][a-z0-9_]{1,62}[a-z0-9])?$`
	SubjectType string `json:"subjectType,omitempty"`
}

// SpiceDBPermissions maps ragcanary's permission operations onto a SpiceDB
// schema: a grant is documentType:<doc>#grantRelation@subjectType:<subject>
// (or @groupType:<group>#memberRelation), a membership is
// groupType:<group>#memberRelation@subjectType:<subject>.
type SpiceDBPermissions struct {
	// endpoint is the gRPC address, host:port. It must be allowed by the
	// operator's --allowed-target-urls as grpc://host:port.
	// +required
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9.-]+:[0-9]{1,5}$|^\[[0-9A-Fa-f:]+\]:[0-9]{1,5}$`
	Endpoint string `json:"endpoint"`

	// presharedKeySecretRef selects the Secret key holding SpiceDB's
	// preshared key; the Secret must be labelled ragcanary.dev/credential=true.
	// +required
	PresharedKeySecretRef SecretKeyReference `json:"presharedKeySecretRef"`

	// insecure allows plaintext gRPC; without it the endpoint is reached over
	// TLS (system roots) and plaintext is refused. With it the key travels
	// unencrypted: use it only on loopback or a trusted network.
	// +optional
	Insecure bool `json:"insecure,omitempty"`

	// The schema names a grant and a membership are written under.
	PermissionsMapping `json:",inline"`
}

// +kubebuilder:validation:XValidation:rule="self.driver.type != 'REST' || (has(self.surfaces) && (has(self.surfaces.search) || has(self.surfaces.chat)))",message="a REST source plants only: declare spec.surfaces.search or spec.surfaces.chat"
type CorpusSpec struct {
	// driver says how to reach the RAG system.
	// +required
	Driver Driver `json:"driver"`

	// freshness holds the SLOs canaries against this corpus are judged by.
	// +optional
	// +kubebuilder:default={}
	Freshness Freshness `json:"freshness,omitempty"`

	// rateLimit bounds all probe and suite traffic to this corpus.
	// +optional
	// +kubebuilder:default={}
	RateLimit RateLimit `json:"rateLimit,omitempty"`

	// permissions says where permission changes go (grants, revocations,
	// group memberships) when the system keeps them outside its index, in an
	// authorization engine asked at query time. Default: the driver itself.
	// Documents and search always go through the driver.
	// +optional
	Permissions *Permissions `json:"permissions,omitempty"`

	// directory is the organisation's directory the system under test
	// takes its groups from. With one, a canary's group memberships are
	// changed there, not in the target, so a RemoveFromGroup run measures
	// the target's group sync as well as its index.
	// +optional
	Directory *Directory `json:"directory,omitempty"`

	// surfaces say where surfaces are probed when not through the driver:
	// the assistant's own chat API or search API. A surface not listed is
	// probed through the driver.
	// +optional
	Surfaces *CorpusSurfaces `json:"surfaces,omitempty"`

	// healthCheckInterval is how often the driver's capabilities are re-checked.
	// +optional
	// +kubebuilder:default="1m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('5s')",message="healthCheckInterval must be at least 5s"
	HealthCheckInterval *metav1.Duration `json:"healthCheckInterval,omitempty"`
}

// RevocationMethod is how access to a canary document is taken away.
// +kubebuilder:validation:Enum=RemoveGrant;RemoveFromGroup;DeleteDocument;UpdateContent;RevokeCredential
type RevocationMethod string

const (
	// RevokeRemoveGrant removes the persona's grant on the document.
	RevokeRemoveGrant RevocationMethod = "RemoveGrant"
	// RevokeRemoveFromGroup removes the persona from the group the document is shared with.
	RevokeRemoveFromGroup RevocationMethod = "RemoveFromGroup"
	// RevokeDeleteDocument deletes the document at the source.
	RevokeDeleteDocument RevocationMethod = "DeleteDocument"
	// RevokeUpdateContent replaces the document's body with a second
	// payload (a content-freshness canary): the persona keeps access, and
	// the run measures when the new content appears and the old is gone.
	RevokeUpdateContent RevocationMethod = "UpdateContent"
	// RevokeCredential revokes the probed persona's OAuth2 client at its
	// authorization server (spec.oauth2.revocation of its Persona); its
	// grant on the document stays. The run measures how long the tokens
	// already issued keep reading: a refusal of the persona's credential,
	// by the token endpoint or by the surface, is the exclusion. No driver
	// makes this revocation; the target needs RemoveGrant for the share.
	RevokeCredential RevocationMethod = "RevokeCredential"
)

// OperatorRevocationMethods are the methods the operator makes itself,
// outside the driver contract: a target never reports them.
var OperatorRevocationMethods = []RevocationMethod{RevokeCredential}

// RevocationMethods is the driver contract's vocabulary of revocation
// methods, in the contract's order; the enum marker above and the
// contract's RevocationMethod schema must list the same (a test checks).
var RevocationMethods = []RevocationMethod{RevokeRemoveGrant, RevokeRemoveFromGroup, RevokeDeleteDocument, RevokeUpdateContent}

// CorpusCapabilities is what the driver reported it supports.
type CorpusCapabilities struct {
	// contractVersion the target implements.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	ContractVersion string `json:"contractVersion,omitempty"`

	// revocationMethods the target supports.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=8
	RevocationMethods []RevocationMethod `json:"revocationMethods,omitempty"`

	// answerSurface is true when the target has an answer endpoint.
	// +optional
	AnswerSurface bool `json:"answerSurface,omitempty"`

	// conversationSurface is true when the target serves conversations
	// (driver contract v1.1).
	// +optional
	ConversationSurface bool `json:"conversationSurface,omitempty"`
}

// CorpusStatus is the observed state of a Corpus.
type CorpusStatus struct {
	// observedGeneration is the generation last fully evaluated.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready is True when the credential resolves and the target
	// answered its capabilities check with a supported contract version.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// capabilities last reported by the target.
	// +optional
	Capabilities *CorpusCapabilities `json:"capabilities,omitempty"`

	// lastCheckTime is when the target was last checked.
	// +optional
	LastCheckTime *metav1.Time `json:"lastCheckTime,omitempty"`

	// measurableSurfaces are the surfaces canaries on this corpus can probe:
	// those its driver serves and those spec.surfaces declares.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=8
	MeasurableSurfaces []Surface `json:"measurableSurfaces,omitempty"`

	// permissions is what the last check of the permissions backend
	// resolved.
	// +optional
	Permissions *PermissionsStatus `json:"permissions,omitempty"`
}

// PermissionsStatus is what a permissions backend check resolved.
type PermissionsStatus struct {
	// storeID is the OpenFGA store written to (spec.permissions.openfga.storeName resolved).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	StoreID string `json:"storeID,omitempty"`

	// authorizationModelID is the OpenFGA model that was checked: the
	// pinned one, or the store's latest when none is pinned.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	AuthorizationModelID string `json:"authorizationModelID,omitempty"`
}

// Corpus is a RAG system under test: the driver that writes canary documents
// and their ACLs into its source, the surfaces personas read, and its SLOs.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rcc,categories=ragcanary
// +kubebuilder:printcolumn:name="Driver",type=string,JSONPath=`.spec.driver.type`
// +kubebuilder:printcolumn:name="Contract",type=string,JSONPath=`.status.capabilities.contractVersion`
// +kubebuilder:printcolumn:name="Exclusion SLO",type=string,JSONPath=`.spec.freshness.exclusionSLO`
// +kubebuilder:printcolumn:name="Surfaces",type=string,JSONPath=`.status.measurableSurfaces`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Corpus struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired corpus.
	// +required
	Spec CorpusSpec `json:"spec"`

	// status is the observed state of the corpus.
	// +optional
	Status CorpusStatus `json:"status,omitempty"`
}

// CorpusList is a list of Corpora.
// +kubebuilder:object:root=true
type CorpusList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Corpus `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Corpus{}, &CorpusList{})
}
