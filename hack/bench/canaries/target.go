package main

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

// The ragtarget runs in a child process (this binary re-executed with
// --serve-ragtarget), so /proc/self measures the manager alone and not the
// target's index and HTTP server.

// Credentials of the benchmark's ragtarget. They only exist on loopback for
// the length of a run.
const (
	benchSourceToken  = "bench-source-token"
	benchAliceToken   = "bench-alice-token"
	benchMalloryToken = "bench-mallory-token"
)

// syncPath makes the child run one content and one ACL sync. Its own sync
// schedules are an hour long: the one sync the benchmark asks for makes every
// granted canary visible at once, and every revocation sent after it stays
// unapplied, so runs stay in AwaitingExclusion, probing.
const syncPath = "/bench/sync"

// serveRagtarget is the child: it serves the ragtarget on a loopback port,
// prints the base URL on stdout, and exits when stdin closes (the parent
// ended, however it ended).
func serveRagtarget() error {
	svc, err := ragtarget.New(ragtarget.Config{
		SourceToken:         benchSourceToken,
		Tokens:              map[string]string{benchAliceToken: "alice@example.com", benchMalloryToken: "mallory@example.com"},
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

	mux := http.NewServeMux()
	mux.Handle("/", svc.Handler())
	mux.HandleFunc("POST "+syncPath, func(w http.ResponseWriter, _ *http.Request) {
		for _, kind := range []ragtarget.SyncKind{ragtarget.SyncContent, ragtarget.SyncACL} {
			if err := svc.SyncNow(kind); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		w.WriteHeader(http.StatusNoContent)
	})
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

// targetProcess is the running child.
type targetProcess struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	url   string
}

// startTarget re-executes this binary as the ragtarget child and waits for
// its URL. The child is killed with the parent (Pdeathsig) as a last resort.
func startTarget() (*targetProcess, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "--serve-ragtarget")
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
	p := &targetProcess{cmd: cmd, stdin: stdin}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		p.stop()
		return nil, fmt.Errorf("ragtarget child did not report its address: %w", err)
	}
	p.url = strings.TrimSpace(line)
	return p, nil
}

// sync asks the child for one content and ACL sync.
func (p *targetProcess) sync(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url+syncPath, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("sync: HTTP %d", resp.StatusCode)
	}
	return nil
}

// stop closes the child's stdin, which ends it, and kills it if it lingers.
func (p *targetProcess) stop() {
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

// targetSet is every ragtarget child of a run; corpora are spread over them.
type targetSet []*targetProcess

// startTargets starts n children; on an error none is left running.
func startTargets(n int) (targetSet, error) {
	var set targetSet
	for range n {
		p, err := startTarget()
		if err != nil {
			set.stop()
			return nil, err
		}
		set = append(set, p)
	}
	return set, nil
}

func (s targetSet) urls() []string {
	out := make([]string, len(s))
	for i, p := range s {
		out[i] = p.url
	}
	return out
}

// sync syncs every child once.
func (s targetSet) sync(ctx context.Context) error {
	for _, p := range s {
		if err := p.sync(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (s targetSet) stop() {
	for _, p := range s {
		p.stop()
	}
}
