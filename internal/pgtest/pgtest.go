// Package pgtest runs real PostgreSQL servers for tests: a primary, and a
// hot standby streaming from it with an optional apply delay. Servers listen
// on 127.0.0.1 only, on free ports, with data under a temporary directory,
// and are stopped and removed when the test ends. The binaries are those of
// the machine's PostgreSQL (pg_config --bindir); they refuse to run as root,
// so as root they run as the "postgres" system user.
package pgtest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// SuperPassword is the test superuser's password (user "postgres").
const SuperPassword = "pgtest-super"

// Server is one running PostgreSQL server.
type Server struct {
	Host string
	Port int
	dir  string // data directory
	bin  string
	cred *syscall.Credential
	home string // parent of the data directory, owned by the server's user
}

// Start initialises and starts a primary.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := bindir(t)
	home, cred := workdir(t)
	s := &Server{Host: "127.0.0.1", Port: freePort(t), dir: filepath.Join(home, "primary"), bin: bin, cred: cred, home: home}
	pwfile := filepath.Join(home, "pw")
	if err := os.WriteFile(pwfile, []byte(SuperPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.chown(t, pwfile)
	s.run(t, "initdb", "-D", s.dir, "-U", "postgres", "--pwfile", pwfile, "--auth-host=scram-sha-256",
		"--auth-local=trust", "-E", "UTF8", "--locale=C", "--no-sync")
	s.configure(t, nil)
	s.start(t)
	return s
}

// Standby makes a streaming hot standby of s with pg_basebackup -R, applying
// WAL applyDelay after the primary commits (0: as soon as it arrives).
func (s *Server) Standby(t testing.TB, applyDelay time.Duration) *Server {
	t.Helper()
	sb := &Server{Host: "127.0.0.1", Port: freePort(t), dir: filepath.Join(s.home, fmt.Sprintf("standby-%d", time.Now().UnixNano())),
		bin: s.bin, cred: s.cred, home: s.home}
	s.run(t, "pg_basebackup", "-h", s.Host, "-p", strconv.Itoa(s.Port), "-U", "postgres", "-D", sb.dir, "-R", "-X", "stream", "--no-sync")
	sb.configure(t, map[string]string{"recovery_min_apply_delay": fmt.Sprintf("'%dms'", applyDelay.Milliseconds())})
	sb.start(t)
	return sb
}

// DSN is a URL connection string for user on database postgres.
func (s *Server) DSN(user, password string) string {
	return fmt.Sprintf("postgres://%s:%s@%s/postgres?sslmode=disable", user, password, net.JoinHostPort(s.Host, strconv.Itoa(s.Port)))
}

// SuperDSN connects as the superuser.
func (s *Server) SuperDSN() string { return s.DSN("postgres", SuperPassword) }

// Exec runs statements as the superuser, failing the test on error.
func (s *Server) Exec(t testing.TB, statements ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.SuperDSN())
	if err != nil {
		t.Fatalf("connecting to PostgreSQL on port %d: %v", s.Port, err)
	}
	defer conn.Close(ctx)
	for _, q := range statements {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func (s *Server) configure(t testing.TB, extra map[string]string) {
	t.Helper()
	lines := []string{
		"listen_addresses = '127.0.0.1'",
		"port = " + strconv.Itoa(s.Port),
		// No socket: nothing outside the test can reach the server but over loopback TCP.
		"unix_socket_directories = ''",
		"fsync = off",
		"synchronous_commit = off",
		"full_page_writes = off",
		"max_connections = 60",
		"shared_buffers = 32MB",
		"wal_level = replica",
		"max_wal_senders = 4",
		"hot_standby = on",
		"logging_collector = off",
	}
	for k, v := range extra {
		lines = append(lines, k+" = "+v)
	}
	f, err := os.OpenFile(filepath.Join(s.dir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("\n# pgtest\n" + strings.Join(lines, "\n") + "\n"); err != nil {
		t.Fatal(err)
	}
}

func (s *Server) start(t testing.TB) {
	t.Helper()
	s.run(t, "pg_ctl", "-D", s.dir, "-l", s.dir+".log", "-w", "-t", "60", "start")
	t.Cleanup(func() {
		// immediate: nothing of a test server's data must survive.
		_ = s.command("pg_ctl", "-D", s.dir, "-m", "immediate", "-w", "-t", "30", "stop").Run()
	})
}

// Log returns the server's log, for a failing test's message.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.dir + ".log")
	return string(b)
}

func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.home
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C", "PGPASSWORD=" + SuperPassword, "HOME=" + s.home}
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	return cmd
}

func (s *Server) run(t testing.TB, name string, args ...string) {
	t.Helper()
	cmd := s.command(name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out.String(), s.Log())
	}
}

func (s *Server) chown(t testing.TB, path string) {
	t.Helper()
	if s.cred == nil {
		return
	}
	if err := os.Chown(path, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
		t.Fatal(err)
	}
}

// bindir is where the server binaries are.
func bindir(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("pg_config", "--bindir").Output()
	if err != nil {
		t.Fatalf("pg_config --bindir: %v: PostgreSQL server binaries are needed (Debian: apt-get install postgresql-15; or run hack/postgres-tools.sh)", err)
	}
	dir := strings.TrimSpace(string(out))
	if _, err := os.Stat(filepath.Join(dir, "initdb")); err != nil {
		t.Fatalf("initdb is not in %s: install the PostgreSQL server package (hack/postgres-tools.sh)", dir)
	}
	return dir
}

// workdir is a fresh directory the server's user owns, removed afterwards.
// As root, the servers run as the postgres user.
func workdir(t testing.TB) (string, *syscall.Credential) {
	t.Helper()
	dir, err := os.MkdirTemp("", "ragcanary-pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if os.Geteuid() != 0 {
		return dir, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("running as root needs the postgres system user to run the servers: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	return dir, &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
