package testutil

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// MemCgroup is a cgroup v1 memory group a test runs processes in, so the
// kernel holds them to a memory limit and counts what they use as it would
// for a container.
type MemCgroup struct {
	dir string
}

// memCgroupRemoveTimeout bounds how long cleanup waits for the group's
// processes to die before removing it.
const memCgroupRemoveTimeout = 30 * time.Second

// NewMemCgroup creates a memory group with the given limit in bytes (0: no
// limit, so the group only counts), removed in t.Cleanup: any process
// still in it (only processes the test put there) is killed first, since
// the kernel keeps a group with processes. It is created below the test's
// own memory group rather than at the hierarchy's root, so whatever limits
// and accounting apply to the test apply to its children too.
func NewMemCgroup(t testing.TB, limit int64) *MemCgroup {
	t.Helper()
	parent, err := ownMemCgroupDir()
	if err != nil {
		t.Fatalf("memory cgroup: %v", err)
	}
	dir, err := os.MkdirTemp(parent, "ragcanary-test-")
	if err != nil {
		t.Fatalf("creating a memory cgroup below %s: %v", parent, err)
	}
	g := &MemCgroup{dir: dir}
	t.Cleanup(func() {
		if err := g.remove(); err != nil {
			t.Errorf("removing memory cgroup %s: %v", dir, err)
		}
	})
	if limit > 0 {
		if err := g.setLimit(limit); err != nil {
			t.Fatalf("memory cgroup %s: %v", dir, err)
		}
	}
	return g
}

// Dir is the group's directory in the cgroup file system.
func (g *MemCgroup) Dir() string { return g.dir }

// Command is name run with args inside the group from its first
// instruction: a shell writes its own pid to cgroup.procs and then execs
// name, so nothing name allocates is charged outside the group (moving a
// running process in leaves what it has charged behind). The pid of the
// returned command is name's.
func (g *MemCgroup) Command(name string, args ...string) *exec.Cmd {
	const join = `echo $$ > "$0" && exec "$@"`
	return exec.Command("/bin/sh", append([]string{"-c", join, g.file("cgroup.procs"), name}, args...)...)
}

// Add moves a running process into the group. Its memory charged so far
// stays with its old group.
func (g *MemCgroup) Add(pid int) error {
	return os.WriteFile(g.file("cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
}

// Procs are the pids of the processes in the group.
func (g *MemCgroup) Procs() ([]int, error) {
	data, err := os.ReadFile(g.file("cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("cgroup.procs: %q: %w", f, err)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// Limit is memory.limit_in_bytes.
func (g *MemCgroup) Limit() (int64, error) { return g.readInt("memory.limit_in_bytes") }

// Usage is memory.usage_in_bytes: the group's memory now, page cache
// included.
func (g *MemCgroup) Usage() (int64, error) { return g.readInt("memory.usage_in_bytes") }

// MaxUsage is memory.max_usage_in_bytes: the most the group has used.
func (g *MemCgroup) MaxUsage() (int64, error) { return g.readInt("memory.max_usage_in_bytes") }

// Failcnt is memory.failcnt: how often a charge hit the limit (the kernel
// then reclaimed, or failing that, killed).
func (g *MemCgroup) Failcnt() (int64, error) { return g.readInt("memory.failcnt") }

// OOMKills is the oom_kill counter of memory.oom_control: processes the
// kernel killed because the group was at its limit.
func (g *MemCgroup) OOMKills() (int64, error) {
	f, err := os.Open(g.file("memory.oom_control"))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "oom_kill "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	if err := s.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("memory.oom_control has no oom_kill counter (kernel before 4.13)")
}

// Stat is one counter of memory.stat, for example "rss" or "cache".
func (g *MemCgroup) Stat(name string) (int64, error) {
	data, err := os.ReadFile(g.file("memory.stat"))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("memory.stat has no %s", name)
}

func (g *MemCgroup) setLimit(limit int64) error {
	if err := os.WriteFile(g.file("memory.limit_in_bytes"), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		return fmt.Errorf("setting memory.limit_in_bytes: %w", err)
	}
	// No swapping out of the group's pages at its limit: it is reached and
	// counted (failcnt) or the process is killed, as in a container on a
	// node without swap. Limiting memory+swap instead would hide the
	// failures: a charge failing there is not counted in failcnt.
	if err := os.WriteFile(g.file("memory.swappiness"), []byte("0"), 0o644); err != nil {
		return fmt.Errorf("setting memory.swappiness: %w", err)
	}
	return nil
}

// remove kills whatever still runs in the group (only processes the test
// put there), waits until the group is empty and removes it. The kernel
// refuses to remove a group with processes in it.
func (g *MemCgroup) remove() error {
	deadline := time.Now().Add(memCgroupRemoveTimeout)
	for {
		pids, err := g.Procs()
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v still in the group after %s", pids, memCgroupRemoveTimeout)
		}
		<-time.After(PollInterval)
	}
	for {
		err := syscall.Rmdir(g.dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		// A process that just exited may still be leaving the group.
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return err
		}
		<-time.After(PollInterval)
	}
}

func (g *MemCgroup) file(name string) string { return filepath.Join(g.dir, name) }

func (g *MemCgroup) readInt(name string) (int64, error) {
	data, err := os.ReadFile(g.file(name))
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
}

// ownMemCgroupDir is the directory of this process's memory cgroup: its
// path in /proc/self/cgroup under the memory hierarchy's mount point.
func ownMemCgroupDir() (string, error) {
	mount, root, err := memCgroupMount()
	if err != nil {
		return "", err
	}
	path, err := ownMemCgroupPath()
	if err != nil {
		return "", err
	}
	// In a cgroup namespace or a bind mount the mount shows the hierarchy
	// from root down; the path is relative to the hierarchy's top.
	rel := path
	if root != "/" {
		if path != root && !strings.HasPrefix(path, root+"/") {
			return "", fmt.Errorf("this process's memory cgroup %s is outside the mounted part %s", path, root)
		}
		rel = strings.TrimPrefix(path, root)
	}
	dir := filepath.Join(mount, rel)
	if _, err := os.Stat(filepath.Join(dir, "memory.limit_in_bytes")); err != nil {
		return "", fmt.Errorf("not a cgroup v1 memory group: %w", err)
	}
	return dir, nil
}

// memCgroupMount finds the cgroup v1 mount holding the memory controller
// in /proc/self/mountinfo: its mount point and the hierarchy path it shows.
func memCgroupMount() (mount, root string, err error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(s.Text(), " - ")
		if !ok {
			continue
		}
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(tail) < 3 || tail[0] != "cgroup" {
			continue
		}
		for opt := range strings.SplitSeq(tail[2], ",") {
			if opt == "memory" {
				return unescapeMountinfo(fields[4]), unescapeMountinfo(fields[3]), nil
			}
		}
	}
	if err := s.Err(); err != nil {
		return "", "", err
	}
	return "", "", errors.New("no cgroup v1 memory hierarchy is mounted")
}

// ownMemCgroupPath is this process's path in the memory hierarchy, from
// /proc/self/cgroup ("id:controllers:path").
func ownMemCgroupPath() (string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(data)) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for c := range strings.SplitSeq(parts[1], ",") {
			if c == "memory" {
				return parts[2], nil
			}
		}
	}
	return "", errors.New("/proc/self/cgroup names no memory cgroup")
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
