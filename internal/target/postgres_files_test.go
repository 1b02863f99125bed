package target

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ragcanary/ragcanary/internal/dev/pgtest"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
)

// filePassword is the password only the operator's files hold.
const filePassword = "file-password-value"

// operatorFiles are files in the operator's pod a tenant must not make it
// use: a password file and a service file holding filePassword for
// fileuser on the server, a CA, and a client certificate and key.
type operatorFiles struct {
	passfile, servicefile, ca, cert, key string
}

func writeOperatorFiles(t *testing.T, s *pgtest.Server) operatorFiles {
	t.Helper()
	dir := t.TempDir()
	f := operatorFiles{passfile: filepath.Join(dir, "pgpass"), servicefile: filepath.Join(dir, "pg_service.conf"),
		ca: filepath.Join(dir, "ca.pem"), cert: filepath.Join(dir, "client.pem"), key: filepath.Join(dir, "client.key")}
	certPEM, keyPEM := selfSignedCertificate(t)
	for path, content := range map[string][]byte{
		f.passfile:    fmt.Appendf(nil, "%s:%d:*:fileuser:%s\n", s.Host, s.Port, filePassword),
		f.servicefile: fmt.Appendf(nil, "[prod]\nhost=%s\nport=%d\nuser=fileuser\ndbname=postgres\npassword=%s\nsslmode=disable\n", s.Host, s.Port, filePassword),
		f.ca:          certPEM,
		f.cert:        certPEM,
		f.key:         keyPEM,
	} {
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func selfSignedCertificate(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "operator"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
}

// TestPostgresDSNNeverUsesTheOperatorsFiles: connection strings that hide a
// file option from a check by eye (after \v, right after a closing quote,
// behind an upper-case scheme, which pgx reads as keyword=value), and
// strings that name no file while the operator's environment points pgx at
// one, are refused as the user's to fix, naming what to remove. The server,
// which requires fileuser's password, never sees fileuser authenticate.
func TestPostgresDSNNeverUsesTheOperatorsFiles(t *testing.T) {
	s := pgtest.Start(t)
	s.Exec(t, "create role fileuser login password '"+filePassword+"'", "create role witness login password 'witness-pw'",
		"alter system set log_connections = on", "select pg_reload_conf()")
	waitForConnectionLog(t, s)
	files := writeOperatorFiles(t, s)
	hostPort := net.JoinHostPort(s.Host, strconv.Itoa(s.Port))
	allow := []string{"postgres://" + hostPort}
	base := fmt.Sprintf("host=%s port=%d user=fileuser dbname=postgres sslmode=disable", s.Host, s.Port)
	hidden := func(option string) []dsnCase {
		return []dsnCase{
			{"after a vertical tab", base + "\v" + option, nil},
			{"right after a closing quote", base + " application_name='x'" + option, nil},
			{"behind an upper-case scheme", "POSTGRES://fileuser@" + hostPort + "/postgres?a=b " + base + " " + option, nil},
		}
	}
	for _, c := range hidden("passfile=" + files.passfile) {
		t.Run("passfile "+c.name, func(t *testing.T) {
			assertPgxUsesTheFilePassword(t, c.dsn)
			assertRefusedBeforeConnecting(t, allow, c.dsn, "passfile")
		})
	}
	for _, opt := range []struct{ key, option string }{
		{"service", "servicefile=" + files.servicefile + " service=prod"},
		{"sslrootcert", "sslmode=require sslrootcert=" + files.ca},
		{"sslcert", "sslmode=require sslkey=" + files.key + " sslcert=" + files.cert},
	} {
		for _, c := range hidden(strings.ReplaceAll(opt.option, " ", "\v")) {
			t.Run(opt.key+" "+c.name, func(t *testing.T) {
				if _, err := pgconn.ParseConfig(c.dsn); err != nil {
					t.Fatalf("pgx does not parse the string (%v): the case tests nothing", err)
				}
				assertRefusedBeforeConnecting(t, allow, c.dsn, opt.key)
			})
		}
	}
	for _, c := range []dsnCase{
		{"PGPASSFILE", base, map[string]string{"PGPASSFILE": files.passfile}},
		{"PGPASSWORD", base, map[string]string{"PGPASSWORD": filePassword}},
		{"PGSERVICEFILE and PGSERVICE", fmt.Sprintf("host=%s port=%d sslmode=disable", s.Host, s.Port),
			map[string]string{"PGSERVICEFILE": files.servicefile, "PGSERVICE": "prod"}},
		{"PGSSLROOTCERT", base + " sslmode=require", map[string]string{"PGSSLROOTCERT": files.ca}},
		{"PGSSLCERT and PGSSLKEY", base + " sslmode=require", map[string]string{"PGSSLCERT": files.cert, "PGSSLKEY": files.key}},
	} {
		t.Run("environment "+c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			want := "password"
			if strings.HasPrefix(c.name, "PGSSL") {
				want = "certificate"
			}
			assertRefusedBeforeConnecting(t, allow, c.dsn, want)
		})
	}
	if n := strings.Count(s.Log(), "connection authorized: user=fileuser"); n != 0 {
		t.Fatalf("fileuser authenticated %d times: the operator sent a password it read from a file", n)
	}
}

// dsnCase is a connection string, and the operator environment it is
// parsed in.
type dsnCase struct {
	name, dsn string
	env       map[string]string
}

// waitForConnectionLog waits until the server logs authorized connections,
// so the absence of one later means it did not happen.
func waitForConnectionLog(t *testing.T, s *pgtest.Server) {
	t.Helper()
	testutil.Eventually(t, 20*time.Second, "connection logging", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, s.DSN("witness", "witness-pw"))
		if err != nil {
			return err
		}
		_ = conn.Close(ctx)
		if !strings.Contains(s.Log(), "connection authorized: user=witness") {
			return fmt.Errorf("the server does not log connections yet")
		}
		return nil
	})
}

