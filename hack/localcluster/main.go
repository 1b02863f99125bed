// Command localcluster starts and stops a local Kubernetes control plane
// (etcd, kube-apiserver and kube-controller-manager from bin/) with the
// ragcanary CRDs installed.
//
//	go run ./hack/localcluster up      # foreground; Ctrl-C stops it
//	go run ./hack/localcluster down    # stops one started elsewhere
//	go run ./hack/localcluster status  # each part and its health
//
// The admin kubeconfig is written to .local/kubeconfig.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ragcanary/ragcanary/internal/dev/localcluster"
)

const (
	stateDir   = ".local"
	pidFile    = ".local/localcluster.pid"
	stateFile  = ".local/localcluster.json"
	kubeconfig = ".local/kubeconfig"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: localcluster up|down|status")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "up":
		err = up()
	case "down":
		err = down()
	case "status":
		err = status()
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q; usage: localcluster up|down|status\n", os.Args[1])
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "localcluster:", err)
		os.Exit(1)
	}
}

func up() error {
	if pid, ok := runningPID(); ok {
		return fmt.Errorf("already running (pid %d); run 'localcluster down' first", pid)
	}
	cluster, err := localcluster.Start(localcluster.Options{
		BinDir:     abs("bin"),
		CRDDir:     abs("config/crd/bases"),
		Kubeconfig: abs(kubeconfig),
	})
	if err != nil {
		return err
	}
	if err := localcluster.WriteState(stateFile, cluster.State(os.Getpid())); err != nil {
		_ = cluster.Stop()
		return err
	}
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		_ = cluster.Stop()
		return err
	}
	kcm := cluster.ControllerManager
	fmt.Printf("control plane up at %s\nkube-controller-manager: pid %d, healthy after %s, log %s\nkubeconfig: %s\ntry: kubectl --kubeconfig %s get crds\nCtrl-C (or 'localcluster down') stops it.\n",
		cluster.Config.Host, kcm.PID, kcm.StartupTime.Round(time.Millisecond), kcm.LogPath, abs(kubeconfig), kubeconfig)

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
	fmt.Println("stopping control plane")
	err = cluster.Stop()
	_ = os.Remove(pidFile)
	_ = os.Remove(stateFile)
	return err
}

// down signals a running 'up' and waits, bounded, for it to exit.
func down() error {
	pid, ok := runningPID()
	if !ok {
		fmt.Println("not running")
		_ = os.Remove(pidFile)
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("signalling pid %d: %w", pid, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			fmt.Println("stopped")
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("pid %d did not stop within 30s", pid)
}

// status prints each part; it fails when a part of a running cluster is
// unhealthy.
func status() error {
	pid, ok := runningPID()
	if !ok {
		fmt.Println("not running")
		return nil
	}
	fmt.Printf("running (pid %d), kubeconfig %s\n", pid, abs(kubeconfig))
	st, err := localcluster.ReadState(stateFile)
	if err != nil {
		return fmt.Errorf("reading the cluster's state: %w", err)
	}
	fmt.Printf("kube-apiserver: %s\n", st.APIServer)
	kcm := st.ControllerManager
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := localcluster.CheckControllerManager(ctx, kcm.HealthzURL, kcm.CAFile); err != nil {
		fmt.Printf("kube-controller-manager: pid %d UNHEALTHY: %v (log %s)\n", kcm.PID, err, kcm.LogPath)
		return errors.New("kube-controller-manager is unhealthy")
	}
	fmt.Printf("kube-controller-manager: pid %d healthy at %s (started in %s, log %s)\n", kcm.PID, kcm.HealthzURL, kcm.StartupTime, kcm.LogPath)
	return nil
}

func runningPID() (int, bool) {
	data, err := os.ReadFile(pidFile)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || !alive(pid) {
		return 0, false
	}
	return pid, true
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func abs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}

func init() {
	_ = os.MkdirAll(stateDir, 0o700)
}
