package v1alpha1

import "slices"

// The facts of a Corpus's backends, read from whichever block its types
// select, so the controllers, the door, the manifests reader of live mode,
// the reports and the CLI all read one list: a backend's Secret reference
// or endpoint written down in one of them only is how a token went missing
// from another.

// CorpusSecretRef is one Secret key a Corpus reads.
// +kubebuilder:object:generate=false
type CorpusSecretRef struct {
	// Field is the spec field holding the reference, as messages name it.
	Field string
	// Use says what the Secret holds, in the words a report shows.
	Use string
	// Ref is the Secret and key.
	Ref SecretKeyReference
}

// SecretRefs are every Secret key the corpus reads: its driver's, its
// permissions backend's and its directory's. spec.surfaces has none: a surface is read with
// each persona's own credential.
func (s *CorpusSpec) SecretRefs() []CorpusSecretRef {
	out := s.Driver.secretRefs()
	if b, ok := s.Permissions.Backend(); ok {
		out = append(out, CorpusSecretRef{Field: b.KeyField, Use: b.KeyUse, Ref: b.KeyRef})
	}
	return append(out, s.Directory.secretRefs()...)
}

// secretRefs are the references of the directory block d.Type selects.
func (d *Directory) secretRefs() []CorpusSecretRef {
	if d == nil || d.Type != DirectoryLDAP || d.LDAP == nil {
		return nil
	}
	out := []CorpusSecretRef{{Field: "spec.directory.ldap.bindPasswordSecretRef", Use: "directory bind password",
		Ref: d.LDAP.BindPasswordSecretRef}}
	if r := d.LDAP.CASecretRef; r != nil {
		out = append(out, CorpusSecretRef{Field: "spec.directory.ldap.caSecretRef", Use: "directory CA", Ref: *r})
	}
	return out
}

// SecretNames are the names of the Secrets the corpus reads, each once, in
// the order of SecretRefs: what a watch on Secrets indexes a Corpus by.
func (s *CorpusSpec) SecretNames() []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range s.SecretRefs() {
		if !seen[r.Ref.Name] {
			seen[r.Ref.Name] = true
			out = append(out, r.Ref.Name)
		}
	}
	return out
}

// secretRefs are the references of the block d.Type selects.
func (d *Driver) secretRefs() []CorpusSecretRef {
	switch {
	case d.Type == DriverHTTP && d.HTTP != nil:
		return []CorpusSecretRef{{Field: "spec.driver.http.credentialSecretRef", Use: "corpus driver credential",
			Ref: d.HTTP.CredentialSecretRef}}
	case d.Type == DriverPostgres && d.Postgres != nil:
		out := []CorpusSecretRef{{Field: "spec.driver.postgres.dsnSecretRef", Use: "corpus connection string",
			Ref: d.Postgres.DSNSecretRef}}
		if r := d.Postgres.ReadDSNSecretRef; r != nil {
			out = append(out, CorpusSecretRef{Field: "spec.driver.postgres.readDSNSecretRef",
				Use: "corpus reader connection string", Ref: *r})
		}
		return out
	case d.Type == DriverREST && d.REST != nil && d.REST.Auth != nil:
		return []CorpusSecretRef{{Field: "spec.driver.rest.auth.secretRef", Use: "corpus REST source credential",
			Ref: d.REST.Auth.SecretRef}}
	}
	return nil
}

// PermissionsBackend is what a Corpus's permissions backend is, read from
// the block its type selects.
// +kubebuilder:object:generate=false
type PermissionsBackend struct {
	// Type is the backend's type.
	Type PermissionsType
	// Field is the spec block holding its settings, for messages.
	Field string
	// Endpoint is the URL the operator's allowlist must admit:
	// grpc://host:port for SpiceDB, the HTTP API for OpenFGA; EndpointField
	// is the spec field it comes from.
	Endpoint, EndpointField string
	// KeyField is the spec field naming its credential, KeyUse what a
	// report calls it, KeyRef the Secret key.
	KeyField, KeyUse string
	KeyRef           SecretKeyReference
	// Mapping names the types and relations grants and memberships are
	// written as.
	Mapping PermissionsMapping
	// Store is where, within the endpoint, relationships are kept, when
	// one server holds several places (OpenFGA's store ID or name and the
	// pinned model, "store=… name=… model=…"); empty when the endpoint
	// alone names it. It is part of the target's identity.
	Store string
}

