package testutil

import (
	"fmt"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// processStopTimeout is how long a stopped server gets to exit on SIGTERM
// before its process group is killed.
const processStopTimeout = 10 * time.Second

// Process is a server a test started: in a process group of its own,
// killed if the test binary dies, stopped when the test ends.
type Process struct {
	// Log is what it wrote to stdout and stderr.
	Log  *LockedBuffer
	name string
	done chan struct{}
}

// StartProcess starts cmd, its output going to the returned Log, until t
// ends: then SIGTERM to its process group, SIGKILL after 10 s, and its log
// shown when t failed. name names it in messages.
func StartProcess(t testing.TB, name string, cmd *exec.Cmd) *Process {
	t.Helper()
	p := &Process{Log: &LockedBuffer{}, name: name, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.Log, p.Log
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid, cmd.SysProcAttr.Pdeathsig = true, syscall.SIGKILL
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(processStopTimeout):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s log:\n%s", name, p.Log.String())
		}
	})
	return p
}

// Exited is an error naming the log when the process has ended, for a
// readiness wait that must not outlive it; nil while it runs.
func (p *Process) Exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s exited: %s", p.name, p.Log.String())
	default:
		return nil
	}
}
