package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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
	srv := &http.Server{Handler: svc.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	env.ragtargetURL = "http://" + l.Addr().String()
	return func() {
		_ = srv.Close()
		_ = svc.Close()
	}, nil
}

// startManager builds and runs the real manager binary against the cluster.
func startManager(tmp string) (func(), error) {
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
	stop, err := startProcess(tmp, bin,
		"--kubeconfig", env.kubeconfig,
		"--metrics-bind-address", metricsAddr,
		"--health-probe-bind-address", probeAddr,
		"--allowed-target-urls", env.ragtargetURL)
	if err != nil {
		return nil, err
	}
	env.metricsURL = "http://" + metricsAddr + "/metrics"
	if err := waitHTTP("http://"+probeAddr+"/readyz", 60*time.Second); err != nil {
		stop()
		return nil, fmt.Errorf("manager not ready: %w", err)
	}
	return stop, nil
}

// startPrometheus runs Debian's prometheus scraping the manager every second.
func startPrometheus(tmp string) (func(), error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	metricsHost := env.metricsURL[len("http://") : len(env.metricsURL)-len("/metrics")]
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: ragcanary
    static_configs:
      - targets: [%q]
`, metricsHost)
	cfgPath := filepath.Join(tmp, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		return nil, err
	}
	stop, err := startProcess(tmp, prometheusBinary(),
		"--config.file="+cfgPath,
		"--storage.tsdb.path="+filepath.Join(tmp, "tsdb"),
		"--web.listen-address="+addr)
	if err != nil {
		return nil, err
	}
	env.prometheusURL = "http://" + addr
	if err := waitHTTP(env.prometheusURL+"/-/ready", 60*time.Second); err != nil {
		stop()
		return nil, fmt.Errorf("prometheus not ready: %w", err)
	}
	return stop, nil
}

// waitHTTP polls url until it answers 200 or the bounded timeout passes.
func waitHTTP(url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		last = err
		<-time.After(200 * time.Millisecond)
	}
	return fmt.Errorf("%s: %v", url, last)
}
