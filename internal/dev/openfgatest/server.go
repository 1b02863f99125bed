// Package openfgatest starts a real OpenFGA (bin/openfga, built from Go
// modules by the Makefile's $(OPENFGA) target) for tests: in-memory or
// PostgreSQL datastore, every listener on loopback, playground, profiler,
// metrics and tracing off, preshared-key authentication, stopped when the
// test ends.
package openfgatest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/dev/testutil"
)

// Server is a running OpenFGA.
type Server struct {
	// URL is the HTTP API, http://127.0.0.1:PORT.
	URL string
	// Token is the preshared key every request sends as a bearer token.
	Token string

	proc *testutil.Process
}

// Options configure the server. Every cache is off unless asked for, as in
// OpenFGA itself.
type Options struct {
	CheckQueryCache          bool // --check-query-cache-enabled
	CheckIteratorCache       bool // --check-iterator-cache-enabled
	ListObjectsIteratorCache bool // --list-objects-iterator-cache-enabled
	CacheController          bool // --cache-controller-enabled
	// CacheTTL is the TTL of every cache enabled above and the cache
	// controller's interval; OpenFGA's 10s default when zero.
	CacheTTL time.Duration
	// CacheControllerTTL, when set, is the cache controller's interval
	// instead of CacheTTL: how often a request may make it read the
	// changelog.
	CacheControllerTTL time.Duration
	// DatastoreURI is a PostgreSQL URI (the schema is migrated before the
	// server starts); the in-memory datastore when empty.
	DatastoreURI string
	// SecondaryURI is a read replica of DatastoreURI
	// (--datastore-secondary-uri); only with DatastoreURI.
	SecondaryURI string
}

const (
	readyTimeout   = 30 * time.Second
	migrateTimeout = 2 * time.Minute
	requestTimeout = 5 * time.Second
)

// Start runs OpenFGA until t ends. It fails t, naming the make target, when
// the binary is missing: the tests need the real server.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	if opts.SecondaryURI != "" && opts.DatastoreURI == "" {
		t.Fatal("openfgatest: SecondaryURI needs DatastoreURI")
	}
	// A directory of its own: OpenFGA reads ./config.yaml and
	// $HOME/.openfga/config.yaml, which must not change what a test runs.
	home := t.TempDir()
	s := &Server{Token: testutil.RandomKey(t, "openfga-test-")}
	if opts.DatastoreURI != "" {
		migrate(t, bin, home, opts.DatastoreURI)
	}
	httpAddr, grpcAddr := "127.0.0.1:"+testutil.FreePort(t), "127.0.0.1:"+testutil.FreePort(t)
	s.URL = "http://" + httpAddr
	cmd := exec.Command(bin, runArgs(opts, httpAddr, grpcAddr)...)
	cmd.Dir = home
	cmd.Env = environment(home, secrets(s.Token, opts))
	s.proc = testutil.StartProcess(t, "openfga", cmd)
	s.waitReady(t)
	return s
}

// runArgs are the flags of `openfga run`. Secrets are not among them
// (they go by environment, see secrets): a command line is readable by
// every user of the machine.
func runArgs(opts Options, httpAddr, grpcAddr string) []string {
	engine := "memory"
	if opts.DatastoreURI != "" {
		engine = "postgres"
	}
	args := []string{"run",
		"--datastore-engine", engine,
		"--http-addr", httpAddr,
		"--grpc-addr", grpcAddr,
		"--authn-method", "preshared",
		// Nothing listens beyond the two API ports, nothing reports out.
		"--playground-enabled=false",
		"--metrics-enabled=false",
		"--datastore-metrics-enabled=false",
		"--profiler-enabled=false",
		"--trace-enabled=false",
		// Info logs every request; warnings and errors are what a failing
		// test needs.
		"--log-level", "warn",
	}
	controllerTTL := opts.CacheTTL
	if opts.CacheControllerTTL != 0 {
		controllerTTL = opts.CacheControllerTTL
	}
	caches := []struct {
		on         bool
		flag, ttls string
		ttl        time.Duration
	}{
		{opts.CheckQueryCache, "--check-query-cache-enabled", "--check-query-cache-ttl", opts.CacheTTL},
		{opts.CheckIteratorCache, "--check-iterator-cache-enabled", "--check-iterator-cache-ttl", opts.CacheTTL},
		{opts.ListObjectsIteratorCache, "--list-objects-iterator-cache-enabled", "--list-objects-iterator-cache-ttl", opts.CacheTTL},
		{opts.CacheController, "--cache-controller-enabled", "--cache-controller-ttl", controllerTTL},
	}
	for _, c := range caches {
		args = append(args, fmt.Sprintf("%s=%t", c.flag, c.on))
		if c.on && c.ttl != 0 {
			args = append(args, c.ttls, c.ttl.String())
		}
	}
	return args
}