// Backend is p's backend; false when p is nil, its type unknown to this
// API, or the block its type selects missing.
func (p *Permissions) Backend() (PermissionsBackend, bool) {
	switch {
	case p == nil:
		return PermissionsBackend{}, false
	case p.Type == PermissionsSpiceDB && p.SpiceDB != nil:
		s := p.SpiceDB
		return PermissionsBackend{Type: p.Type, Field: "spec.permissions.spicedb", Endpoint: "grpc://" + s.Endpoint,
			EndpointField: "spec.permissions.spicedb.endpoint",
			KeyField:      "spec.permissions.spicedb.presharedKeySecretRef", KeyUse: "corpus SpiceDB preshared key",
			KeyRef: s.PresharedKeySecretRef, Mapping: s.PermissionsMapping}, true
	case p.Type == PermissionsOpenFGA && p.OpenFGA != nil:
		s := p.OpenFGA
		return PermissionsBackend{Type: p.Type, Field: "spec.permissions.openfga", Endpoint: s.APIURL,
			EndpointField: "spec.permissions.openfga.apiURL",
			KeyField:      "spec.permissions.openfga.apiTokenSecretRef", KeyUse: "corpus OpenFGA API token",
			KeyRef: s.APITokenSecretRef, Mapping: s.PermissionsMapping,
			Store: "store=" + s.StoreID + " name=" + s.StoreName + " model=" + s.AuthorizationModelID}, true
	}
	return PermissionsBackend{}, false
}

// Serves are the surfaces the declared entries probe, in the Surface
// enum's order: the chat API's Answer and Conversation, and with stream
// its Stream and InFlight; the search API's Search. Nil when none.
func (s *CorpusSurfaces) Serves() []Surface {
	if s == nil {
		return nil
	}
	var out []Surface
	if s.Search != nil {
		out = append(out, SurfaceSearch)
	}
	if s.Chat != nil {
		out = append(out, SurfaceAnswer, SurfaceConversation)
		if s.Chat.Stream {
			out = append(out, SurfaceStream, SurfaceInFlight)
		}
	}
	return out
}

// URLs are the declared surfaces' URLs, each a URL the operator's
// allowlist must admit.
func (s *CorpusSurfaces) URLs() []string {
	if s == nil {
		return nil
	}
	var out []string
	if s.Chat != nil {
		out = append(out, s.Chat.URL)
	}
	if s.Search != nil {
		out = append(out, s.Search.URL)
	}
	return out
}

// SurfaceURL is where a probe of surface goes with the persona's
// credential: the declared surface serving it, or else the driver. "" when
// no persona credential travels (a Postgres corpus names the principal in
// the transaction).
func (s *CorpusSpec) SurfaceURL(surface Surface) string {
	if slices.Contains(s.Surfaces.Serves(), surface) {
		if surface == SurfaceSearch {
			return s.Surfaces.Search.URL
		}
		return s.Surfaces.Chat.URL
	}
	switch {
	case s.Driver.Type == DriverHTTP && s.Driver.HTTP != nil:
		return s.Driver.HTTP.URL
	case s.Driver.Type == DriverREST && s.Driver.REST != nil:
		return s.Driver.REST.URL
	}
	return ""
}

// RevokedIn names the system a revocation changes: where access is taken
// away, so where the lag a run measures begins.
// +kubebuilder:object:generate=false
type RevokedIn string

const (
	// RevokedInTarget: the system under test itself (its driver).
	RevokedInTarget RevokedIn = "target"
	// RevokedInPermissions: the corpus's permissions backend (SpiceDB,
	// OpenFGA), which the target asks at query time.
	RevokedInPermissions RevokedIn = "permissions"
	// RevokedInDirectory: the organisation's directory the target
	// synchronises its groups from.
	RevokedInDirectory RevokedIn = "directory"
	// RevokedInIssuer: the persona's OAuth2 authorization server.
	RevokedInIssuer RevokedIn = "issuer"
)

// RevokedIn is where a revocation by method is made in this corpus:
// documents always go through the driver; a credential at its issuer; a
// group membership goes to the
// directory when there is one, else to the permissions backend when there
// is one; a grant goes to the permissions backend when there is one. It is
// the path the door builds (internal/target), stated for metrics and
// reports. An empty method is the API's default, RemoveGrant.
func (s *CorpusSpec) RevokedIn(method RevocationMethod) RevokedIn {
	switch method {
	case RevokeDeleteDocument, RevokeUpdateContent:
		return RevokedInTarget
	case RevokeCredential:
		return RevokedInIssuer
	case RevokeRemoveFromGroup:
		if s.Directory != nil {
			return RevokedInDirectory
		}
	}
	if s.Permissions != nil {
		return RevokedInPermissions
	}
	return RevokedInTarget
}
