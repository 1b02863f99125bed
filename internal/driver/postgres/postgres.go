// Package postgres is the driver for a PostgreSQL (optionally pgvector)
// store with row-level security. Documents, grants and memberships are
// written to the primary (the writer DSN); personas read where the user's
// application reads (the reader DSN, e.g. a hot standby), each read in its
// own transaction that first sets the persona's principal with
// set_config(..., true), so a pooled connection never carries one persona
// into another's query. Statements are the reference schema's or the
// user's own (Statements), prepared and validated by HealthCheck.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
)

// Pool bounds: probes of many runs share the reader pool; writes are few.
const (
	DefaultWriterMaxConns = 4
	DefaultReaderMaxConns = 8
)

// Config configures a driver. Writer and Reader come from ParseDSN, so the
// endpoints a caller checked are the ones connected to.
type Config struct {
	Writer *pgxpool.Config
	// Reader is where personas read; nil reads from Writer.
	Reader *pgxpool.Config
	// Schema of the reference tables; "" is public.
	Schema string
	// ManageSchema creates the reference schema when it is missing.
	ManageSchema bool
	Statements   Statements
	// Timeout bounds every call.
	Timeout time.Duration
	// WriterMaxConns and ReaderMaxConns bound the pools; 0 uses the
	// defaults. Without Reader there is one pool, of ReaderMaxConns (or
	// WriterMaxConns when only that is set).
	WriterMaxConns, ReaderMaxConns int32
}

// Endpoint is a host and port a DSN connects to.
type Endpoint struct {
	Host string
	Port uint16
}

// Socket reports whether the endpoint is a Unix socket directory.
func (e Endpoint) Socket() bool {
	return strings.HasPrefix(e.Host, "/") || strings.HasPrefix(e.Host, "@")
}

// URL is the endpoint as an allowlist entry compares it: postgres://host:port.
func (e Endpoint) URL() string {
	return "postgres://" + net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port)))
}

// ErrInvalidDSN is returned for a connection string that does not parse. The
// parser's own error is dropped: it quotes the connection string.
var ErrInvalidDSN = errors.New("not a valid PostgreSQL connection string (URL or key=value form)")

// ParseDSN parses a connection string without connecting. It splits the
// string itself first: pgx's parser panics on some malformed strings (an
// unterminated quoted value ending in a backslash), and the string is a
// tenant's.
func ParseDSN(dsn string) (cfg *pgxpool.Config, err error) {
	if _, err := DSNSettings(dsn); err != nil {
		return nil, ErrInvalidDSN
	}
	defer func() {
		if recover() != nil {
			cfg, err = nil, ErrInvalidDSN
		}
	}()
	if cfg, err = pgxpool.ParseConfig(dsn); err != nil {
		return nil, ErrInvalidDSN
	}
	return cfg, nil
}

// Endpoints lists every host the config may connect to, fallbacks included.
func Endpoints(cfg *pgxpool.Config) []Endpoint {
	out := []Endpoint{{Host: cfg.ConnConfig.Host, Port: cfg.ConnConfig.Port}}
	for _, f := range cfg.ConnConfig.Fallbacks {
		e := Endpoint{Host: f.Host, Port: f.Port}
		if !containsEndpoint(out, e) {
			out = append(out, e)
		}
	}
	return out
}

func containsEndpoint(list []Endpoint, e Endpoint) bool {
	for _, x := range list {
		if x == e {
			return true
		}
	}
	return false
}

// Driver implements driver.Driver over two pools.
type Driver struct {
	writer, reader *pgxpool.Pool
	readerRole     string
	schema         string
	manageSchema   bool
	overrides      Statements
	timeout        time.Duration

	mu       sync.Mutex
	schemaOK bool
	// writes and reads are prepared apart: a standby that has not yet
	// replayed the schema holds up searches, not the canary's writes.
	writes, reads *prepared
}

// prepared are the statements in use with the parameters each takes.
type prepared struct {
	sql    map[string]string
	params map[string]int
}