// secrets are the key and the datastore URIs (which may hold passwords) as
// the environment variables OpenFGA binds to --authn-preshared-keys,
// --datastore-uri and --datastore-secondary-uri.
func secrets(token string, opts Options) []string {
	env := []string{"OPENFGA_AUTHN_PRESHARED_KEYS=" + token}
	if opts.DatastoreURI != "" {
		env = append(env, "OPENFGA_DATASTORE_URI="+opts.DatastoreURI)
	}
	if opts.SecondaryURI != "" {
		env = append(env, "OPENFGA_DATASTORE_SECONDARY_URI="+opts.SecondaryURI)
	}
	return env
}

// environment is the test's environment without any OPENFGA_* variable
// (each would set a flag left unset here), HOME moved to home, plus extra.
func environment(home string, extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "OPENFGA_") || strings.HasPrefix(kv, "HOME=") {
			continue
		}
		env = append(env, kv)
	}
	return append(append(env, "HOME="+home), extra...)
}

// migrate creates or upgrades OpenFGA's schema in the PostgreSQL database;
// `openfga run` refuses a database without it.
func migrate(t testing.TB, bin, home, uri string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), migrateTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "migrate", "--datastore-engine", "postgres", "--log-level", "warn")
	cmd.Dir = home
	cmd.Env = environment(home, []string{"OPENFGA_DATASTORE_URI=" + uri})
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("openfga migrate: %v\n%s", err, out)
	}
}

// waitReady waits until an authenticated GET /stores answers 200: the HTTP
// gateway, the gRPC server behind it and the datastore all serve.
func (s *Server) waitReady(t testing.TB) {
	t.Helper()
	testutil.Eventually(t, readyTimeout, "openfga serving", func() error {
		if s.proc.Exited() != nil { // waiting on would only hide the reason
			t.Fatal("openfga exited before serving (its log follows)")
		}
		status, body, err := s.do(http.MethodGet, "/stores", nil)
		if err != nil {
			return err
		}
		if status != http.StatusOK {
			return fmt.Errorf("GET /stores: %d %s", status, body)
		}
		return nil
	})
}

// NewStore creates a store named name and returns its id.
func (s *Server) NewStore(t testing.TB, name string) string {
	t.Helper()
	req, err := json.Marshal(map[string]string{"name": name})
	if err != nil {
		t.Fatal(err)
	}
	status, body, err := s.do(http.MethodPost, "/stores", req)
	if err != nil {
		t.Fatalf("creating store %q: %v", name, err)
	}
	if status != http.StatusCreated && status != http.StatusOK {
		t.Fatalf("creating store %q: %d %s", name, status, body)
	}
	var reply struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(body, &reply); err != nil || reply.ID == "" {
		t.Fatalf("creating store %q: no id in %s (%v)", name, body, err)
	}
	return reply.ID
}

// Log is what the server has printed so far.
func (s *Server) Log() string { return s.proc.Log.String() }

// maxReply bounds what a reply may put into a test's message.
const maxReply = 64 << 10

// do sends one authenticated request to the HTTP API. Errors name the
// request, never the token.
func (s *Server) do(method, path string, body []byte) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	reply, err := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: reading the reply: %w", method, path, err)
	}
	return resp.StatusCode, reply, nil
}

// binary finds bin/openfga above the working directory, or takes
// $RAGCANARY_OPENFGA. When it is missing, the error names the make target
// that builds it: the Makefile's targets are absolute paths ($(BIN) is).
func binary() (string, error) {
	const build = "run 'make %s' (or make tools) at the repository root to build OpenFGA from Go modules"
	if p := os.Getenv("RAGCANARY_OPENFGA"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("$RAGCANARY_OPENFGA: %w", err)
		}
		return p, nil
	}
	p, err := testutil.RepoBinary("openfga")
	switch {
	case err == nil:
		return p, nil
	case p != "":
		return "", fmt.Errorf("%s not found: "+build, p, p)
	default:
		return "", fmt.Errorf("%v: "+build, err, "bin/openfga")
	}
}
