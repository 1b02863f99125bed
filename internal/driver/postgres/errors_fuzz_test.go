package postgres

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ragcanary/ragcanary/internal/safetext"
)

// driverSQLState is how every message the driver writes about a server
// error ends: the SQLSTATE it read, well-formed or replaced.
var driverSQLState = regexp.MustCompile(`\(SQLSTATE ([0-9A-Z]{5}|\?{5})\)$`)

// FuzzServerErrorMessages feeds arbitrary server errors (as a hostile or
// broken server may send them) to every function that turns one into text:
// the classification of any call's failure, and the health check's
// statement refusal with and without an override. None may panic, and each
// message must be printable and end with a well-formed SQLSTATE.
func FuzzServerErrorMessages(f *testing.F) {
	for _, seed := range []struct{ code, message, detail string }{
		{"42P01", `relation "rag.chunks" does not exist`, ""},
		{"", "no code at all", ""},
		{"2", "a one-byte code", ""},
		{"28", "a class only", ""},
		{"42p01", "lower case", ""},
		{"42P01X", "six characters", ""},
		{"4\x002P1", "a NUL in the code", ""},
		{"\x1b[2J", "an escape for a code", ""},
		{"42601", "\x1b]0;owned\x07\u202egnp.exe\u202c\r\nLevel: FATAL", "\x1b[31mred"},
		{"XX000", strings.Repeat("é", 500), "\xff\xfe invalid UTF-8"},
		{"08006", "(SQLSTATE 00000)", ""},
	} {
		f.Add(seed.code, seed.message, seed.detail)
	}
	f.Fuzz(func(t *testing.T, code, message, detail string) {
		pgErr := &pgconn.PgError{Severity: "ERROR", Code: code, Message: message, Detail: detail, Hint: detail}
		wrapped := fmt.Errorf("preparing: %w", pgErr)
		plain := &Driver{schema: "rag", manageSchema: true}
		overridden := &Driver{schema: "rag", overrides: Statements{Search: "select 1"}}
		for _, got := range []error{
			classify("Search", wrapped),
			plain.statementError(stmtSearch, wrapped),
			overridden.statementError(stmtSearch, wrapped),
		} {
			assertSafeServerMessage(t, code, got)
		}
	})
}

func assertSafeServerMessage(t *testing.T, code string, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("a server error turned into no error")
	}
	msg := err.Error()
	if !safetext.Printable(msg) {
		t.Fatalf("message %q is not printable", msg)
	}
	m := driverSQLState.FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("message %q does not end with a well-formed SQLSTATE", msg)
	}
	if m[1] != safetext.SQLState(code) {
		t.Fatalf("message %q shows SQLSTATE %s for code %q", msg, m[1], code)
	}
	var ce *CheckError
	if errors.As(err, &ce) && len([]rune(ce.Message)) > 600 {
		t.Fatalf("a check message of %d runes: the server's text is not bounded", len([]rune(ce.Message)))
	}
}