// New builds a driver. Pools connect lazily, on the first call.
func New(cfg Config) (*Driver, error) {
	if cfg.Writer == nil {
		return nil, errors.New("postgres driver: a writer connection config is required")
	}
	if cfg.Timeout <= 0 {
		return nil, errors.New("postgres driver: a positive timeout is required")
	}
	schema := cfg.Schema
	if schema == "" {
		schema = "public"
	}
	w := pool(cfg.Writer, orDefault(cfg.WriterMaxConns, DefaultWriterMaxConns), cfg.Timeout)
	if cfg.Reader == nil {
		// One server for both: one pool, sized for the probes.
		w.MaxConns = orDefault(cfg.ReaderMaxConns, DefaultReaderMaxConns)
		if cfg.ReaderMaxConns == 0 && cfg.WriterMaxConns > 0 {
			w.MaxConns = cfg.WriterMaxConns
		}
		shared, err := pgxpool.NewWithConfig(context.Background(), w)
		if err != nil {
			return nil, classify("New", err)
		}
		return &Driver{writer: shared, reader: shared, readerRole: w.ConnConfig.User, schema: schema,
			manageSchema: cfg.ManageSchema, overrides: cfg.Statements, timeout: cfg.Timeout}, nil
	}
	r := pool(cfg.Reader, orDefault(cfg.ReaderMaxConns, DefaultReaderMaxConns), cfg.Timeout)
	writer, err := pgxpool.NewWithConfig(context.Background(), w)
	if err != nil {
		return nil, classify("New", err)
	}
	reader, err := pgxpool.NewWithConfig(context.Background(), r)
	if err != nil {
		writer.Close()
		return nil, classify("New", err)
	}
	return &Driver{writer: writer, reader: reader, readerRole: r.ConnConfig.User, schema: schema,
		manageSchema: cfg.ManageSchema, overrides: cfg.Statements, timeout: cfg.Timeout}, nil
}

// Pool settings the driver owns. A connection string may carry pool_*
// options (the door refuses them); whatever it held, none survives here,
// since a tenant's value could stop the health check ticker from being
// made (a panic), spin it, or hold thousands of idle connections open.
const (
	maxConnLifetime       = time.Hour
	maxConnLifetimeJitter = time.Minute
	maxConnIdleTime       = 30 * time.Minute
	healthCheckPeriod     = time.Minute
	// maxCachedStatements bounds pgx's per-connection caches, which are
	// preallocated at their capacity: the driver runs a handful of statements.
	maxCachedStatements = 64
)

func pool(c *pgxpool.Config, maxConns int32, timeout time.Duration) *pgxpool.Config {
	out := c.Copy()
	out.MaxConns = maxConns
	out.MinConns = 0
	out.MinIdleConns = 0
	out.MaxConnLifetime = maxConnLifetime
	out.MaxConnLifetimeJitter = maxConnLifetimeJitter
	out.MaxConnIdleTime = maxConnIdleTime
	out.HealthCheckPeriod = healthCheckPeriod
	out.PingTimeout = timeout
	out.BeforeConnect, out.AfterConnect, out.PrepareConn, out.BeforeAcquire = nil, nil, nil, nil
	out.AfterRelease, out.BeforeClose, out.ShouldPing = nil, nil, nil
	cc := out.ConnConfig
	cc.StatementCacheCapacity = min(max(cc.StatementCacheCapacity, 0), maxCachedStatements)
	cc.DescriptionCacheCapacity = min(max(cc.DescriptionCacheCapacity, 0), maxCachedStatements)
	cc.ConnectTimeout = timeout
	cc.BuildFrontend = boundedFrontend
	cc.RuntimeParams["application_name"] = "ragcanary"
	// The server stops what no call waits for any more; Search sets a
	// tighter bound per transaction.
	cc.RuntimeParams["statement_timeout"] = strconv.FormatInt(timeout.Milliseconds(), 10)
	return out
}

// maxServerMessage bounds one message from the server: a row, an error, a
// notice. The driver's rows are a few IDs and a score; a hostile server's
// gigabyte row fails the call instead of filling the operator's memory.
const maxServerMessage = 1 << 20

func boundedFrontend(r io.Reader, w io.Writer) *pgproto3.Frontend {
	f := pgproto3.NewFrontend(r, w)
	f.SetMaxBodyLen(maxServerMessage)
	return f
}

func orDefault(v, def int32) int32 {
	if v > 0 {
		return v
	}
	return def
}

// Close closes the pools.
func (d *Driver) Close() {
	if d.writer != nil {
		d.writer.Close()
	}
	if d.reader != nil && d.reader != d.writer {
		d.reader.Close()
	}
}

