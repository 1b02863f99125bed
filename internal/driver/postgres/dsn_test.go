package postgres

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// dsnSplitCases are connection strings whose splitting a check by eye gets
// wrong: keys after \v or right after a closing quote, escapes, spaces
// around '=', an upper-case scheme (keyword form to pgx), and URLs.
var dsnSplitCases = []string{
	"host=h port=1 user=u password=p sslmode=disable\vapplication_name=a",
	"application_name='x'search_path=y host=h sslmode=disable",
	`application_name='it\'s' host=h sslmode=disable`,
	`password=a\ b host=h sslmode=disable`,
	"  host = h  password = p   application_name =\f'q'  sslmode=disable",
	"user= host=h dbname=d sslmode=disable",
	"POSTGRES://u:p@h:1/db?application_name=z host=h sslmode=disable",
	"postgres://u:p%40w@h1:1,h2:2/db?application_name=a&dbname=other&sslmode=disable",
	"postgresql://[::1]:5/db?sslmode=disable&password=q",
	"postgres://h/db?application_name=a&application_name=b&sslmode=disable",
}

// TestDSNSettingsSplitAsPgxDoes: for each string, every option DSNSettings
// reads is the one pgx parses, and pgx sends no run-time parameter that
// DSNSettings did not see.
func TestDSNSettingsSplitAsPgxDoes(t *testing.T) {
	cleanPgEnvironment(t)
	for _, dsn := range dsnSplitCases {
		cfg, err := pgconn.ParseConfig(dsn)
		if err != nil {
			t.Fatalf("%q: pgx refuses it: %v", dsn, err)
		}
		if msg := disagreement(dsn, cfg); msg != "" {
			t.Errorf("%q: %s", dsn, msg)
		}
	}
}

// FuzzDSNSettingsAgreeWithPgx: on any string pgx parses, DSNSettings reads
// the same options. Strings naming files are left out: pgx would read them.
func FuzzDSNSettingsAgreeWithPgx(f *testing.F) {
	cleanPgEnvironment(f)
	for _, dsn := range dsnSplitCases {
		f.Add(dsn)
	}
	f.Fuzz(func(t *testing.T, dsn string) {
		if namesAFile(dsn) {
			return
		}
		cfg, err := parseRecovered(dsn)
		if err != nil {
			return
		}
		if msg := disagreement(dsn, cfg); msg != "" {
			t.Fatalf("%q: %s", dsn, msg)
		}
	})
}

// TestParseDSNRefusesWhatPanicsPgx: strings on which pgx's own parser
// panics are refused as invalid, with no panic.
func TestParseDSNRefusesWhatPanicsPgx(t *testing.T) {
	for _, dsn := range []string{`host=h application_name='x\`, `a='\`} {
		if _, err := parseRecovered(dsn); err == nil || !strings.Contains(err.Error(), "panic") {
			t.Fatalf("%q: pgx does not panic (%v): the case tests nothing", dsn, err)
		}
		if _, err := ParseDSN(dsn); !errors.Is(err, ErrInvalidDSN) {
			t.Fatalf("%q: %v, want ErrInvalidDSN", dsn, err)
		}
	}
}

// cleanPgEnvironment unsets what pgx reads from the environment, and
// points its password file at nothing, so a parse holds only the string.
func cleanPgEnvironment(t testing.TB) {
	for _, k := range []string{"PGHOST", "PGPORT", "PGDATABASE", "PGUSER", "PGPASSWORD", "PGAPPNAME", "PGSERVICE",
		"PGSERVICEFILE", "PGSSLMODE", "PGSSLCERT", "PGSSLKEY", "PGSSLROOTCERT", "PGOPTIONS", "PGTZ", "PGTARGETSESSIONATTRS"} {
		t.Setenv(k, "")
	}
	t.Setenv("PGPASSFILE", "/nonexistent/ragcanary-no-passfile")
}

func namesAFile(dsn string) bool {
	lower := strings.ToLower(dsn)
	for _, k := range []string{"sslcert", "sslkey", "sslrootcert", "passfile", "service", "/dev", "/proc", "/sys"} {
		if strings.Contains(lower, k) {
			return true
		}
	}
	return false
}

func parseRecovered(dsn string) (cfg *pgconn.Config, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errors.New("pgx panicked")
		}
	}()
	return pgconn.ParseConfig(dsn)
}

// disagreement compares DSNSettings with pgx's parse of the same string:
// user, password, database and every run-time parameter. Hosts and ports
// need not agree: the door checks pgx's own endpoints.
func disagreement(dsn string, cfg *pgconn.Config) string {
	settings, err := DSNSettings(dsn)
	if err != nil {
		return "DSNSettings refuses a string pgx parses"
	}
	parsed := map[string]string{"user": cfg.User, "password": cfg.Password, "database": cfg.Database}
	for k, v := range settings {
		want, known := parsed[k]
		if rp, ok := cfg.RuntimeParams[k]; ok {
			want, known = rp, true
		}
		if known && want != v {
			return k + ": DSNSettings reads " + strconv.Quote(v) + ", pgx " + strconv.Quote(want)
		}
	}
	for k := range cfg.RuntimeParams {
		if _, ok := settings[k]; !ok {
			return "pgx sends " + strconv.Quote(k) + ", which DSNSettings does not read"
		}
	}
	return ""
}
