package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/ragcanary/ragcanary/api/v1alpha1"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ragcanary/ragcanary/internal/safetext"
)

// CheckError is a configuration the user must fix, or (Wait) a reader that
// will be right once it catches up. Message names the statement, schema or
// role; it never holds a DSN or a password.
type CheckError struct {
	Reason  string
	Message string
	// Wait: nothing to fix; check again shortly.
	Wait bool
	// Err is the server's error, for errors.As; its text is not shown.
	Err error
}

func (e *CheckError) Error() string { return e.Message }

// Unwrap exposes the cause.
func (e *CheckError) Unwrap() error { return e.Err }

// HealthCheck verifies what a Corpus check needs beyond reachability: the
// reference schema (created when ManageSchema), every statement prepared on
// the server it runs on, and that the reader does not bypass row-level
// security. A *CheckError is a configuration to fix; any other error is a
// classified *driver.Error (unreachable, credential refused).
func (d *Driver) HealthCheck(ctx context.Context) error {
	if err := d.check(ctx); err != nil {
		return err
	}
	return d.checkReader(ctx)
}

// check creates the schema if asked to, then prepares every statement in
// use on the server it runs on.
func (d *Driver) check(ctx context.Context) error {
	if _, err := d.prepareSide(ctx, false); err != nil {
		return err
	}
	_, err := d.prepareSide(ctx, true)
	return err
}

// prepareSide prepares the writer's statements (or the reader's) and keeps
// them with their parameter counts.
func (d *Driver) prepareSide(ctx context.Context, reads bool) (*prepared, error) {
	if err := d.ensureSchemaOnce(ctx); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	// The writer's catalog decides the reference statements: a standby
	// may not have replayed the embedding column yet.
	vector, err := hasEmbeddings(wctx, d.writer, d.schema)
	if err != nil {
		return nil, classify("Prepare", err)
	}
	p := &prepared{sql: map[string]string{}, params: map[string]int{}}
	for name, sql := range referenceStatements(d.schema, vector) {
		if o := d.overrides.byName(name); o != "" {
			sql = o
		}
		p.sql[name] = sql
	}
	pool, names := d.writer, writerStatements
	if reads {
		pool, names = d.reader, readerStatements
	}
	if err := d.prepareOn(wctx, pool, p, names); err != nil {
		if !reads {
			return nil, err
		}
		if err = d.readerBehind(wctx, p, err); !isWait(err) && d.prepareOn(wctx, pool, p, names) == nil {
			// A standby can replay the schema between the refused prepare
			// and the position readerBehind compares: it caught up, and
			// only a second refusal stands.
			err = nil
		}
		if err != nil {
			return nil, err
		}
	}
	d.mu.Lock()
	if reads {
		d.reads = p
	} else {
		d.writes = p
	}
	d.mu.Unlock()
	return p, nil
}

func (d *Driver) ensureSchemaOnce(ctx context.Context) error {
	d.mu.Lock()
	done := d.schemaOK || !d.manageSchema
	d.mu.Unlock()
	if done {
		return nil
	}
	sctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	if err := d.ensureSchema(sctx, d.readerRole); err != nil {
		return classify("CreateSchema", err)
	}
	d.mu.Lock()
	d.schemaOK = true
	d.mu.Unlock()
	return nil
}

// prepareOn prepares names on one connection of pool as unnamed statements
// (nothing stays on the server) and records their parameter counts.
func (d *Driver) prepareOn(ctx context.Context, pool *pgxpool.Pool, p *prepared, names []string) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return classify("Prepare", err)
	}
	defer conn.Release()
	for _, name := range names {
		desc, err := describe(ctx, conn.Conn().PgConn(), p.sql[name])
		if err != nil {
			return d.statementError(name, err)
		}
		if n := len(desc.ParamOIDs); n > maxParams[name] {
			return &CheckError{Reason: v1alpha1.ReasonStatementInvalid, Message: fmt.Sprintf(
				"%s uses %d parameters; this operation passes at most %d", d.describeStatement(name), n, maxParams[name])}
		}
		if name == stmtSearch && len(desc.Fields) != 3 {
			return &CheckError{Reason: v1alpha1.ReasonStatementInvalid, Message: fmt.Sprintf(
				"%s returns %d columns; it must return (chunk id, document id, score)", d.describeStatement(name), len(desc.Fields))}
		}
		p.params[name] = len(desc.ParamOIDs)
	}
	return nil
}