// Capabilities: every revocation method, no answer surface (a database
// stores and retrieves; answering is the application's).
func (d *Driver) Capabilities(context.Context) (driver.Capabilities, error) {
	return driver.Capabilities{ContractVersion: driver.ContractVersion,
		RevocationMethods: []driver.RevocationMethod{v1alpha1.RevokeRemoveGrant, v1alpha1.RevokeRemoveFromGroup, v1alpha1.RevokeDeleteDocument}}, nil
}

// CreateDocument replaces the document in one transaction: delete, insert.
func (d *Driver) CreateDocument(ctx context.Context, doc driver.Document) error {
	const op = "CreateDocument"
	if doc.ID == "" || strings.Contains(doc.ID, "#") {
		return driver.NewError(driver.Permanent, op, 0, "document ID must be non-empty and must not contain '#'", nil)
	}
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	p, err := d.ready(ctx, op, false)
	if err != nil {
		return err
	}
	chunks := Chunks(doc.Title, doc.Body)
	embeddings := make([]string, len(chunks))
	for i, c := range chunks {
		embeddings[i] = VectorLiteral(Embed(c))
	}
	principals := doc.Principals
	if principals == nil {
		principals = []string{}
	}
	err = pgx.BeginFunc(ctx, d.writer, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, p.sql[stmtDeleteDocument], p.args(stmtDeleteDocument, doc.ID)...); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, p.sql[stmtCreateDocument],
			p.args(stmtCreateDocument, doc.ID, doc.Title, doc.Body, principals, chunks, embeddings)...)
		return err
	})
	return classify(op, err)
}

// DeleteDocument deletes the document; a missing one deletes nothing.
func (d *Driver) DeleteDocument(ctx context.Context, id string) error {
	return d.write(ctx, "DeleteDocument", stmtDeleteDocument, id)
}

// Grant allows principal (a user or a group) to read the document.
func (d *Driver) Grant(ctx context.Context, documentID, principal string) error {
	return d.write(ctx, "Grant", stmtGrant, documentID, principal)
}

// Revoke removes the grant.
func (d *Driver) Revoke(ctx context.Context, documentID, principal string) error {
	return d.write(ctx, "Revoke", stmtRevoke, documentID, principal)
}

// AddMember adds principal to group.
func (d *Driver) AddMember(ctx context.Context, group, principal string) error {
	return d.write(ctx, "AddMember", stmtAddMember, group, principal)
}

// RemoveMember removes principal from group.
func (d *Driver) RemoveMember(ctx context.Context, group, principal string) error {
	return d.write(ctx, "RemoveMember", stmtRemoveMember, group, principal)
}

func (d *Driver) write(ctx context.Context, op, name string, args ...any) error {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	p, err := d.ready(ctx, op, false)
	if err != nil {
		return err
	}
	_, err = d.writer.Exec(ctx, p.sql[name], p.args(name, args...)...)
	return classify(op, err)
}

// Search reads as the persona: persona carries the persona's subject (the
// door hands it), set by the session statement inside a read-only
// transaction, so row-level security filters every retriever of search.
// However many rows the statement yields, k are read, and a statement
// running past the call is cancelled by the server.
func (d *Driver) Search(ctx context.Context, persona driver.Token, query string, k int) ([]driver.Hit, error) {
	const op = "Search"
	principal := persona.Reveal()
	if principal == "" {
		return nil, driver.NewError(driver.Unauthorized, op, 0, "no persona subject", nil)
	}
	if k <= 0 {
		return []driver.Hit{}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	p, err := d.ready(ctx, op, true)
	if err != nil {
		return nil, err
	}
	var hits []driver.Hit
	err = pgx.BeginTxFunc(ctx, d.reader, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := session(ctx, tx, p, principal); err != nil {
			return err
		}
		if err := boundStatements(ctx, tx); err != nil {
			return err
		}
		hits, err = search(ctx, tx, p, query, k)
		return err
	})
	if err != nil {
		return nil, classify(op, err)
	}
	return hits, nil
}

// searchCursor holds the search's rows on the server: the driver fetches
// k of them, however many the statement would return. Closing a result
// early would not do: pgx reads the rest of it off the connection.
const searchCursor = "ragcanary_search"

// maxIDBytes bounds a chunk or document ID in a search row.
const maxIDBytes = 512

