package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// Credentials the e2e ragtarget accepts.
const (
	sourceToken  = "e2e-source-token"
	aliceToken   = "e2e-alice-token"
	malloryToken = "e2e-mallory-token"
)

// startRagtarget serves the reference RAG service on loopback with a short
// ACL sync and an answer cache, like a production system with small lags.
func startRagtarget(ctx context.Context) (func(), error) {
	svc, err := ragtarget.New(ragtarget.Config{
		SourceToken:         sourceToken,
		Tokens:              map[string]string{aliceToken: "alice@example.com", malloryToken: "mallory@example.com"},
		ContentSyncInterval: 500 * time.Millisecond,
		ACLSyncInterval:     2 * time.Second,
		AnswerCacheTTL:      3 * time.Second,
	})
	if err != nil {
		return nil, err
	}
	svc.Start(ctx)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/", svc.Handler())
	mux.Handle(restartTargetPath+"/", http.StripPrefix(restartTargetPath, &env.restartTarget))
	mux.Handle(tailsTargetPath+"/", http.StripPrefix(tailsTargetPath, &tailsTarget))
	mux.Handle(streamTargetPath+"/", http.StripPrefix(streamTargetPath, &streamTarget))
	mux.Handle(lagTargetsPath+"/", http.StripPrefix(lagTargetsPath, &lagTargets))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	env.ragtargetURL = "http://" + l.Addr().String()
	return func() {
		_ = srv.Close()
		_ = svc.Close()
	}, nil
}

// restartTargetPath is where a test mounts its own ragtarget on the e2e
// target's listener: inside the manager's allowed target URLs, so the
// manager runs with the same arguments whatever a test serves there.
const restartTargetPath = "/restart"

// mount serves the handler a test set, and 404 while none is set.
type mount struct{ h atomic.Pointer[http.Handler] }

func (m *mount) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := m.h.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	http.NotFound(w, r)
}

// set serves h until the returned function is called.
func (m *mount) set(h http.Handler) (unset func()) {
	m.h.Store(&h)
	return func() { m.h.Store(nil) }
}

// managerProcess is the real manager binary. A test may SIGKILL it and start
// it again: it comes back with the same arguments, so on the same metrics
// and health addresses Prometheus and the other tests use.
type managerProcess struct {
	*process
	readyURL string
}

// startManager builds and runs the real manager binary against the cluster.
func startManager(tmp string) (*managerProcess, error) {
	bin := filepath.Join(tmp, "manager")
	build := exec.Command("go", "build", "-o", bin, "./cmd/manager")
	build.Dir = env.root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building manager: %v\n%s", err, out)
	}
	metricsAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	probeAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	p, err := startProcess(tmp, bin,
		"--kubeconfig", env.kubeconfig,
		"--metrics-bind-address", metricsAddr,
		"--health-probe-bind-address", probeAddr,
		"--allowed-target-urls", env.ragtargetURL)
	if err != nil {
		return nil, err
	}
	env.metricsURL = "https://" + metricsAddr + "/metrics"
	m := &managerProcess{process: p, readyURL: "http://" + probeAddr + "/readyz"}
	if err := waitHTTP(m.readyURL, 60*time.Second); err != nil {
		m.stop()
		return nil, fmt.Errorf("manager not ready: %w", err)
	}
	return m, nil
}

// restart starts a killed manager again and waits until it is ready.
func (m *managerProcess) restart() error {
	if m.running() {
		return fmt.Errorf("the manager is still running")
	}
	if err := m.start(); err != nil {
		return err
	}
	if err := waitHTTP(m.readyURL, 60*time.Second); err != nil {
		return fmt.Errorf("manager not ready after a restart: %w", err)
	}
	// Readiness is served apart from metrics: a test scraping right after
	// a restart needs the metrics listener too.
	return waitListening(env.metricsURL, 60*time.Second)
}

// waitListening waits until something accepts TCP connections at rawURL's
// host and port.
func waitListening(rawURL string, timeout time.Duration) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return err
	}
	return waitFor(timeout, setupPollInterval, u.Host+" listening", func() (bool, error) {
		conn, err := net.DialTimeout("tcp", u.Host, time.Second)
		if err != nil {
			return false, err
		}
		return true, conn.Close()
	})
}

// startPrometheus runs Debian's prometheus scraping the manager every
// second as the chart's ServiceMonitor does: over TLS without verifying the
// manager's self-signed certificate, with a ServiceAccount token the
// manager has the API server check.
func startPrometheus(tmp, tokenFile string) (func(), error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	metrics, err := url.Parse(env.metricsURL)
	if err != nil {
		return nil, err
	}
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: ragcanary
    scheme: https
    tls_config:
      insecure_skip_verify: true
    authorization:
      credentials_file: %q
    static_configs:
      - targets: [%q]
`, tokenFile, metrics.Host)
	cfgPath := filepath.Join(tmp, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		return nil, err
	}
	p, err := startProcess(tmp, prometheusBinary(),
		"--config.file="+cfgPath,
		"--storage.tsdb.path="+filepath.Join(tmp, "tsdb"),
		"--web.listen-address="+addr)
	if err != nil {
		return nil, err
	}
	env.prometheusURL = "http://" + addr
	if err := waitHTTP(env.prometheusURL+"/-/ready", 60*time.Second); err != nil {
		p.stop()
		return nil, fmt.Errorf("prometheus not ready: %w", err)
	}
	return p.stop, nil
}

// waitHTTP polls url until it answers 200 or the bounded timeout passes.
func waitHTTP(url string, timeout time.Duration) error {
	return waitFor(timeout, setupPollInterval, url+" answering 200", func() (bool, error) {
		resp, err := http.Get(url)
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false, fmt.Errorf("status %d", resp.StatusCode)
		}
		return true, nil
	})
}

// setupPollInterval spaces the setup's checks of a process it started:
// they are cheap, and every restart test waits on them.
const setupPollInterval = 50 * time.Millisecond
