package pgtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ragcanary/ragcanary/internal/dev/testutil"
)

// PGlite is a PGlite server (PostgreSQL 18 compiled to WebAssembly, with
// pgvector) speaking the PostgreSQL wire protocol on loopback. It has one
// user, a superuser, no TLS and no password; data lives in memory.
type PGlite struct {
	Host string
	Port int
}

// DSN is the server's connection string.
func (p *PGlite) DSN() string {
	return fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", net.JoinHostPort(p.Host, strconv.Itoa(p.Port)))
}

// StartPGlite runs bin/pglite's pglite-server (installed by
// hack/postgres-pglite.sh) with the vector extension loaded and
// maxConnections client connections, and stops it when the test ends.
func StartPGlite(t testing.TB, maxConnections int) *PGlite {
	t.Helper()
	server := filepath.Join(repoRoot(t), "bin", "pglite", "node_modules", ".bin", "pglite-server")
	if _, err := os.Stat(server); err != nil {
		t.Fatalf("%s is missing: run hack/postgres-pglite.sh (make test does)", server)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	p := &PGlite{Host: "127.0.0.1", Port: port}
	cmd := exec.Command(server, "-e", "@electric-sql/pglite-pgvector:vector", "-h", p.Host,
		"-p", strconv.Itoa(p.Port), "-m", strconv.Itoa(maxConnections))
	var log testutil.LockedBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	// A test binary that panics or times out runs no cleanup: the server
	// must not outlive it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting pglite-server: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, err := pgx.Connect(ctx, p.DSN())
		if err == nil {
			_ = conn.Close(ctx)
			cancel()
			return p
		}
		cancel()
		select {
		case <-done:
			t.Fatalf("pglite-server exited: %s", log.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("pglite-server did not accept connections within 60s: %v\n%s", err, log.String())
		}
	}
}

func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}
