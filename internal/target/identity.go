package target

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver/postgres"
	"github.com/ragcanary/ragcanary/internal/safetext"
)

// TargetIdentity names the place a corpus's documents, grants and searches
// reach, credentials aside: two configurations with equal identities write
// and read the same target. A run compares the live Corpus's identity with
// that of the copy it kept before planting, so a Corpus pointed elsewhere
// mid-run is never probed or cleaned up in the planted target's stead.
// Postgres endpoints and databases live in the connection string, so an
// identity is read from the resolved configuration, never from the spec
// alone. It is comparable and holds no credential.
type TargetIdentity struct {
	// Source is where documents are written: an HTTP driver's normalised
	// base URL, or a Postgres writer's endpoints, database, schema and
	// statements.
	Source string
	// Reader is where a Postgres corpus's personas read: its reader's
	// endpoints and database, its writer's when it has no reader of its
	// own. Empty for HTTP, which reads where it writes.
	Reader string
	// Permissions is a separate permissions backend's type, endpoint and
	// mapping; empty when permission changes go to the driver.
	Permissions string
	// Directory is the group authority's URL, group and member templates
	// and member attribute; empty when memberships go to the target.
	Directory string
}

// maxIdentityShown bounds an identity in a message.
const maxIdentityShown = 512

// String is the identity for a message or an event: target text (a host
// from a tenant's connection string) is cleaned of control runes.
func (i TargetIdentity) String() string {
	parts := []string{i.Source}
	if i.Reader != "" && i.Reader != i.Source {
		parts = append(parts, "read at "+i.Reader)
	}
	if i.Permissions != "" {
		parts = append(parts, "permissions at "+i.Permissions)
	}
	if i.Directory != "" {
		parts = append(parts, "groups at "+i.Directory)
	}
	return safetext.Clean(strings.Join(parts, ", "), maxIdentityShown)
}

// Identity is where the resolved corpus reaches.
func (c *Corpus) Identity() (TargetIdentity, error) { return c.recipe.Identity() }

// Identity is where a corpus rebuilt from the recipe reaches. The
// connection strings go through the door's own checks before they are
// parsed (a kept string is a tenant's too); the allowlist is not asked:
// an identity names a target, it does not admit one.
func (r Recipe) Identity() (TargetIdentity, error) {
	var id TargetIdentity
	var err error
	switch {
	case r.Driver.Type == v1alpha1.DriverHTTP && r.Driver.HTTP != nil:
		id.Source, err = httpIdentity(r.Driver.HTTP.URL)
	case r.Driver.Type == v1alpha1.DriverPostgres && r.Driver.Postgres != nil:
		id.Source, id.Reader, err = postgresIdentity(r)
	case r.Driver.Type == v1alpha1.DriverREST && r.Driver.REST != nil:
		id.Source, err = restIdentity(r.Driver.REST)
	default:
		err = Stall(v1alpha1.ReasonDriverUnsupported, "the driver configuration is not an HTTP, Postgres or REST driver")
	}
	if err != nil {
		return TargetIdentity{}, err
	}
	if id.Permissions, err = permissionsIdentity(r.Permissions); err != nil {
		return TargetIdentity{}, err
	}
	if id.Directory, err = directoryIdentity(r.Directory); err != nil {
		return TargetIdentity{}, err
	}
	return id, nil
}

// directoryIdentity names where and how memberships are written: one
// server holds many trees, so the templates and attribute belong to it.
func directoryIdentity(dir *v1alpha1.Directory) (string, error) {
	if dir == nil {
		return "", nil
	}
	if dir.Type != v1alpha1.DirectoryLDAP || dir.LDAP == nil {
		return "", Stall(v1alpha1.ReasonDriverUnsupported, "directory %q is not available in this version of ragcanary", safetext.Clean(string(dir.Type), 32))
	}
	l := dir.LDAP
	u, err := normalize(l.URL)
	if err != nil {
		return "", Stall(v1alpha1.ReasonInvalidURL, "%s: %v", directoryURLField, err)
	}
	users := l.UserDN
	if s := l.UserSearch; s != nil {
		users = s.BaseDN + "?" + s.Attribute
	}
	return strings.Join([]string{string(dir.Type), u.String(), l.GroupDN, string(l.MemberAttribute), users}, " "), nil
}

