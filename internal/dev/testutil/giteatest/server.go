// Package giteatest starts a real Gitea (bin/gitea, built from Go modules by
// the Makefile's gitea-tools target) for tests: its own PostgreSQL (pgtest),
// HTTP on 127.0.0.1 only, registration, mail, OAuth2, federation, Actions,
// packages, LFS, SSH and the update checker off, an administrator with a
// token, and helpers that make the users, organisations and teams a test
// plants canaries for. Everything it starts is stopped and removed when the
// test ends.
//
// The issue indexer is bleve, Gitea's default: issues reach search through
// Gitea's indexer queue, so a test sees the indexing lag a real instance
// has. (The "db" indexer would answer from SQL at once and hide it.) Who may
// see an issue is decided when a search runs, from the repositories the
// searcher can access in the database.
package giteatest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/dev/pgtest"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
)

// RunUser is the system user Gitea runs as when the tests run as root
// (Gitea refuses root). Start creates it when it is missing.
const RunUser = "ragcanary-gitea"

// AdminName is the administrator Start creates.
const AdminName = "ragcanary-admin"

const (
	commandTimeout = 2 * time.Minute
	readyTimeout   = 60 * time.Second
	stopTimeout    = 10 * time.Second
	// logTail bounds how much of Gitea's logs a failing test prints.
	logTail = 16 << 10
)

// Server is a running Gitea.
type Server struct {
	// URL is the web and API root, http://127.0.0.1:PORT (no trailing slash).
	URL string
	// Admin is the site administrator; its token has every scope.
	Admin User

	dir    string // work path: app.ini, data, logs; owned by the run user
	bin    string
	cred   *syscall.Credential
	userNm string
	exited <-chan struct{} // closed when gitea web has exited
}

// User is a Gitea account a test acts as.
type User struct {
	ID       int64
	Name     string
	Password string
	// Token is a personal access token: every scope for the administrator,
	// read:issue and read:repository for users CreateUser makes.
	Token string
}

// Start runs Gitea until t ends. It fails t, naming the make target, when
// bin/gitea or its assets are missing: the tests need the real server.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	began := time.Now()
	bin, assets, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	runAs, cred, err := processUser()
	if err != nil {
		t.Fatal(err)
	}
	pg := pgtest.Start(t)
	dbPassword := testutil.RandomKey(t, "gitea-db-")
	pg.Exec(t, "CREATE ROLE gitea LOGIN PASSWORD '"+dbPassword+"'", "CREATE DATABASE gitea OWNER gitea")
	pgReady := time.Now()

	s := &Server{bin: bin, cred: cred, userNm: runAs}
	s.dir = s.workDir(t)
	port := testutil.FreePort(t)
	s.URL = "http://127.0.0.1:" + port
	ini := appINI(iniValues{
		RunUser: runAs, WorkPath: s.dir, Port: port, StaticRoot: assets,
		DBHost: fmt.Sprintf("%s:%d", pg.Host, pg.Port), DBPassword: dbPassword,
		SecretKey: testutil.RandomKey(t, ""), InternalToken: testutil.RandomKey(t, "") + testutil.RandomKey(t, ""),
		SyncSchedule: o.syncSchedule(), OffTasks: otherCronTasks,
		OAuth2Lifetime: o.oauth2Lifetime(), JWTSecret: jwtSecret(t),
	})
	if err := s.writeOwned(filepath.Join(s.dir, "app.ini"), ini); err != nil {
		t.Fatal(err)
	}
	if out, err := s.run("migrate"); err != nil {
		t.Fatalf("gitea migrate: %v\n%s%s", err, out, s.logs())
	}
	migrated := time.Now()
	s.Admin = s.createAdmin(t)
	adminMade := time.Now()
	s.startWeb(t)
	s.waitReady(t)
	var admin struct {
		ID int64 `json:"id"`
	}
	decode(t, s.MustAPI(t, http.MethodGet, "/user", s.Admin.Token, nil, http.StatusOK), &admin)
	s.Admin.ID = admin.ID
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	t.Logf("gitea serving at %s after %s (PostgreSQL %s, migrate %s, admin %s, web until search answers %s)", s.URL,
		ms(time.Since(began)), ms(pgReady.Sub(began)), ms(migrated.Sub(pgReady)), ms(adminMade.Sub(migrated)), ms(time.Since(adminMade)))
	return s
}

