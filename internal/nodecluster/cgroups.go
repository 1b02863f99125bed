package nodecluster

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupMount is where the cgroup v1 hierarchies are mounted.
const cgroupMount = "/sys/fs/cgroup"

// cgroupTree is one cluster's cgroup, made in every v1 hierarchy: the
// kubelet's cgroup root (Pods go under <root>/kubepods) and, beside it,
// "node" for the cluster's own processes, so teardown finds every process
// the cluster started — containerd's shims and the containers included — by
// reading the tree, and removes it.
type cgroupTree struct{ Root string }

// hierarchies are the mounted v1 hierarchies (cpu, memory, pids, ...,
// name=systemd), by directory.
func hierarchies() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var dirs []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		// mountinfo: ... mountpoint ... - fstype source options
		fields := strings.Fields(s.Text())
		sep := indexOf(fields, "-")
		if sep < 0 || sep+1 >= len(fields) || fields[sep+1] != "cgroup" {
			continue
		}
		if mp := fields[4]; strings.HasPrefix(mp, cgroupMount+"/") {
			dirs = append(dirs, mp)
		}
	}
	sort.Strings(dirs)
	return dirs, s.Err()
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// create makes <root> and <root>/node in every hierarchy. cpuset starts
// empty in a new cgroup, and no process may join it then, so it is copied
// from the parent.
func (t cgroupTree) create() error {
	dirs, err := hierarchies()
	if err != nil {
		return err
	}
	if len(dirs) == 0 {
		return errors.New("no cgroup v1 hierarchy is mounted under " + cgroupMount)
	}
	for _, h := range dirs {
		for _, rel := range []string{t.Root, filepath.Join(t.Root, "node")} {
			dir := filepath.Join(h, rel)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			if filepath.Base(h) == "cpuset" {
				for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
					v, err := os.ReadFile(filepath.Join(filepath.Dir(dir), f))
					if err != nil {
						return err
					}
					if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
						return fmt.Errorf("%s: %w", filepath.Join(dir, f), err)
					}
				}
			}
		}
	}
	return nil
}

// joinScript is the shell prefix that moves the starting shell into the
// node cgroup of every hierarchy before it execs the program, so even its
// first fork is inside the tree.
func (t cgroupTree) joinScript() (string, error) {
	dirs, err := hierarchies()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, h := range dirs {
		fmt.Fprintf(&b, "echo $$ > %s && ", filepath.Join(h, t.Root, "node", "cgroup.procs"))
	}
	return b.String(), nil
}

// pids are the processes anywhere in the tree (the pids hierarchy sees
// them all; others are read too in case it is not mounted).
func (t cgroupTree) pids() ([]int, error) {
	dirs, err := hierarchies()
	if err != nil {
		return nil, err
	}
	seen := map[int]bool{}
	for _, h := range dirs {
		root := filepath.Join(h, t.Root)
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return nil // removed meanwhile
			}
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil {
					seen[pid] = true
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	out := make([]int, 0, len(seen))
	for pid := range seen {
		out = append(out, pid)
	}
	sort.Ints(out)
	return out, nil
}

// killAll SIGKILLs every process in the tree until none is left, bounded:
// a process forking as it is killed shows up in the next reading.
func (t cgroupTree) killAll(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		pids, err := t.pids()
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s still holds processes %v after %s", t.Root, pids, timeout)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond) // let the kernel reap before re-reading
	}
}

// remove deletes the tree, deepest first, in every hierarchy. It must run
// after killAll: a cgroup with a process cannot be removed.
func (t cgroupTree) remove() error {
	dirs, err := hierarchies()
	if err != nil {
		return err
	}
	var errs []error
	for _, h := range dirs {
		root := filepath.Join(h, t.Root)
		var all []string
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				all = append(all, path)
			}
			return nil
		})
		sort.Slice(all, func(i, j int) bool { return len(all[i]) > len(all[j]) })
		for _, d := range all {
			if err := syscall.Rmdir(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("rmdir %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// exists reports whether any hierarchy still has the tree.
func (t cgroupTree) exists() bool {
	dirs, _ := hierarchies()
	for _, h := range dirs {
		if _, err := os.Stat(filepath.Join(h, t.Root)); err == nil {
			return true
		}
	}
	return false
}
