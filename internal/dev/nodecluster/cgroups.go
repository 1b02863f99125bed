package nodecluster

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupMount is where the cgroup hierarchies are mounted: v1 ones in
// directories below it, cgroup2 below it ("unified", on a hybrid host) or
// at it.
const cgroupMount = "/sys/fs/cgroup"

// cgroupTree is one cluster's cgroup, made in every v1 hierarchy: the
// kubelet's cgroup root (Pods go under <root>/kubepods) and, beside it,
// "node" for the cluster's own processes, so teardown finds every process
// the cluster started — containerd's shims and the containers included — by
// reading the tree, and removes it. runc makes each container's cgroup in
// the cgroup2 hierarchy too, when one is mounted, so teardown reads and
// removes the tree there as well.
type cgroupTree struct{ Root string }

// hierarchy is one mounted cgroup hierarchy.
type hierarchy struct {
	Dir string
	// V2 is a cgroup2 hierarchy; the cluster makes its tree only in the v1
	// ones, runc adds to it here.
	V2 bool
}

func (h hierarchy) String() string {
	if h.V2 {
		return h.Dir + " (cgroup2)"
	}
	return h.Dir
}

// hierarchies are the mounted cgroup hierarchies (cpu, memory, pids, ...,
// name=systemd, and cgroup2), by directory.
func hierarchies() ([]hierarchy, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseHierarchies(f)
}

// v1Hierarchies are the directories of the v1 hierarchies, where the
// cluster makes its tree and joins its processes.
func v1Hierarchies() ([]string, error) {
	hs, err := hierarchies()
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, h := range hs {
		if !h.V2 {
			dirs = append(dirs, h.Dir)
		}
	}
	return dirs, nil
}

// parseHierarchies reads the cgroup hierarchies mounted at or below
// cgroupMount from a mountinfo file.
func parseHierarchies(r io.Reader) ([]hierarchy, error) {
	var out []hierarchy
	s := bufio.NewScanner(r)
	for s.Scan() {
		// mountinfo: ... mountpoint ... - fstype source options
		fields := strings.Fields(s.Text())
		sep := indexOf(fields, "-")
		if sep < 5 || sep+1 >= len(fields) {
			continue
		}
		mp, fstype := fields[4], fields[sep+1]
		switch {
		case fstype == "cgroup" && strings.HasPrefix(mp, cgroupMount+"/"):
			out = append(out, hierarchy{Dir: mp})
		case fstype == "cgroup2" && (mp == cgroupMount || strings.HasPrefix(mp, cgroupMount+"/")):
			out = append(out, hierarchy{Dir: mp, V2: true})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dir < out[j].Dir })
	return out, s.Err()
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
	dirs, err := v1Hierarchies()
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
	dirs, err := v1Hierarchies()
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
// them all; others, cgroup2 included, are read too in case it is not
// mounted).
func (t cgroupTree) pids() ([]int, error) {
	dirs, err := hierarchies()
	if err != nil {
		return nil, err
	}
	seen := map[int]bool{}
	for _, h := range dirs {
		root := filepath.Join(h.Dir, t.Root)
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

// remove deletes the tree, deepest first, in every hierarchy, cgroup2
// included (a cgroup2 cgroup with children cannot be removed either). It
// must run after killAll: a cgroup with a process cannot be removed.
func (t cgroupTree) remove() error {
	dirs, err := hierarchies()
	if err != nil {
		return err
	}
	var errs []error
	for _, h := range dirs {
		root := filepath.Join(h.Dir, t.Root)
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
func (t cgroupTree) exists() bool { return len(t.left()) > 0 }

// left lists the tree's root in every hierarchy that still has it.
func (t cgroupTree) left() []string {
	dirs, _ := hierarchies()
	var out []string
	for _, h := range dirs {
		if _, err := os.Stat(filepath.Join(h.Dir, t.Root)); err == nil {
			out = append(out, filepath.Join(h.Dir, t.Root))
		}
	}
	return out
}
