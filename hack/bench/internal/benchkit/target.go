package benchkit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// The ragtarget runs in a child process (the benchmark's binary re-executed
// with ServeTargetFlag), so /proc/self measures the manager alone and not the
// target's index and HTTP server.

// ServeTargetFlag is the flag a benchmark binary registers and, when set,
// answers by calling ServeRagtarget instead of benchmarking.
const ServeTargetFlag = "serve-ragtarget"

// Credentials of the benchmark's ragtarget. They only exist on loopback for
// the length of a run.
const (
	SourceToken  = "bench-source-token"
	AliceToken   = "bench-alice-token"
	MalloryToken = "bench-mallory-token"
)

// syncPath makes the child run one content and one ACL sync. Its own sync
// schedules are an hour long: the one sync the benchmark asks for makes every
// granted canary visible at once, and every revocation sent after it stays
// unapplied, so runs stay in AwaitingExclusion, probing.
const syncPath = "/bench/sync"

// TargetHooks let a benchmark add to the child's HTTP server: Wrap wraps
// the ragtarget's own handler (to record its requests), Routes adds the
// benchmark's routes beside it. Either may be nil.
type TargetHooks struct {
	Wrap   func(http.Handler) http.Handler
	Routes func(*http.ServeMux)
}

// ServeRagtarget is the child: it serves the ragtarget on a loopback port,
// prints the base URL on stdout, and exits when stdin closes (the parent
// ended, however it ended).
func ServeRagtarget(hooks TargetHooks) error {
	svc, err := ragtarget.New(ragtarget.Config{
		SourceToken:         SourceToken,
		Tokens:              map[string]string{AliceToken: "alice@example.com", MalloryToken: "mallory@example.com"},
		ContentSyncInterval: time.Hour,
		ACLSyncInterval:     time.Hour,
		Logger:              slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc.Start(ctx)
	defer svc.Close()

	var handler http.Handler = svc.Handler()
	if hooks.Wrap != nil {
		handler = hooks.Wrap(handler)
	}
	mux := http.NewServeMux()
	mux.Handle("/", handler)
	mux.HandleFunc("POST "+syncPath, func(w http.ResponseWriter, _ *http.Request) {
		for _, kind := range []ragtarget.SyncKind{ragtarget.SyncContent, ragtarget.SyncACL} {
			if err := svc.SyncNow(kind); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		w.WriteHeader(http.StatusNoContent)
	})
	if hooks.Routes != nil {
		hooks.Routes(mux)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	fmt.Printf("http://%s\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent goes away
	// Probes may still be in flight: the benchmark is over, close at once.
	return srv.Close()
}

// Target is one running ragtarget child.
type Target struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	// URL is the child's base URL, http://127.0.0.1:port.
	URL string
}

// startTarget re-executes this binary as the ragtarget child and waits for
// its URL. The child is killed with the parent (Pdeathsig) as a last resort.
func startTarget() (*Target, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "--"+ServeTargetFlag)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Target{cmd: cmd, stdin: stdin}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		p.stop()
		return nil, fmt.Errorf("ragtarget child did not report its address: %w", err)
	}
	p.URL = strings.TrimSpace(line)
	return p, nil
}

// Do sends a request to the child's path and returns the reply, which the
// caller closes; a status other than want is an error.
func (p *Target) Do(ctx context.Context, method, path string, want int) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, p.URL+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != want {
		resp.Body.Close()
		return nil, fmt.Errorf("%s %s: HTTP %d", method, path, resp.StatusCode)
	}
	return resp, nil
}

// sync asks the child for one content and ACL sync.
func (p *Target) sync(ctx context.Context) error {
	resp, err := p.Do(ctx, http.MethodPost, syncPath, http.StatusNoContent)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// stop closes the child's stdin, which ends it, and kills it if it lingers.
func (p *Target) stop() {
	_ = p.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		if err := <-done; err != nil && !errors.Is(err, os.ErrProcessDone) {
			fmt.Fprintf(os.Stderr, "ragtarget child: %v\n", err)
		}
	}
}

// Targets is every ragtarget child of a run; corpora are spread over them.
type Targets []*Target

// StartTargets starts n children; on an error none is left running.
func StartTargets(n int) (Targets, error) {
	var set Targets
	for range n {
		p, err := startTarget()
		if err != nil {
			set.Stop()
			return nil, err
		}
		set = append(set, p)
	}
	return set, nil
}

// URLs are the children's base URLs.
func (s Targets) URLs() []string {
	out := make([]string, len(s))
	for i, p := range s {
		out[i] = p.URL
	}
	return out
}

// Sync syncs every child once.
func (s Targets) Sync(ctx context.Context) error {
	for _, p := range s {
		if err := p.sync(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Stop ends every child.
func (s Targets) Stop() {
	for _, p := range s {
		p.stop()
	}
}
