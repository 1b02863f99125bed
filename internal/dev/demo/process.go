// Package demo holds what the demos (hack/demo, hack/postgres-demo) share:
// starting the binaries they run in their own process groups with logs in a
// local folder, stopping them in order, and calling kubectl.
package demo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Step prints a demo step.
func Step(msg string) { fmt.Printf("==> %s\n", msg) }

// Abs is p made absolute, or p when that fails.
func Abs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}

// StartProcess runs a binary with its output in logDir/<name>.log, in its
// own process group so Ctrl-C reaches it only through the demo, in order.
// makeTarget names what builds it, for the message when it is missing.
func StartProcess(logDir, makeTarget, name, path string, args ...string) (*exec.Cmd, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%s not built (%s): run 'make %s', which builds it", name, path, makeTarget)
	}
	cmd := exec.Command(path, args...)
	logFile, err := os.Create(Abs(filepath.Join(logDir, name+".log")))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	fmt.Printf("    %s pid %d, log %s/%s.log\n", name, cmd.Process.Pid, logDir, name)
	return cmd, nil
}

// StopProcess sends SIGTERM and waits, bounded, before killing.
func StopProcess(name string, cmd *exec.Cmd) {
	Step("stopping " + name)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// Kubectl runs bin/kubectl against kubeconfig with stdin (may be empty); a
// demo being stopped is not an error.
func Kubectl(ctx context.Context, kubeconfig, stdin string, args ...string) error {
	cmd := exec.CommandContext(ctx, Abs("bin/kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	if err := cmd.Run(); err != nil && !errors.Is(ctx.Err(), context.Canceled) && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("kubectl %v: %w", args, err)
	}
	return nil
}

// WatchTable prints `kubectl get kinds` every refresh until ctx ends.
func WatchTable(ctx context.Context, kubeconfig string, refresh time.Duration, kinds string) {
	ticker := time.NewTicker(refresh)
	defer ticker.Stop()
	for {
		fmt.Printf("\n--- %s\n", time.Now().Format(time.TimeOnly))
		_ = Kubectl(ctx, kubeconfig, "", "get", kinds)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}
