// Package e2e runs ragcanary end to end on this machine: a real control plane
// (etcd + kube-apiserver from bin/), the reference RAG target over HTTP, the
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
	"github.com/ragcanary/ragcanary/internal/localcluster"
)

// env is what TestMain started, shared by the tests.
var env struct {
	root          string // repository root
	kubeconfig    string
	client        client.Client
	ragtargetURL  string
	metricsURL    string
	prometheusURL string
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
	for _, tool := range []string{"bin/kube-apiserver", "bin/etcd", "bin/helm", "bin/kubectl"} {
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

	stopManager, err := startManager(tmp)
	if err != nil {
		return fail(err)
	}
	defer stopManager()

	stopPrometheus, err := startPrometheus(tmp)
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

// startProcess runs a command with output to a log file in dir and returns
// a function that stops it (SIGTERM, then SIGKILL after a bounded wait).
func startProcess(dir, name string, args ...string) (func(), error) {
	logPath := filepath.Join(dir, filepath.Base(name)+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	return func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if os.Getenv("RAGCANARY_E2E_LOGS") != "" {
			data, _ := os.ReadFile(logPath)
			fmt.Fprintf(os.Stderr, "--- %s log\n%s\n", name, data)
		}
	}, nil
}