// errMalformedRow: a search row that is not (chunk id, document id,
// score) with IDs of at most maxIDBytes.
var errMalformedRow = driver.NewError(driver.Transient, "Search", 0, "malformed row", nil)

func search(ctx context.Context, tx pgx.Tx, p *prepared, query string, k int) ([]driver.Hit, error) {
	args := p.args(stmtSearch, query, int64(k), VectorLiteral(Embed(query)))
	if _, err := tx.Exec(ctx, "declare "+searchCursor+" no scroll cursor for "+p.sql[stmtSearch], args...); err != nil {
		return nil, err
	}
	// The simple protocol: FETCH's columns are the cursor's, known only
	// once it is declared, so there is nothing to prepare.
	rows, err := tx.Query(ctx, fmt.Sprintf("fetch forward %d from %s", k, searchCursor), pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	hits := make([]driver.Hit, 0, min(k, 100))
	for rows.Next() {
		h, err := scanHit(rows)
		if err != nil {
			return nil, err
		}
		hits = append(hits, h)
	}
	return hits, rows.Err()
}

// scanHit checks the row's raw IDs before copying them out.
func scanHit(rows pgx.Rows) (driver.Hit, error) {
	raw := rows.RawValues()
	if len(raw) != 3 || !boundedID(raw[0]) || !boundedID(raw[1]) {
		return driver.Hit{}, errMalformedRow
	}
	var h driver.Hit
	err := rows.Scan(&h.ChunkID, &h.DocumentID, &h.Score)
	return h, err
}

func boundedID(b []byte) bool { return b != nil && len(b) <= maxIDBytes }

// boundStatements has the server cancel a statement running past most of
// what is left of the call (SQLSTATE 57014, on a connection that stays
// usable) before the client's deadline drops the connection. It runs after
// the session statement, which is the user's and could set its own.
func boundStatements(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, "select set_config('statement_timeout', $1, true)", strconv.FormatInt(serverTimeout(ctx).Milliseconds(), 10))
	return err
}

// serverTimeout is four fifths of the time left before ctx's deadline, at
// least a millisecond (0 would mean no timeout).
func serverTimeout(ctx context.Context) time.Duration {
	deadline, ok := ctx.Deadline()
	if !ok {
		return time.Hour
	}
	return max(time.Until(deadline)*4/5, time.Millisecond)
}

// errUnknownPersona: the session statement returned no row.
var errUnknownPersona = driver.NewError(driver.Unauthorized, "Search", 0, "the session statement does not know the persona's subject", nil)

func session(ctx context.Context, tx pgx.Tx, p *prepared, principal string) error {
	rows, err := tx.Query(ctx, p.sql[stmtSession], p.args(stmtSession, principal)...)
	if err != nil {
		return err
	}
	returnsColumns := len(rows.FieldDescriptions()) > 0
	n := 0
	for rows.Next() {
		n++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if returnsColumns && n == 0 {
		return errUnknownPersona
	}
	return nil
}

// Answer: a database has no answer surface.
func (d *Driver) Answer(context.Context, driver.Token, string) (driver.Answer, error) {
	return driver.Answer{}, driver.NewError(driver.Permanent, "Answer", 0, "the Postgres driver has no answer surface", nil)
}

// args passes the first n of args, n being how many parameters the
// statement in use takes (a user's statement may use a prefix).
func (p *prepared) args(name string, args ...any) []any {
	n := p.params[name]
	if n > len(args) {
		n = len(args)
	}
	return args[:n]
}

// ready returns the statements in use on one side (reads: the reader's),
// creating the schema and preparing them on first use; a failure is
// retried on the next call.
func (d *Driver) ready(ctx context.Context, op string, reads bool) (*prepared, error) {
	d.mu.Lock()
	p := d.writes
	if reads {
		p = d.reads
	}
	d.mu.Unlock()
	if p != nil {
		return p, nil
	}
	p, err := d.prepareSide(ctx, reads)
	if err != nil {
		var ce *CheckError
		if errors.As(err, &ce) {
			kind := driver.Permanent
			if ce.Wait {
				kind = driver.Transient
			}
			return nil, driver.NewError(kind, op, 0, ce.Reason, err)
		}
		return nil, classify(op, err)
	}
	return p, nil
}

// statementField names a statement as the Corpus spec does.
func statementField(name string) string {
	return fmt.Sprintf("spec.driver.postgres.statements.%s", name)
}
