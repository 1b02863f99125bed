// Package e2e runs ragcanary end to end on this machine: a real control plane
// (etcd, kube-apiserver and kube-controller-manager from bin/), the reference RAG target over HTTP, the
// manager binary, and a real Prometheus scraping it. The chart, the alert
// rules and the dashboard are checked against what the operator emits.
package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/localcluster"
)

// env is what TestMain started, shared by the tests.
var env struct {
	root          string // repository root
	kubeconfig    string
	client        client.Client
	ragtargetURL  string
	metricsURL    string
	prometheusURL string
	// manager is the operator process. Tests may kill and restart it; it
	// always comes back with the same arguments and addresses.
	manager *managerProcess
	// restartTarget serves, under ragtargetURL+restartTargetPath, the
	// ragtarget a test mounts there (restart_test.go).
	restartTarget mount
	// scraperTokenFile holds the token Prometheus scrapes metricsURL with
	// (scraper_test.go).
	scraperTokenFile string
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return fail(err)
	}
	env.root = root
	for _, tool := range []string{"bin/kube-apiserver", "bin/etcd", "bin/kube-controller-manager", "bin/helm", "bin/kubectl"} {
		if _, err := os.Stat(filepath.Join(root, tool)); err != nil {
			return fail(fmt.Errorf("%s is missing: run 'make test', which builds it", tool))
		}
	}
	if _, err := exec.LookPath(prometheusBinary()); err != nil {
		return fail(fmt.Errorf("prometheus not found: run 'make test', which installs Debian's prometheus package"))
	}
	tmp, err := os.MkdirTemp("", "ragcanary-e2e-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(tmp)

	cluster, err := localcluster.Start(localcluster.Options{
		BinDir: filepath.Join(root, "bin"), CRDDir: filepath.Join(root, "config", "crd", "bases"),
		Kubeconfig: filepath.Join(tmp, "kubeconfig"),
	})
	if err != nil {
		return fail(err)
	}
	defer cluster.Stop()
	env.kubeconfig = cluster.Kubeconfig

	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	if env.client, err = client.New(cluster.Config, client.Options{Scheme: scheme}); err != nil {
		return fail(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopTarget, err := startRagtarget(ctx)
	if err != nil {
		return fail(err)
	}
	defer stopTarget()

	if env.manager, err = startManager(tmp); err != nil {
		return fail(err)
	}
	// The current incarnation: a test may have killed and restarted it.
	defer func() { env.manager.stop() }()

	if env.scraperTokenFile, err = grantScraper(ctx, tmp); err != nil {
		return fail(err)
	}
	stopPrometheus, err := startPrometheus(tmp, env.scraperTokenFile)
	if err != nil {
		return fail(err)
	}
	defer stopPrometheus()

	return m.Run()
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, "e2e setup:", err)
	return 1
}

func prometheusBinary() string {
	if p := os.Getenv("PROMETHEUS"); p != "" {
		return p
	}
	return "prometheus"
}

// freeAddr returns a loopback address with a port nobody listens on.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// process is a child process whose output is appended to a log file, so a
// process started again after a kill keeps one log.
type process struct {
	name    string
	args    []string
	logPath string

	cmd  *exec.Cmd
	done chan struct{} // closed when the current incarnation exited
}

// startProcess runs a command with output to a log file in dir.
func startProcess(dir, name string, args ...string) (*process, error) {
	p := &process{name: name, args: args, logPath: filepath.Join(dir, filepath.Base(name)+".log")}
	if err := p.start(); err != nil {
		return nil, err
	}
	return p, nil
}

// start runs the command (again) with the same arguments.
func (p *process) start() error {
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.name, p.args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(done)
	}()
	p.cmd, p.done = cmd, done
	return nil
}

// running reports whether the current incarnation is alive.
func (p *process) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL, as an OOM kill or a node failure would: no shutdown
// code runs. It returns once the process is gone.
func (p *process) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop ends the process (SIGTERM, then SIGKILL after a bounded wait) and
// prints its log when RAGCANARY_E2E_LOGS is set.
func (p *process) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.kill()
	}
	if os.Getenv("RAGCANARY_E2E_LOGS") != "" {
		data, _ := os.ReadFile(p.logPath)
		fmt.Fprintf(os.Stderr, "--- %s log\n%s\n", p.name, data)
	}
}
