// Package ldaptest runs a real OpenLDAP server (Debian's /usr/sbin/slapd,
// installed by hack/ldap-tools.sh) for tests: its own cn=config and mdb
// database in a temporary directory, listening on ldap://127.0.0.1:<free
// port>/ only, with a base of ou=people and ou=groups under the suffix, and
// stopped and removed when the test ends.
package ldaptest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-ldap/ldap/v3"

	"github.com/ragcanary/ragcanary/internal/dev/testutil"
)

// DefaultSuffix is the naming context a server holds unless WithSuffix says
// otherwise.
const DefaultSuffix = "dc=ragcanary,dc=test"

// The binaries of Debian's slapd package (a variable so a test can point
// at a missing one).
var (
	slapdPath = "/usr/sbin/slapd"
	slapadd   = "/usr/sbin/slapadd"
)

const (
	startLimit = 30 * time.Second
	// stopGrace is how long slapd may take to close its database on
	// SIGTERM before it is killed.
	stopGrace = 10 * time.Second
	// startAttempts covers the free port being taken between FreePort and
	// slapd's bind.
	startAttempts = 3
)

// Option changes how Start configures the server.
type Option func(*options)

type options struct {
	suffix string
}

// WithSuffix sets the database's suffix; its first RDN must be dc=… or o=….
func WithSuffix(suffix string) Option {
	return func(o *options) { o.suffix = suffix }
}

// Server is one running slapd.
type Server struct {
	url      string
	suffix   string
	rootDN   string
	rootPW   string
	dir      string
	cmd      *exec.Cmd
	exited   chan struct{}
	log      *testutil.LockedBuffer
	stopOnce sync.Once
	gid      int // the last posixGroup gidNumber handed out
	gidMu    sync.Mutex
}

// Start runs slapd until t ends. It fails t, naming the make target, when
// slapd is missing: the directory tests need the real server.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	o := options{suffix: DefaultSuffix}
	for _, opt := range opts {
		opt(&o)
	}
	for _, bin := range []string{slapdPath, slapadd} {
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("%s is missing: run 'make ldap-tools' (make test does) to install Debian's slapd", bin)
		}
	}
	var s *Server
	var err error
	for range startAttempts {
		s, err = start(o, testutil.RandomKey(t, "ldaptest-"), testutil.FreePort(t))
		if err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	if err := s.loadBase(); err != nil {
		t.Fatalf("loading the base entries: %v", err)
	}
	return s
}

// start configures and runs one slapd, returning once it accepts the
// admin's bind. On error nothing of it is left.
func start(o options, password, port string) (*Server, error) {
	dir, err := os.MkdirTemp("", "ldaptest-")
	if err != nil {
		return nil, err
	}
	s := &Server{
		url:    "ldap://" + net.JoinHostPort("127.0.0.1", port) + "/",
		suffix: o.suffix,
		rootDN: "cn=admin," + o.suffix,
		rootPW: password,
		dir:    dir,
		exited: make(chan struct{}),
		log:    &testutil.LockedBuffer{},
		gid:    10000,
	}
	if err := s.configure(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := s.run(); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// configure writes cn=config with slapadd, which checks it as slapd would.
func (s *Server) configure() error {
	for _, d := range []string{s.configDir(), filepath.Join(s.dir, "data")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
	}
	ldif := filepath.Join(s.dir, "config.ldif")
	if err := os.WriteFile(ldif, []byte(configLDIF(s.dir, s.suffix, s.rootDN, s.rootPW)), 0o600); err != nil {
		return err
	}
	out, err := exec.Command(slapadd, "-n0", "-F", s.configDir(), "-l", ldif).CombinedOutput()
	if err != nil {
		return fmt.Errorf("slapadd -n0: %v: %s", err, out)
	}
	return nil
}

// run starts slapd in the foreground (-d keeps it attached, so it is this
// process's child and its exit is seen; level none prints only its errors,
// such as a port taken) and waits until it answers.
func (s *Server) run() error {
	s.cmd = exec.Command(slapdPath, "-F", s.configDir(), "-h", s.url, "-d", "none")
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	// A test binary that panics or times out runs no cleanup: slapd must
	// not outlive it.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		close(s.exited)
		return fmt.Errorf("starting slapd: %w", err)
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	return s.awaitReady()
}

// awaitReady polls an admin bind until it works, slapd exits or
// startLimit passes.
func (s *Server) awaitReady() error {
	deadline := time.Now().Add(startLimit)
	tick := time.NewTicker(testutil.PollInterval)
	defer tick.Stop()
	for {
		err := s.Bind(s.rootDN, s.rootPW)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("slapd on %s did not accept a bind within %s: %v\n%s", s.url, startLimit, err, s.log.String())
		}
		select {
		case <-s.exited:
			return fmt.Errorf("slapd on %s exited: %s", s.url, s.log.String())
		case <-tick.C:
		}
	}
}

// Stop ends slapd (SIGTERM, then SIGKILL after stopGrace) and removes its
// directory. Start registers it with t.Cleanup; calling it earlier is safe.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		if s.cmd != nil && s.cmd.Process != nil {
			_ = s.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-s.exited:
			case <-time.After(stopGrace):
				_ = s.cmd.Process.Kill()
				<-s.exited
			}
		}
		_ = os.RemoveAll(s.dir)
	})
}

// Bind opens a connection, binds as dn with password and closes it: nil
// when the directory accepts the credentials.
func (s *Server) Bind(dn, password string) error {
	conn, err := s.dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Bind(dn, password)
}

func (s *Server) dial() (*ldap.Conn, error) {
	conn, err := ldap.DialURL(s.url, ldap.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}))
	if err != nil {
		return nil, err
	}
	conn.SetTimeout(10 * time.Second)
	return conn, nil
}

// admin is a connection bound as the root DN; the caller closes it.
func (s *Server) admin(t testing.TB) *ldap.Conn {
	t.Helper()
	conn, err := s.adminConn()
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

func (s *Server) adminConn() (*ldap.Conn, error) {
	conn, err := s.dial()
	if err != nil {
		return nil, err
	}
	if err := conn.Bind(s.rootDN, s.rootPW); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("binding as %s: %w", s.rootDN, err)
	}
	return conn, nil
}

// PID is slapd's process id, for a test that checks it is gone after Stop.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Log is what slapd printed, for a failure's message.
func (s *Server) Log() string { return s.log.String() }

// URL is ldap://127.0.0.1:PORT/.
func (s *Server) URL() string { return s.url }

// Addr is 127.0.0.1:PORT.
func (s *Server) Addr() string {
	return strings.TrimSuffix(strings.TrimPrefix(s.url, "ldap://"), "/")
}

// BindDN is the root DN (cn=admin,<suffix>), which may read and write
// everything in the database.
func (s *Server) BindDN() string { return s.rootDN }

// BindPassword is the root DN's password, fresh for each server.
func (s *Server) BindPassword() string { return s.rootPW }

// Suffix is the database's naming context.
func (s *Server) Suffix() string { return s.suffix }

// PeopleDN is ou=people,<suffix>, where AddUser puts users.
func (s *Server) PeopleDN() string { return "ou=people," + s.suffix }

// GroupsDN is ou=groups,<suffix>, where AddGroup puts groups.
func (s *Server) GroupsDN() string { return "ou=groups," + s.suffix }

func (s *Server) configDir() string { return filepath.Join(s.dir, "slapd.d") }

var errNoSuchClass = errors.New("unknown group object class")
