package target

import (
	"context"
	"crypto/tls"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/driver/postgres"
	"github.com/ragcanary/ragcanary/internal/safetext"
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
		return Recipe{}, Stall(v1alpha1.ReasonDriverUnsupported, "spec.driver.postgres is required for type Postgres")
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

// checkDSN refuses the options that reach files or pools before pgx
// parses the string (pgx reads the files while parsing), then compares what
// pgx parsed with what the string says, so nothing the operator holds (a
// password file, a certificate, its environment) goes to a tenant's host.
func (d *Door) checkDSN(field string, dsn []byte) (*pgxpool.Config, error) {
	settings, err := postgres.DSNSettings(string(dsn))
	if err != nil {
		return nil, invalidDSN(field, err)
	}
	if err := refuseOptions(field, settings); err != nil {
		return nil, err
	}
	cfg, err := postgres.ParseDSN(string(dsn))
	if err != nil {
		return nil, invalidDSN(field, err)
	}
	if err := checkParsed(field, settings, cfg); err != nil {
		return nil, err
	}
	for _, e := range postgres.Endpoints(cfg) {
		if e.Socket() {
			return nil, Stall(v1alpha1.ReasonURLNotAllowed, "%s: the connection string names a Unix socket; name a host and port the operator allows (postgres://host:port)", field)
		}
		if _, err := d.Allow.Check(field, e.URL()); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// invalidDSN reports a string that does not parse. Both parsers' errors
// are postgres.ErrInvalidDSN, whose text never quotes the string.
func invalidDSN(field string, err error) *Problem {
	return &Problem{Intent: Stalled, Reason: v1alpha1.ReasonInvalidURL, Message: field + ": the Secret's value is " + postgres.ErrInvalidDSN.Error(), Err: err}
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

// refuseOptions refuses a connection string setting a file or pool option,
// in any letter case. The message names the option, never the string.
func refuseOptions(field string, settings map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		key, shown := strings.ToLower(k), safetext.Clean(k, maxKeyShown)
		switch {
		case slices.Contains(fileOptions, key):
			return Stall(v1alpha1.ReasonInvalidURL, "%s: the connection string sets %s, which makes the operator read a file of its own; "+
				"put the password in the Secret's connection string itself (certificates and keys from files are not supported)", field, shown)
		case strings.HasPrefix(key, poolOptionPrefix):
			return Stall(v1alpha1.ReasonInvalidURL, "%s: the connection string sets %s; the operator sizes and checks its own connection pools, "+
				"so pool options are refused: remove it", field, shown)
		}
	}
	return nil
}

// checkParsed refuses a parsed config holding what the connection string
// did not give it: a password from a password file, a service file or the
// operator's environment; a client certificate or root CAs read from files
// (the operator's home or environment names them); or options the two
// parsers read differently.
func checkParsed(field string, settings map[string]string, cfg *pgxpool.Config) error {
	cc := cfg.ConnConfig
	if cc.Password != settings["password"] {
		return Stall(v1alpha1.ReasonInvalidURL, "%s: the connection would send a password the connection string does not hold "+
			"(from a password file, a service file or the operator's environment); put the password in the connection string", field)
	}
	for _, tc := range tlsConfigs(&cc.Config) {
		if len(tc.Certificates) > 0 || tc.GetClientCertificate != nil {
			return Stall(v1alpha1.ReasonInvalidURL, "%s: the connection would present a client certificate read from a file the operator holds; "+
				"client certificates are not supported", field)
		}
		if tc.RootCAs != nil {
			return Stall(v1alpha1.ReasonInvalidURL, "%s: the connection would trust root certificates read from a file the operator holds; "+
				"use sslmode=verify-full with a server certificate from a public CA, or sslmode=require", field)
		}
	}
	if key, ok := runtimeParamMismatch(settings, cc.RuntimeParams); ok {
		return Stall(v1alpha1.ReasonInvalidURL, "%s: the connection would not send option %s as the connection string sets it "+
			"(a service file or the operator's environment changed it, or the string is ambiguous); write it as key=value between spaces",
			field, safetext.Clean(key, maxKeyShown))
	}
	return nil
}

// tlsConfigs are the TLS settings of every connection attempt (sslmode
// prefer and allow, and fallback hosts, add attempts).
func tlsConfigs(c *pgconn.Config) []*tls.Config {
	var out []*tls.Config
	if c.TLSConfig != nil {
		out = append(out, c.TLSConfig)
	}
	for _, f := range c.Fallbacks {
		if f.TLSConfig != nil {
			out = append(out, f.TLSConfig)
		}
	}
	return out
}

// notRuntimeParams are the connection string keys pgx (pgconn, pgx and
// pgxpool) consumes itself; every other key is sent to the server as a
// run-time parameter. A key pgx consumes that is missing here only makes
// runtimeParamMismatch refuse, never admit.
var notRuntimeParams = []string{"host", "port", "database", "user", "password", "passfile", "connect_timeout",
	"sslmode", "sslkey", "sslcert", "sslrootcert", "sslnegotiation", "sslpassword", "sslsni", "krbspn", "krbsrvname",
	"target_session_attrs", "service", "servicefile", "min_protocol_version", "max_protocol_version", "channel_binding",
	"statement_cache_capacity", "description_cache_capacity", "default_query_exec_mode"}

// environmentParams are the run-time parameters pgx takes from the
// operator's environment (PGAPPNAME, PGTZ, PGOPTIONS) when the string
// does not set them.
var environmentParams = []string{"application_name", "timezone", "options"}

// runtimeParamMismatch reports a run-time parameter pgx parsed otherwise
// than DSNSettings read it: the check and the connection must agree on
// where every key starts and ends.
func runtimeParamMismatch(settings, params map[string]string) (string, bool) {
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		if slices.Contains(notRuntimeParams, k) {
			continue
		}
		if v, ok := params[k]; !ok || v != settings[k] {
			return k, true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if _, ok := settings[k]; !ok && !slices.Contains(environmentParams, k) {
			return k, true
		}
	}
	return "", false
}

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

// readerRecheck is how soon a reader still replaying the schema is checked
// again: replay takes seconds, the health-check interval minutes.
const readerRecheck = 5 * time.Second

// postgresCheck is the Corpus controller's check of a Postgres driver:
// schema, statements, and a reader that row-level security filters. A
// standby reader still replaying the schema is Waiting, not the user's to fix.
func postgresCheck(drv *postgres.Driver) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		err := drv.HealthCheck(ctx)
		var ce *postgres.CheckError
		if errors.As(err, &ce) {
			if ce.Wait {
				return &Problem{Intent: Waiting, Reason: ce.Reason, Message: cleanMessage(ce.Message), Err: err, RequeueAfter: readerRecheck}
			}
			return &Problem{Intent: Stalled, Reason: ce.Reason, Message: ce.Message, Err: err}
		}
		return err
	}
}

// PersonaFor resolves a persona for a corpus. A Postgres corpus identifies
// personas by subject: the subject is what the driver sets as the
// transaction's principal, and the Persona Secret is not read (the database
// trusts the application, which ragcanary stands in for, to name the user).
// Other corpora send the Persona Secret's credential, which no surface of
// the corpus may carry outside its header (GuardCredential).
func (d *Door) PersonaFor(ctx context.Context, corpus *Corpus, obj *v1alpha1.Persona) (Persona, error) {
	if corpus != nil && corpus.Object != nil && corpus.Object.Spec.Driver.Type == v1alpha1.DriverPostgres {
		return Persona{Object: obj, Token: driver.Token(obj.Spec.Subject)}, nil
	}
	p, err := d.Persona(ctx, obj)
	if err != nil {
		return p, err
	}
	if err := corpus.GuardCredential(obj.Name, p.Token); err != nil {
		return Persona{}, err
	}
	return p, nil
}
