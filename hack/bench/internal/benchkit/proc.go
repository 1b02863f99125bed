package benchkit

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ProcSample is one process's (or a group's) resource use.
type ProcSample struct {
	CPU time.Duration // user + system
	RSS int64         // bytes
}

// RSSOf reads VmRSS of pid ("self" for this process); 0 when it is gone.
func RSSOf(pid string) int64 {
	kb, _ := StatusKB(pid, "VmRSS:")
	return kb * 1024
}

// StatusKB reads a kB field of /proc/<pid>/status (field with its colon);
// ok is false when the process or the field is gone.
func StatusKB(pid, field string) (kb int64, ok bool) {
	f, err := os.Open(filepath.Join("/proc", pid, "status"))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, found := strings.CutPrefix(s.Text(), field); found {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb, err == nil
		}
	}
	return 0, false
}

// clockTick is USER_HZ, the unit of /proc/<pid>/stat times; 100 on Linux.
const clockTick = 100

// ChildProc is one direct child of this process.
type ChildProc struct {
	PID, Name  string
	utime, stm int64
}

// CPU is the child's user and system time so far.
func (c ChildProc) CPU() time.Duration { return time.Duration(c.utime+c.stm) * time.Second / clockTick }

// statOf reads a process's command name, parent and CPU times.
func statOf(pid string) (c ChildProc, ppid string, err error) {
	data, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return ChildProc{}, "", err
	}
	// pid (comm) state ppid ... utime(14) stime(15)
	s := string(data)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < 0 {
		return ChildProc{}, "", fmt.Errorf("/proc/%s/stat: unexpected format", pid)
	}
	fields := strings.Fields(s[closing+1:])
	if len(fields) < 13 {
		return ChildProc{}, "", fmt.Errorf("/proc/%s/stat: too few fields", pid)
	}
	c = ChildProc{PID: pid, Name: s[open+1 : closing]}
	c.utime, _ = strconv.ParseInt(fields[11], 10, 64)
	c.stm, _ = strconv.ParseInt(fields[12], 10, 64)
	return c, fields[1], nil
}

// ProcCPU is a process's CPU time so far.
func ProcCPU(pid int) (time.Duration, error) {
	c, _, err := statOf(strconv.Itoa(pid))
	if err != nil {
		return 0, err
	}
	return c.CPU(), nil
}

// DirectChildren lists this process's direct children (etcd,
// kube-apiserver, kube-controller-manager, the ragtargets) by command name.
// A ragtarget child is this binary, named "ragtarget (child)".
func DirectChildren() []ChildProc {
	self := strconv.Itoa(os.Getpid())
	selfComm, _ := os.ReadFile("/proc/self/comm")
	entries, _ := os.ReadDir("/proc")
	var out []ChildProc
	for _, e := range entries {
		pid := e.Name()
		if _, err := strconv.Atoi(pid); err != nil {
			continue
		}
		c, ppid, err := statOf(pid)
		if err != nil || ppid != self {
			continue
		}
		if c.Name == strings.TrimSpace(string(selfComm)) {
			c.Name = "ragtarget (child)"
		}
		out = append(out, c)
	}
	return out
}

// Children samples the direct children's CPU and RSS by command name.
func Children() map[string]ProcSample {
	out := map[string]ProcSample{}
	for _, c := range DirectChildren() {
		prev := out[c.Name]
		out[c.Name] = ProcSample{CPU: prev.CPU + c.CPU(), RSS: prev.RSS + RSSOf(c.PID)}
	}
	return out
}

// ReniceChildren sets the nice value of every thread of every direct
// child: on Linux a nice value belongs to a thread, and threads a Go
// process starts later inherit it from the thread that starts them.
func ReniceChildren(nice int) error {
	for _, c := range DirectChildren() {
		tasks, err := os.ReadDir(filepath.Join("/proc", c.PID, "task"))
		if err != nil {
			continue // exited
		}
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("renice %s (thread %d): %w", c.Name, tid, err)
			}
		}
	}
	return nil
}

// MachineCPU reads the busy and total jiffies of all CPUs from /proc/stat,
// so a report can show how loaded the machine was (other work included).
func MachineCPU() (busy, total uint64) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0, 0
	}
	for i, f := range fields[1:] {
		v, _ := strconv.ParseUint(f, 10, 64)
		total += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, total
}

// MiB is bytes in MiB.
func MiB(b int64) float64 { return float64(b) / (1 << 20) }
