package postgres_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"

	"github.com/jackc/pgx/v5"

	"github.com/ragcanary/ragcanary/internal/conformance"
	"github.com/ragcanary/ragcanary/internal/dev/pgtest"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/driver/postgres"
)

// Passwords of the roles the tests create. They must never appear in an error.
const (
	writerPassword = "writer-secret-pw"
	readerPassword = "reader-secret-pw"
)

// startPrimary runs a primary with a writer role (may create schemas) and a
// reader role (nothing but LOGIN: the driver's schema set-up grants it
// what search needs).
func startPrimary(t *testing.T) *pgtest.Server {
	t.Helper()
	s := pgtest.Start(t)
	s.Exec(t,
		"create role writer login password '"+writerPassword+"'",
		"grant create on database postgres to writer",
		"create role reader login password '"+readerPassword+"'",
	)
	return s
}

func newDriver(t *testing.T, writerDSN, readerDSN string, st postgres.Statements) *postgres.Driver {
	t.Helper()
	w, err := postgres.ParseDSN(writerDSN)
	if err != nil {
		t.Fatal(err)
	}
	cfg := postgres.Config{Writer: w, Schema: "rag", ManageSchema: true, Statements: st, Timeout: 5 * time.Second}
	if readerDSN != "" {
		if cfg.Reader, err = postgres.ParseDSN(readerDSN); err != nil {
			t.Fatal(err)
		}
	}
	d, err := postgres.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

func healthy(t *testing.T, d *postgres.Driver) {
	t.Helper()
	if err := d.HealthCheck(context.Background()); err != nil {
		t.Fatalf("health check: %v", err)
	}
}

func conformanceRun(d driver.Driver, principal string) conformance.Report {
	return conformance.Run(context.Background(), conformance.Config{
		Driver: d, PersonaToken: driver.Token(principal), PersonaPrincipal: principal,
		Timeout: 5 * time.Second, PollInterval: 20 * time.Millisecond,
	})
}

// TestConformanceWithUsersTable: with a session statement that looks the
// persona up in the store's users, every contract check passes, including
// that an unknown persona is refused.
func TestConformanceWithUsersTable(t *testing.T) {
	s := startPrimary(t)
	d := newDriver(t, s.DSN("writer", writerPassword), s.DSN("reader", readerPassword), postgres.Statements{
		Session: `select set_config('ragcanary.principal', u.name, true) from rag.users u where u.name = $1`,
	})
	// The reference schema exists after the first check; the users table
	// is the application's.
	if err := d.HealthCheck(context.Background()); err == nil || !strings.Contains(err.Error(), "statements.session") {
		t.Fatalf("health check before rag.users exists: %v, want the session statement named", err)
	}
	s.Exec(t, "create table rag.users (name text primary key)", "insert into rag.users values ('alice')",
		"grant select on rag.users to reader")
	healthy(t, d)
	report := conformanceRun(d, "alice")
	for _, r := range report.Results {
		t.Logf("%s %s %s", r.Status, r.Name, r.Detail)
	}
	if !report.Passed() {
		t.Fatalf("conformance failed: %v", report.Failed())
	}
	skipped := 0
	for _, r := range report.Results {
		if r.Status == conformance.Skip {
			skipped++
			if !strings.HasPrefix(r.Name, "answer-") && !strings.HasPrefix(r.Name, "conversation-") && !strings.HasPrefix(r.Name, "stream-") {
				t.Errorf("%s skipped: only the answer, stream and conversation checks may be (no such surface exists)", r.Name)
			}
		}
	}
	if skipped != 7 {
		t.Errorf("%d checks skipped, want the 2 answer, 2 stream and 3 conversation checks", skipped)
	}
}

// TestConformanceReferenceSchema: on the reference schema every check
// passes except unauthorized-persona: its session statement accepts any
// subject (a persona nobody granted anything sees nothing, but is not
// refused), as docs/postgres.md says.
func TestConformanceReferenceSchema(t *testing.T) {
	s := startPrimary(t)
	d := newDriver(t, s.DSN("writer", writerPassword), s.DSN("reader", readerPassword), postgres.Statements{})
	healthy(t, d)
	report := conformanceRun(d, "alice")
	failed := report.Failed()
	if !slices.Equal(failed, []string{conformance.CheckUnauthorized}) {
		t.Fatalf("failed checks %v, want only %s", failed, conformance.CheckUnauthorized)
	}
}

// TestSearchIsFilteredPerTransaction: grants to users and to groups, group
// removal and revocation take effect on the next search, and a pooled
// reader connection keeps no persona after its transaction.
func TestSearchIsFilteredPerTransaction(t *testing.T) {
	s := startPrimary(t)
	d := newDriver(t, s.DSN("writer", writerPassword), s.DSN("reader", readerPassword), postgres.Statements{})
	ctx := context.Background()
	healthy(t, d)
	must(t, d.CreateDocument(ctx, driver.Document{ID: "doc1", Title: "Quarterly plan", Body: "zebra budget\n\nsecond paragraph zebra", Principals: []string{"alice"}}))
	must(t, d.CreateDocument(ctx, driver.Document{ID: "doc2", Title: "Team notes", Body: "zebra offsite", Principals: []string{"eng"}}))
	must(t, d.AddMember(ctx, "eng", "bob"))
	sees(t, d, "alice", "zebra", "doc1")
	sees(t, d, "bob", "zebra", "doc2")
	sees(t, d, "mallory", "zebra")
	hits, err := d.Search(ctx, "alice", "zebra", 10)
	must(t, err)
	if len(hits) != 2 || hits[0].ChunkID[:5] != "doc1#" {
		t.Fatalf("alice's hits %+v, want the two chunks of doc1", hits)
	}
	must(t, d.Grant(ctx, "doc2", "alice"))
	must(t, d.Grant(ctx, "doc2", "alice"))
	sees(t, d, "alice", "zebra", "doc1", "doc2")
	must(t, d.Revoke(ctx, "doc1", "alice"))
	must(t, d.Revoke(ctx, "doc1", "alice"))
	sees(t, d, "alice", "zebra", "doc2")
	must(t, d.RemoveMember(ctx, "eng", "bob"))
	must(t, d.RemoveMember(ctx, "eng", "bob"))
	sees(t, d, "bob", "zebra")
	// Replacing a document replaces its access list.
	must(t, d.CreateDocument(ctx, driver.Document{ID: "doc2", Title: "Team notes", Body: "zebra offsite v2", Principals: []string{"bob"}}))
	sees(t, d, "bob", "zebra", "doc2")
	sees(t, d, "alice", "zebra")
	must(t, d.DeleteDocument(ctx, "doc2"))
	must(t, d.DeleteDocument(ctx, "doc2"))
	sees(t, d, "bob", "zebra")

	// The reader without a session set in its transaction sees nothing.
	conn, err := pgx.Connect(ctx, s.DSN("reader", readerPassword))
	must(t, err)
	defer conn.Close(ctx)
	must(t, d.CreateDocument(ctx, driver.Document{ID: "doc3", Body: "zebra", Principals: []string{"alice"}}))
	var n int
	must(t, conn.QueryRow(ctx, "select count(*) from rag.chunks").Scan(&n))
	if n != 0 {
		t.Fatalf("the reader sees %d chunks with no principal set, want 0", n)
	}
	// Nor can it read the access list.
	if err := conn.QueryRow(ctx, "select count(*) from rag.document_acl").Scan(&n); err == nil {
		t.Fatal("the reader may read the ACL table; it should need SELECT on chunks only")
	}
}

func sees(t *testing.T, d *postgres.Driver, principal, query string, want ...string) {
	t.Helper()
	hits, err := d.Search(context.Background(), driver.Token(principal), query, 10)
	if err != nil {
		t.Fatalf("search as %s: %v", principal, err)
	}
	var got []string
	for _, h := range hits {
		if !slices.Contains(got, h.DocumentID) {
			got = append(got, h.DocumentID)
		}
	}
	slices.Sort(got)
	if want == nil {
		want = []string{}
	}
	if got == nil {
		got = []string{}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s sees %v, want %v", principal, got, want)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func checkReason(t *testing.T, err error, reason, mention string) {
	t.Helper()
	var ce *postgres.CheckError
	if !errors.As(err, &ce) || ce.Reason != reason {
		t.Fatalf("health check: %v, want %s", err, reason)
	}
	if !strings.Contains(ce.Message, mention) {
		t.Fatalf("message %q does not mention %q", ce.Message, mention)
	}
}

// TestReaderThatBypassesRLSIsRefused: a BYPASSRLS reader, a superuser
// reader, and the tables' owner where security is not forced are refused;
// the owner with forced security (the writer DSN as reader) is not.
func TestReaderThatBypassesRLSIsRefused(t *testing.T) {
	s := startPrimary(t)
	s.Exec(t, "create role bypasser login bypassrls password 'bp'")
	writer := s.DSN("writer", writerPassword)
	healthy(t, newDriver(t, writer, "", postgres.Statements{}))
	checkReason(t, newDriver(t, writer, s.DSN("bypasser", "bp"), postgres.Statements{}).HealthCheck(context.Background()),
		v1alpha1.ReasonReaderBypassesRLS, "BYPASSRLS")
	checkReason(t, newDriver(t, writer, s.SuperDSN(), postgres.Statements{}).HealthCheck(context.Background()),
		v1alpha1.ReasonReaderBypassesRLS, "superuser")
	// Without manageSchema (which would force it again).
	s.Exec(t, "alter table rag.chunks no force row level security")
	w, _ := postgres.ParseDSN(writer)
	d, err := postgres.New(postgres.Config{Writer: w, Schema: "rag", Timeout: 5 * time.Second})
	must(t, err)
	defer d.Close()
	checkReason(t, d.HealthCheck(context.Background()), v1alpha1.ReasonReaderBypassesRLS, "owns rag.chunks")
}

// TestInvalidStatementIsNamed: a statement that does not prepare, one with
// too many parameters, and a search returning other columns are refused
// with the statement's field name.
func TestInvalidStatementIsNamed(t *testing.T) {
	s := startPrimary(t)
	writer, reader := s.DSN("writer", writerPassword), s.DSN("reader", readerPassword)
	healthy(t, newDriver(t, writer, reader, postgres.Statements{}))
	for _, c := range []struct {
		st      postgres.Statements
		mention string
	}{
		{postgres.Statements{Grant: "insert into rag.no_such_table values ($1, $2)"}, "spec.driver.postgres.statements.grant does not prepare"},
		{postgres.Statements{Revoke: "delete from rag.document_acl where document_id = $1 and principal = $2 and $3::int > 0"}, "statements.revoke uses 3 parameters"},
		{postgres.Statements{Search: "select id, document_id from rag.chunks where content = $1 limit $2"}, "statements.search returns 2 columns"},
	} {
		checkReason(t, newDriver(t, writer, reader, c.st).HealthCheck(context.Background()), v1alpha1.ReasonStatementInvalid, c.mention)
	}
	// Without manageSchema a missing reference schema names the statement.
	w, _ := postgres.ParseDSN(writer)
	d, err := postgres.New(postgres.Config{Writer: w, Schema: "elsewhere", Timeout: 5 * time.Second})
	must(t, err)
	defer d.Close()
	checkReason(t, d.HealthCheck(context.Background()), v1alpha1.ReasonStatementInvalid, "manageSchema")
}

// TestErrorsAreClassifiedAndSanitized: a wrong password is Unauthorized, a
// closed port Transient, and neither error names the password or the DSN.
func TestErrorsAreClassifiedAndSanitized(t *testing.T) {
	s := startPrimary(t)
	ctx := context.Background()
	wrong := s.DSN("writer", "wrong-password-value")
	err := newDriver(t, wrong, "", postgres.Statements{}).DeleteDocument(ctx, "x")
	if !driver.IsUnauthorized(err) {
		t.Fatalf("wrong password: %v, want unauthorized", err)
	}
	for _, leak := range []string{"wrong-password-value", wrong, "writer@"} {
		if strings.Contains(err.Error(), leak) {
			t.Fatalf("error %q contains %q", err, leak)
		}
	}
	closed := "postgres://writer:" + writerPassword + "@127.0.0.1:1/postgres?sslmode=disable"
	err = newDriver(t, closed, "", postgres.Statements{}).DeleteDocument(ctx, "x")
	if !driver.IsTransient(err) || strings.Contains(err.Error(), writerPassword) {
		t.Fatalf("closed port: %v, want a transient error without the password", err)
	}
	// A writer role lacking privileges on the tables is refused as a credential.
	s.Exec(t, "create role stranger login password 'st'")
	healthy(t, newDriver(t, s.DSN("writer", writerPassword), "", postgres.Statements{}))
	st, _ := postgres.ParseDSN(s.DSN("stranger", "st"))
	d, err := postgres.New(postgres.Config{Writer: st, Schema: "rag", Timeout: 5 * time.Second,
		Statements: postgres.Statements{Search: "select 'a'::text, 'b'::text, 1::float8 where $1::text is not null and $2::bigint > 0"}})
	must(t, err)
	defer d.Close()
	if err := d.DeleteDocument(ctx, "x"); !driver.IsUnauthorized(err) {
		t.Fatalf("a writer without privileges: %v", err)
	}
	if _, err := postgres.ParseDSN("postgres://u:" + writerPassword + "@host:notaport/db"); err == nil || strings.Contains(err.Error(), writerPassword) {
		t.Fatalf("unparseable DSN: %v", err)
	}
}
