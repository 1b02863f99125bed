package nodecluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// process is one program the cluster runs.
type process struct {
	name string
	pid  int
	log  string
	done chan struct{}
}

// spawn starts binary inside the node's network namespace and the
// cluster's cgroup tree, in a session of its own (so it outlives a
// starting command such as hack/cluster up, and a Ctrl-C reaches only
// whoever tears it down), with its output in logs/<name>.log.
func (c *Cluster) spawn(name, binary string, args []string, env []string) (*process, error) {
	join, err := c.cgroups.joinScript()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.l.logs, 0o700); err != nil {
		return nil, err
	}
	logPath := filepath.Join(c.l.logs, name+".log")
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	script := join + `exec nsenter --net=` + c.Network.NamespacePath() + ` -- "$0" "$@"`
	cmd := exec.Command("sh", append([]string{"-c", script, binary}, args...)...)
	cmd.Env = append([]string{"PATH=" + c.opts.BinDir + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + c.l.dir}, env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Dir = c.l.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, pid: cmd.Process.Pid, log: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	c.procs[name] = p
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Logs are the cluster's log files by program.
func (c *Cluster) Logs() map[string]string {
	out := map[string]string{}
	for name, p := range c.procs {
		out[name] = p.log
	}
	return out
}

// LogPath is where program name writes, running or not.
func (c *Cluster) LogPath(name string) string { return filepath.Join(c.l.logs, name+".log") }