// assertPgxUsesTheFilePassword: pgx itself reads the string as taking the
// password from the file, so admitting it would send that password.
func assertPgxUsesTheFilePassword(t *testing.T, dsn string) {
	t.Helper()
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil || cfg.Password != filePassword {
		t.Fatalf("pgx does not take the file's password from the string (%v): the case tests nothing", err)
	}
}

// assertRefusedBeforeConnecting: the door refuses the writer DSN naming
// want. Were it admitted, its driver check runs, which is how an operator
// would authenticate with the file's password.
func assertRefusedBeforeConnecting(t *testing.T, allow []string, dsn, want string) {
	t.Helper()
	d := pgDoor(t, allow, dsn, "")
	c, err := d.Corpus(context.Background(), pgCorpus(false))
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		t.Fatalf("the connection string was admitted; its driver check then returned %v", c.CheckDriver(ctx))
	}
	assertDSNRefused(t, err, fieldDSN, want)
}

// TestRuntimeParamMismatchRefusesDisagreement: a key the two parsers
// read differently, or a run-time parameter only pgx saw, is reported;
// the operator environment's own parameters and consumed keys are not.
func TestRuntimeParamMismatchRefusesDisagreement(t *testing.T) {
	for _, c := range []struct {
		name             string
		settings, params map[string]string
		mismatch         bool
	}{
		{"same", map[string]string{"application_name": "a", "host": "h"}, map[string]string{"application_name": "a"}, false},
		{"a value read otherwise", map[string]string{"application_name": "x'passfile=/f"}, map[string]string{"application_name": "x"}, true},
		{"a key only pgx saw", map[string]string{}, map[string]string{"search_path": "s"}, true},
		{"the environment's application name", map[string]string{}, map[string]string{"application_name": "env"}, false},
		{"a key pgx did not send", map[string]string{"search_path": "s"}, map[string]string{}, true},
	} {
		if _, got := runtimeParamMismatch(c.settings, c.params); got != c.mismatch {
			t.Errorf("%s: mismatch %v, want %v", c.name, got, c.mismatch)
		}
	}
}
