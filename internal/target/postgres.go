package target

import (
	"context"
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/driver/postgres"
	"github.com/ragcanary/ragcanary/internal/safetext"
)

// Reasons a Postgres corpus is refused by its health check.
const (
	ReasonStatementInvalid  = v1alpha1.ReasonStatementInvalid
	ReasonReaderBypassesRLS = v1alpha1.ReasonReaderBypassesRLS
)

// Spec fields named in messages about the two connection strings.
const (
	fieldDSN     = "spec.driver.postgres.dsnSecretRef"
	fieldReadDSN = "spec.driver.postgres.readDSNSecretRef"
)

// postgresRecipe reads a Postgres corpus's connection strings. Both are
// parsed and checked against the allowlist before anything connects.
func (d *Door) postgresRecipe(ctx context.Context, obj *v1alpha1.Corpus) (Recipe, error) {
	spec := obj.Spec.Driver
	if spec.Postgres == nil {
		return Recipe{}, Stall(ReasonDriverUnsupported, "spec.driver.postgres is required for type Postgres")
	}
	writer, err := Credential(ctx, d.Reader, obj.Namespace, spec.Postgres.DSNSecretRef)
	if err != nil {
		return Recipe{}, err
	}
	r := Recipe{Driver: *spec.DeepCopy(), Credential: writer, RateLimit: obj.Spec.RateLimit}
	if ref := spec.Postgres.ReadDSNSecretRef; ref != nil {
		if r.ReadCredential, err = Credential(ctx, d.Reader, obj.Namespace, *ref); err != nil {
			return Recipe{}, err
		}
	}
	if _, _, err := d.checkDSNs(r); err != nil {
		return Recipe{}, err
	}
	return r, nil
}

// checkDSNs parses the recipe's connection strings and checks every host
// they may connect to (fallbacks included) against the allowlist as
// postgres://host:port. Messages name the field and host, never the DSN.
func (d *Door) checkDSNs(r Recipe) (writer, reader *pgxpool.Config, err error) {
	if writer, err = d.checkDSN(fieldDSN, r.Credential); err != nil {
		return nil, nil, err
	}
	if len(r.ReadCredential) > 0 {
		if reader, err = d.checkDSN(fieldReadDSN, r.ReadCredential); err != nil {
			return nil, nil, err
		}
	}
	return writer, reader, nil
}

func (d *Door) checkDSN(field string, dsn []byte) (*pgxpool.Config, error) {
	if err := refuseOptions(field, string(dsn)); err != nil {
		return nil, err
	}
	cfg, err := postgres.ParseDSN(string(dsn))
	if err != nil {
		return nil, &Problem{Intent: Stalled, Reason: ReasonInvalidURL, Message: field + ": the Secret's value is " + err.Error(), Err: err}
	}
	for _, e := range postgres.Endpoints(cfg) {
		if e.Socket() {
			return nil, Stall(ReasonURLNotAllowed, "%s: the connection string names a Unix socket; name a host and port the operator allows (postgres://host:port)", field)
		}
		if _, err := d.Allow.Check(field, e.URL()); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// fileOptions are connection options whose value is a path the client
// reads: a Corpus author could make the operator present a certificate or
// key mounted in its pod to a host of their choosing, or read its files.
var fileOptions = []string{"sslcert", "sslkey", "sslrootcert", "sslcrl", "sslcrldir", "passfile", "service", "servicefile"}

// poolOptionPrefix starts pgxpool's options: the operator sizes and checks
// its own pools, and a tenant's value could panic its health check, spin
// it, or hold thousands of connections open.
const poolOptionPrefix = "pool_"

// maxKeyShown bounds an option's key in a message.
const maxKeyShown = 64

// refuseOptions refuses a connection string setting a file or pool option.
// The message names the option, never the connection string.
func refuseOptions(field, dsn string) error {
	for _, k := range dsnKeys(dsn) {
		key, shown := strings.ToLower(k), safetext.Clean(k, maxKeyShown)
		switch {
		case slices.Contains(fileOptions, key):
			return Stall(ReasonInvalidURL, "%s: the connection string sets %s, which makes the operator read a file of its own; "+
				"put certificates and passwords in the Secret's connection string itself", field, shown)
		case strings.HasPrefix(key, poolOptionPrefix):
			return Stall(ReasonInvalidURL, "%s: the connection string sets %s; the operator sizes and checks its own connection pools, "+
				"so pool options are refused: remove it", field, shown)
		}
	}
	return nil
}

// fileOption reports the first file option a connection string sets.
func fileOption(dsn string) (string, bool) {
	for _, k := range dsnKeys(dsn) {
		if slices.Contains(fileOptions, strings.ToLower(k)) {
			return k, true
		}
	}
	return "", false
}

// dsnKeys lists the option keys of a connection string, in URL (query)
// or keyword=value form.
func dsnKeys(dsn string) []string {
	var keys []string
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		for k := range u.Query() {
			keys = append(keys, k)
		}
	} else {
		for _, m := range keywordPattern.FindAllStringSubmatch(dsn, -1) {
			keys = append(keys, m[1])
		}
	}
	return keys
}

// keywordPattern finds the keywords of a keyword=value connection string.
var keywordPattern = regexp.MustCompile(`(?:^|\s)([A-Za-z_]+)\s*=`)

// postgresDriver returns the driver for a recipe, held by h: one per
// configuration, owned by the door, so resolving a corpus on every check
// and run stage reuses its pools instead of opening new ones.
func (d *Door) postgresDriver(corpus string, r Recipe, timeout time.Duration, h *holds) (*postgres.Driver, error) {
	writer, reader, err := d.checkDSNs(r)
	if err != nil {
		return nil, err
	}
	p := r.Driver.Postgres
	cfg := postgres.Config{Writer: writer, Reader: reader, Schema: p.Schema, ManageSchema: p.ManageSchema, Timeout: timeout}
	if s := p.Statements; s != nil {
		cfg.Statements = postgres.Statements{CreateDocument: s.CreateDocument, DeleteDocument: s.DeleteDocument,
			Grant: s.Grant, Revoke: s.Revoke, AddMember: s.AddMember, RemoveMember: s.RemoveMember,
			Session: s.Session, Search: s.Search}
	}
	return d.openPostgres(corpus, r, timeout, cfg, h)
}

// postgresCheck is the Corpus controller's check of a Postgres driver:
// schema, statements, and a reader that row-level security filters.
func postgresCheck(drv *postgres.Driver) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		err := drv.HealthCheck(ctx)
		var ce *postgres.CheckError
		if errors.As(err, &ce) {
			return &Problem{Intent: Stalled, Reason: ce.Reason, Message: ce.Message, Err: err}
		}
		return err
	}
}

// PersonaFor resolves a persona for a corpus. A Postgres corpus identifies
// personas by subject: the subject is what the driver sets as the
// transaction's principal, and the Persona Secret is not read (the database
// trusts the application, which ragcanary stands in for, to name the user).
// Other corpora send the Persona Secret's credential.
func (d *Door) PersonaFor(ctx context.Context, corpus *Corpus, obj *v1alpha1.Persona) (Persona, error) {
	if corpus != nil && corpus.Object != nil && corpus.Object.Spec.Driver.Type == v1alpha1.DriverPostgres {
		return Persona{Object: obj, Token: driver.Token(obj.Spec.Subject)}, nil
	}
	return d.Persona(ctx, obj)
}
