// Package pgtest runs real PostgreSQL servers for tests and the Postgres
// demo: a primary, and hot standbys streaming from it with an optional
// apply delay. Servers listen on 127.0.0.1 only, on free ports, with data
// under a temporary directory, and are stopped and removed afterwards. The
// binaries are those of the machine's PostgreSQL (pg_config --bindir); they
// refuse to run as root, so as root they run as the "postgres" system user.
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

// SuperPassword is the superuser's password (user "postgres").
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

// Start initialises and starts a primary, stopped when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := StartPrimary()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.StopAndRemove)
	return s
}

// Standby makes a streaming hot standby of s with pg_basebackup -R, applying
// WAL applyDelay after the primary commits (0: as soon as it arrives). It
// stops when the test ends.
func (s *Server) Standby(t testing.TB, applyDelay time.Duration) *Server {
	t.Helper()
	sb, err := s.StartStandby(applyDelay)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sb.Stop)
	return sb
}

// StartPrimary initialises and starts a primary in a fresh temporary
// directory. StopAndRemove stops it and removes every server's data.
func StartPrimary() (*Server, error) {
	bin, err := bindir()
	if err != nil {
		return nil, err
	}
	home, cred, err := workdir()
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &Server{Host: "127.0.0.1", Port: port, dir: filepath.Join(home, "primary"), bin: bin, cred: cred, home: home}
	if err := s.initAndStart(); err != nil {
		_ = os.RemoveAll(home)
		return nil, err
	}
	return s, nil
}

func (s *Server) initAndStart() error {
	pwfile := filepath.Join(s.home, "pw")
	if err := os.WriteFile(pwfile, []byte(SuperPassword+"\n"), 0o600); err != nil {
		return err
	}
	if err := s.chown(pwfile); err != nil {
		return err
	}
	if err := s.run("initdb", "-D", s.dir, "-U", "postgres", "--pwfile", pwfile, "--auth-host=scram-sha-256",
		"--auth-local=trust", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		return err
	}
	if err := s.configure(nil); err != nil {
		return err
	}
	return s.run("pg_ctl", "-D", s.dir, "-l", s.dir+".log", "-w", "-t", "60", "start")
}

// StartStandby makes and starts a streaming hot standby of s.
func (s *Server) StartStandby(applyDelay time.Duration) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	sb := &Server{Host: "127.0.0.1", Port: port, dir: filepath.Join(s.home, fmt.Sprintf("standby-%d", port)),
		bin: s.bin, cred: s.cred, home: s.home}
	if err := s.run("pg_basebackup", "-h", s.Host, "-p", strconv.Itoa(s.Port), "-U", "postgres", "-D", sb.dir, "-R", "-X", "stream", "--no-sync"); err != nil {
		return nil, err
	}
	if err := sb.configure(map[string]string{"recovery_min_apply_delay": fmt.Sprintf("'%dms'", applyDelay.Milliseconds())}); err != nil {
		return nil, err
	}
	if err := sb.run("pg_ctl", "-D", sb.dir, "-l", sb.dir+".log", "-w", "-t", "60", "start"); err != nil {
		return nil, err
	}
	return sb, nil
}

// Stop stops the server at once: nothing of its data must survive.
func (s *Server) Stop() {
	_ = s.command("pg_ctl", "-D", s.dir, "-m", "immediate", "-w", "-t", "30", "stop").Run()
}

// StopAndRemove stops a primary and removes its directory with the data of
// every standby made from it (stop the standbys first).
func (s *Server) StopAndRemove() {
	s.Stop()
	_ = os.RemoveAll(s.home)
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
	if err := s.ExecAll(statements...); err != nil {
		t.Fatal(err)
	}
}

// ExecAll runs statements as the superuser.
func (s *Server) ExecAll(statements ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.SuperDSN())
	if err != nil {
		return fmt.Errorf("connecting to PostgreSQL on port %d: %w", s.Port, err)
	}
	defer conn.Close(ctx)
	for _, q := range statements {
		if _, err := conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

func (s *Server) configure(extra map[string]string) error {
	lines := []string{
		"listen_addresses = '127.0.0.1'",
		"port = " + strconv.Itoa(s.Port),
		// No socket: nothing outside reaches the server but over loopback TCP.
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
		return err
	}
	defer f.Close()
	_, err = f.WriteString("\n# pgtest\n" + strings.Join(lines, "\n") + "\n")
	return err
}

// Log returns the server's log, for a failure's message.
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

func (s *Server) run(name string, args ...string) error {
	cmd := s.command(name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s%s", name, strings.Join(args, " "), err, out.String(), s.Log())
	}
	return nil
}

func (s *Server) chown(path string) error {
	if s.cred == nil {
		return nil
	}
	return os.Chown(path, int(s.cred.Uid), int(s.cred.Gid))
}

// bindir is where the server binaries are.
func bindir() (string, error) {
	out, err := exec.Command("pg_config", "--bindir").Output()
	if err != nil {
		return "", fmt.Errorf("pg_config --bindir: %w: PostgreSQL server binaries are needed (run hack/postgres-tools.sh; make test does)", err)
	}
	dir := strings.TrimSpace(string(out))
	if _, err := os.Stat(filepath.Join(dir, "initdb")); err != nil {
		return "", fmt.Errorf("initdb is not in %s: install the PostgreSQL server (hack/postgres-tools.sh)", dir)
	}
	return dir, nil
}

// workdir is a fresh directory the servers' user owns. As root, the
// servers run as the postgres user.
func workdir() (string, *syscall.Credential, error) {
	dir, err := os.MkdirTemp("", "ragcanary-pgtest-")
	if err != nil {
		return "", nil, err
	}
	if os.Geteuid() != 0 {
		return dir, nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, fmt.Errorf("running as root needs the postgres system user to run the servers: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
