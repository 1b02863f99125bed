package localcluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ControllerManager describes the running kube-controller-manager.
type ControllerManager struct {
	// PID is its process ID.
	PID int
	// HealthzURL answers 200 once the controllers run.
	HealthzURL string
	// CAFile verifies its self-signed serving certificate.
	CAFile string
	// LogPath receives its output.
	LogPath string
	// StartupTime is how long it took from exec to healthy.
	StartupTime time.Duration
}

// kcmControllers are the controllers a cluster without nodes needs to
// behave like one for ragcanary: the garbage collector deletes objects whose
// owners are gone (a run's token Secret, a canary's runs), the namespace
// controller empties a deleting namespace (every namespaced resource it
// discovers, custom resources included) and then lets it go. Nothing here
// runs pods, so the token and service-account controllers are left out.
var kcmControllers = []string{"garbagecollector", "namespace"}

// kcmHealthChecks are the checks /healthz lists once each controller was
// built and started; before that /healthz may answer 200 with none.
var kcmHealthChecks = []string{"garbage-collector-controller", "namespace-controller"}

const (
	// kcmCertPair is the name kcm gives its self-signed serving pair in
	// --cert-dir.
	kcmCertPair = "kube-controller-manager"
	// kcmReadyTimeout bounds the wait for a healthy kcm on a loaded machine.
	kcmReadyTimeout = 90 * time.Second
	// kcmStopTimeout bounds the graceful stop before SIGKILL; kcm itself
	// gives its controllers kcmShutdown.
	kcmStopTimeout = 15 * time.Second
	kcmShutdown    = 5 * time.Second
	// kcmPortAttempts is how often a start is retried when the free port
	// found was taken before kcm bound it.
	kcmPortAttempts = 3
)

// kcmConfig is what one kcm start needs.
type kcmConfig struct {
	binary     string
	kubeconfig string
	certDir    string
	port       int
}

// controllerManagerArgs are kcm's flags: loopback only, no leader election,
// no cloud provider, controllers acting with kcm's own (admin) credential
// rather than per-controller service accounts, which need the token
// controller and a signing key.
func controllerManagerArgs(c kcmConfig) []string {
	return []string{
		"--kubeconfig=" + c.kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(c.port),
		"--cert-dir=" + c.certDir,
		"--controllers=" + strings.Join(kcmControllers, ","),
		"--use-service-account-credentials=false",
		"--leader-elect=false",
		"--controller-shutdown-timeout=" + kcmShutdown.String(),
	}
}

// kcmProcess is a started kube-controller-manager.
type kcmProcess struct {
	info ControllerManager
	pid  int
	done chan struct{} // closed once the process exited
}

// startControllerManager starts kcm and waits until it is healthy. It
// retries with another port when the one chosen was taken in between.
func startControllerManager(ctx context.Context, c kcmConfig, logPath string) (*kcmProcess, error) {
	var lastErr error
	for range kcmPortAttempts {
		port, err := freeLoopbackPort()
		if err != nil {
			return nil, err
		}
		c.port = port
		p, err := startKCMOnce(ctx, c, logPath)
		if err == nil {
			return p, nil
		}
		lastErr = err
		if !errors.Is(err, errPortTaken) {
			break
		}
	}
	return nil, lastErr
}

var errPortTaken = errors.New("kube-controller-manager's port was taken")

func startKCMOnce(ctx context.Context, c kcmConfig, logPath string) (*kcmProcess, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	began := time.Now()
	p, err := spawn(c.binary, controllerManagerArgs(c), logFile)
	if err != nil {
		return nil, err
	}
	p.info = ControllerManager{
		PID:        p.pid,
		HealthzURL: fmt.Sprintf("https://127.0.0.1:%d/healthz", c.port),
		CAFile:     filepath.Join(c.certDir, kcmCertPair+".crt"),
		LogPath:    logPath,
	}
	if err := p.waitHealthy(ctx); err != nil {
		p.stop()
		if logMentions(logPath, "address already in use") {
			return nil, errPortTaken
		}
		return nil, fmt.Errorf("kube-controller-manager did not become healthy: %w (log: %s)", err, logPath)
	}
	p.info.StartupTime = time.Since(began)
	return p, nil
}

// spawn starts the binary in its own process group, so a Ctrl-C meant for
// the parent does not cut kcm's shutdown short, with SIGKILL as its parent-
// death signal, so it never outlives a parent that was killed. The death
// signal fires when the starting OS thread exits, so the start happens on a
// locked thread that lives until the process has exited.
func spawn(binary string, args []string, out *os.File) (*kcmProcess, error) {
	started := make(chan error, 1)
	p := &kcmProcess{done: make(chan struct{})}
	go func() {
		runtime.LockOSThread()
		// Never unlocked: the thread ends with this goroutine, after the
		// child has exited.
		defer close(p.done)
		defer out.Close()
		cmd := exec.Command(binary, args...)
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			started <- fmt.Errorf("starting %s: %w", binary, err)
			return
		}
		p.pid = cmd.Process.Pid
		started <- nil
		_ = cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// waitHealthy polls /healthz until every controller's check passes, the
// process exits, or the bounded wait ends.
func (p *kcmProcess) waitHealthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, kcmReadyTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		select {
		case <-p.done:
			return errors.New("it exited")
		case <-ctx.Done():
			return fmt.Errorf("not within %s: %v", kcmReadyTimeout, last)
		case <-tick.C:
		}
		if last = CheckControllerManager(ctx, p.info.HealthzURL, p.info.CAFile); last == nil {
			return nil
		}
	}
}

// stop sends SIGTERM to kcm's process group and waits, bounded, then kills
// it. It returns once the process is gone; calling it again is harmless.
func (p *kcmProcess) stop() {
	if !p.running() {
		return
	}
	_ = syscall.Kill(-p.pid, syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(kcmStopTimeout):
	}
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	<-p.done
}

func (p *kcmProcess) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// CheckControllerManager asks kcm's /healthz, verifying its certificate
// with caFile, and returns nil only when it answers 200 listing every
// controller's check. hack/localcluster status uses it too.
func CheckControllerManager(ctx context.Context, healthzURL, caFile string) error {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return fmt.Errorf("serving certificate not written yet: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("no certificate in %s", caFile)
	}
	client := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
	}
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, healthzURL+"?verbose", nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthz answered %d: %s", resp.StatusCode, bytes.TrimSpace(body))
	}
	for _, check := range kcmHealthChecks {
		if !bytes.Contains(body, []byte("[+]"+check+" ok")) {
			return fmt.Errorf("healthz does not list %s yet", check)
		}
	}
	return nil
}

// freeLoopbackPort is a loopback port nobody listened on a moment ago. kcm
// has no way to report a port it chose itself (--secure-port=0 turns
// serving off), so the port is picked here and a lost race retried.
func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func logMentions(path, s string) bool {
	data, err := os.ReadFile(path)
	return err == nil && bytes.Contains(data, []byte(s))
}