// describe prepares sql under a name of its own and deallocates it: the
// unnamed statement would do, but some servers speaking the protocol
// (PGlite) refuse to replace it.
func describe(ctx context.Context, conn *pgconn.PgConn, sql string) (*pgconn.StatementDescription, error) {
	const name = "ragcanary_check"
	desc, err := conn.Prepare(ctx, name, sql, nil)
	if err != nil {
		return nil, err
	}
	return desc, conn.Deallocate(ctx, name)
}

// describeStatement names a statement for a message: the spec field of an override,
// or the reference statement and its schema.
func (d *Driver) describeStatement(name string) string {
	if d.overrides.byName(name) != "" {
		return statementField(name)
	}
	hint := ""
	if !d.manageSchema {
		hint = " (set manageSchema: true to create the reference schema, or override the statement)"
	}
	return fmt.Sprintf("the reference %s statement in schema %q%s", name, d.schema, hint)
}

// statementError reports a statement the server refused. The server's
// message is about the statement's text and the schema (both from the
// Corpus spec), so it is shown, cleaned and shortened; a connection failure
// or a malformed code is not a statement problem and stays a classified
// driver error.
func (d *Driver) statementError(name string, err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return classify("Prepare", err)
	}
	code := safetext.SQLState(pgErr.Code)
	if !aboutTheStatement(code) {
		return classify("Prepare", err)
	}
	return &CheckError{Reason: v1alpha1.ReasonStatementInvalid, Err: err, Message: fmt.Sprintf(
		"%s does not prepare: %s (SQLSTATE %s)", d.describeStatement(name), safetext.Clean(pgErr.Message, maxServerText), code)}
}

// maxServerText bounds the server's text in a message; maxRoleName is
// PostgreSQL's own identifier limit (NAMEDATALEN - 1).
const (
	maxServerText = 200
	maxRoleName   = 63
)

// aboutTheStatement reports whether a validated SQLSTATE refuses the
// statement itself, rather than the credential (28, 42501) or the
// connection (08, 57).
func aboutTheStatement(code string) bool {
	if code == safetext.SQLState("") || code == "42501" {
		return false
	}
	switch code[:2] {
	case "28", "08", "57":
		return false
	}
	return true
}

// checkReader refuses a reader that row-level security does not filter: a
// superuser or BYPASSRLS role, or (for the reference search) the chunks
// table's owner when security is not forced, or a table without it.
func (d *Driver) checkReader(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	var role string
	var super, bypass bool
	err := d.reader.QueryRow(ctx, `select rolname, rolsuper, rolbypassrls from pg_roles where rolname = current_user`).Scan(&role, &super, &bypass)
	if err != nil {
		return classify("CheckReader", err)
	}
	// The name is the server's text: a hostile one may send any bytes.
	role = safetext.Clean(role, maxRoleName)
	switch {
	case super:
		return &CheckError{Reason: v1alpha1.ReasonReaderBypassesRLS, Message: fmt.Sprintf(
			"the reader role %q is a superuser, which bypasses row-level security: every persona would read every row; use a role without SUPERUSER", role)}
	case bypass:
		return &CheckError{Reason: v1alpha1.ReasonReaderBypassesRLS, Message: fmt.Sprintf(
			"the reader role %q has BYPASSRLS: every persona would read every row; use a role with NOBYPASSRLS", role)}
	}
	if !d.overrides.usesReferenceSearch() {
		return nil
	}
	var enabled, forced, owner bool
	err = d.reader.QueryRow(ctx, `select relrowsecurity, relforcerowsecurity, pg_has_role(current_user, relowner, 'USAGE')
		from pg_class where oid = to_regclass(quote_ident($1) || '.chunks')`, d.schema).Scan(&enabled, &forced, &owner)
	if err != nil {
		return classify("CheckReader", err)
	}
	switch {
	case !enabled:
		return &CheckError{Reason: v1alpha1.ReasonReaderBypassesRLS, Message: fmt.Sprintf(
			"row-level security is not enabled on %s.chunks: every persona would read every row", d.schema)}
	case owner && !forced:
		return &CheckError{Reason: v1alpha1.ReasonReaderBypassesRLS, Message: fmt.Sprintf(
			"the reader role %q owns %s.chunks, and row-level security is not forced: owners bypass it", role, d.schema)}
	}
	return nil
}

// isWait reports whether err is a check error that waits rather than refuses.
func isWait(err error) bool {
	var ce *CheckError
	return errors.As(err, &ce) && ce.Wait
}