// httpIdentity is the base URL as the allowlist normalises it, without a
// trailing slash: the contract client adds one to every base URL, so
// "…/tenant" and "…/tenant/" are one target.
func httpIdentity(raw string) (string, error) {
	u, err := normalize(raw)
	if err != nil {
		return "", Stall(v1alpha1.ReasonInvalidURL, "spec.driver.http.url: %v", err)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return u.String(), nil
}

// postgresIdentity names the writer's and the reader's servers and
// databases, and where in them the driver writes (schema, statements).
func postgresIdentity(r Recipe) (source, reader string, err error) {
	checker := &Door{Allow: AllowAny()}
	writer, readerCfg, err := checker.checkDSNs(r)
	if err != nil {
		return "", "", err
	}
	if readerCfg == nil {
		readerCfg = writer
	}
	p := r.Driver.Postgres
	source = postgresPlace(writer) + "?schema=" + url.QueryEscape(p.Schema)
	if p.Statements != nil {
		sum, err := statementsSum(p.Statements)
		if err != nil {
			return "", "", err
		}
		source += "&statements=" + sum
	}
	return source, postgresPlace(readerCfg), nil
}

// postgresPlace is postgres://host:port,…/database, every endpoint the
// client may connect to, in a fixed order: the same servers listed in
// another order are the same target.
func postgresPlace(cfg *pgxpool.Config) string {
	var hosts []string
	for _, e := range postgres.Endpoints(cfg) {
		hosts = append(hosts, net.JoinHostPort(strings.ToLower(e.Host), strconv.Itoa(int(e.Port))))
	}
	slices.Sort(hosts)
	hosts = slices.Compact(hosts)
	return "postgres://" + strings.Join(hosts, ",") + "/" + url.PathEscape(cfg.ConnConfig.Database)
}

// statementsSum stands for the user's statements, which name the tables
// the driver writes: a short hash keeps the identity printable.
func statementsSum(s *v1alpha1.PostgresStatements) (string, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:8]), nil
}

// permissionsIdentity is a backend's type and endpoint (lower-cased), the
// place within it (an OpenFGA store and model), and the types and
// relations grants are written as.
func permissionsIdentity(p *v1alpha1.Permissions) (string, error) {
	if p == nil {
		return "", nil
	}
	if _, known := backendOpeners[p.Type]; !known {
		return "", Stall(v1alpha1.ReasonDriverUnsupported, "permissions backend %q is not available in this version of ragcanary", safetext.Clean(string(p.Type), 32))
	}
	b, ok := p.Backend()
	if !ok {
		return "", Stall(v1alpha1.ReasonDriverUnsupported, "spec.permissions.%s is required for type %s", strings.ToLower(string(p.Type)), p.Type)
	}
	u, err := normalize(b.Endpoint)
	if err != nil {
		return "", Stall(v1alpha1.ReasonInvalidURL, "%s: %v", b.Field, err)
	}
	parts := []string{string(p.Type), u.String()}
	if b.Store != "" {
		// One server holds many stores; a store name and an ID name
		// different things until resolved, so both stay apart. What a
		// name resolved to is no part of the identity: a run pins it in
		// its kept recipe (OpenFGAStoreID) and sends the live Corpus
		// there while the two identities are equal (Corpus.PinTo).
		parts = append(parts, b.Store)
	}
	return strings.Join(append(parts, mappingIdentity(b.Mapping)), " "), nil
}

// mappingIdentity is the part of a backend's identity its mapping gives.
func mappingIdentity(m v1alpha1.PermissionsMapping) string {
	return strings.Join([]string{m.DocumentType + "#" + m.GrantRelation, m.GroupType + "#" + m.MemberRelation, m.SubjectType}, " ")
}