// workDir makes the work path, owned by the run user and removed when the
// test ends. Not t.TempDir: its parents are closed to other users.
func (s *Server) workDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ragcanary-gitea-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	for _, sub := range []string{"", "data", "log", "home", "custom"} {
		p := filepath.Join(dir, sub)
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if s.cred != nil {
			if err := os.Chown(p, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

func (s *Server) writeOwned(path, content string) error {
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		return err
	}
	if s.cred == nil {
		return nil
	}
	return os.Chown(path, int(s.cred.Uid), int(s.cred.Gid))
}

// command is bin/gitea with the test's app.ini and work path, as the run
// user, in a process group of its own that dies with the test binary.
func (s *Server) command(ctx context.Context, args ...string) *exec.Cmd {
	all := append([]string{"--config", filepath.Join(s.dir, "app.ini"), "--work-path", s.dir}, args...)
	cmd := exec.CommandContext(ctx, s.bin, all...)
	cmd.Dir = s.dir
	cmd.Env = []string{
		"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8",
		"HOME=" + filepath.Join(s.dir, "home"), "USER=" + s.userNm,
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: s.cred}
	return cmd
}

// run runs one gitea command to its end and returns its output.
func (s *Server) run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	out, err := s.command(ctx, args...).CombinedOutput()
	return string(out), err
}

var (
	passwordLine = regexp.MustCompile(`generated random password is '([^']+)'`)
	tokenLine    = regexp.MustCompile(`Access token was successfully created\.\.\. ([0-9a-f]+)`)
)

// createAdmin makes the administrator and its token with Gitea's own CLI,
// before the web server starts. The password is random and, like the
// token, comes back on the command's output, never on a command line.
func (s *Server) createAdmin(t testing.TB) User {
	t.Helper()
	out, err := s.run("admin", "user", "create", "--admin", "--username", AdminName,
		"--email", AdminName+"@ragcanary.test", "--random-password", "--must-change-password=false",
		"--access-token", "--access-token-name", "ragcanary-admin", "--access-token-scopes", "all")
	pw, tok := passwordLine.FindStringSubmatch(out), tokenLine.FindStringSubmatch(out)
	if err != nil || pw == nil || tok == nil {
		t.Fatalf("gitea admin user create: %v\n%s%s", err, redact(out), s.logs())
	}
	return User{Name: AdminName, Password: pw[1], Token: tok[1]}
}

// redact keeps the lines of a command's output that carry no credential.
func redact(out string) string {
	var kept []string
	for _, l := range strings.Split(out, "\n") {
		if passwordLine.MatchString(l) || tokenLine.MatchString(l) {
			l = "[a line with a credential left out]"
		}
		kept = append(kept, l)
	}
	return strings.Join(kept, "\n")
}

// startWeb runs `gitea web` until the test ends: SIGTERM to its process
// group, SIGKILL when it has not exited within stopTimeout.
func (s *Server) startWeb(t testing.TB) {
	t.Helper()
	stdout, err := os.OpenFile(filepath.Join(s.dir, "log", "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := s.command(context.Background(), "web")
	cmd.Stdout, cmd.Stderr = stdout, stdout
	if err := cmd.Start(); err != nil {
		_ = stdout.Close()
		t.Fatalf("starting gitea web: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = stdout.Close(); close(done) }()
	s.exited = done
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(stopTimeout):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			t.Logf("gitea logs:\n%s", s.logs())
		}
	})
}

// logs is the tail of each of Gitea's log files, for a failure's message.
func (s *Server) logs() string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(s.dir, "log", "*.log"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil || len(data) == 0 {
			continue
		}
		if len(data) > logTail {
			data = data[len(data)-logTail:]
		}
		fmt.Fprintf(&b, "--- %s (tail)\n%s\n", filepath.Base(f), data)
	}
	return b.String()
}

// binary finds bin/gitea above the working directory, or takes
// $RAGCANARY_GITEA, and the assets the Makefile copies beside it. When
// either is missing, the error names the make target that builds them.
func binary() (bin, assets string, err error) {
	const build = "run 'make gitea-tools' at the repository root to build Gitea from Go modules"
	bin = os.Getenv("RAGCANARY_GITEA")
	if bin != "" {
		if _, err := os.Stat(bin); err != nil {
			return "", "", fmt.Errorf("$RAGCANARY_GITEA: %w", err)
		}
	} else {
		p, err := testutil.RepoBinary("gitea")
		switch {
		case err == nil:
			bin = p
		case p != "":
			return "", "", fmt.Errorf("%s not found: %s", p, build)
		default:
			return "", "", fmt.Errorf("%v: %s", err, build)
		}
	}
	assets = filepath.Join(filepath.Dir(bin), "gitea-assets")
	for _, sub := range []string{"options", "templates", "public"} {
		if _, err := os.Stat(filepath.Join(assets, sub)); err != nil {
			return "", "", fmt.Errorf("gitea's %s are not in %s: %s", sub, assets, build)
		}
	}
	return bin, assets, nil
}

// processUser is the user Gitea runs as: the test's own, or RunUser (made
// here when missing) when the test runs as root.
func processUser() (string, *syscall.Credential, error) {
	if os.Geteuid() != 0 {
		u, err := user.Current()
		if err != nil {
			return "", nil, err
		}
		return u.Username, nil, nil
	}
	u, err := user.Lookup(RunUser)
	if err != nil {
		// Another test may be adding it at the same moment: only the
		// lookup after useradd decides.
		out, addErr := exec.Command("useradd", "--system", "--user-group", "--no-create-home",
			"--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", RunUser).CombinedOutput()
		if u, err = user.Lookup(RunUser); err != nil {
			return "", nil, fmt.Errorf("gitea refuses to run as root and the user %s could not be made: %v: %s", RunUser, addErr, out)
		}
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return "", nil, err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return "", nil, err
	}
	return RunUser, &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}
