package nodecluster

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// hybridMountinfo is a host with v1 controllers and the cgroup2 "unified"
// hierarchy beside them, where runc makes every container's cgroup too;
// one line carries the optional fields systemd hosts have before "-".
const hybridMountinfo = `22 1 0:20 / /sys rw,relatime - sysfs sysfs rw
30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 30 0:30 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
38 30 0:35 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
39 30 0:36 / /sys/fs/cgroup/systemd rw,relatime shared:9 - cgroup cgroup rw,xattr,name=systemd
40 30 0:37 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate
41 1 0:38 / /run/elsewhere rw,relatime - cgroup2 cgroup2 rw
`

// pureV2Mountinfo is a host with only the cgroup2 hierarchy.
const pureV2Mountinfo = `22 1 0:20 / /sys rw,relatime - sysfs sysfs rw
30 22 0:27 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`

func TestHierarchiesIncludeCgroup2(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mountinfo string
		// want is every hierarchy teardown reads, cgroup2 ones marked.
		want []string
	}{
		{"hybrid", hybridMountinfo, []string{
			"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpuset", "/sys/fs/cgroup/pids",
			"/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified (cgroup2)"}},
		{"pure cgroup2", pureV2Mountinfo, []string{"/sys/fs/cgroup (cgroup2)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs, err := parseHierarchies(strings.NewReader(tc.mountinfo))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range hs {
				got = append(got, fmt.Sprint(h))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("hierarchies %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRemoveLeavesNoCgroupInAnyHierarchy makes a cluster-shaped cgroup
// tree (kubepods down to a container, and node) in every hierarchy this
// machine mounts, cgroup2 included, and checks that Leftovers names it in
// each, that remove deletes it everywhere, and that Leftovers is then
// empty. It needs root, as teardown does.
func TestRemoveLeavesNoCgroupInAnyHierarchy(t *testing.T) {
	mounted := machineHierarchies(t)
	id := fmt.Sprintf("test-%d", os.Getpid())
	tree := cgroupTree{Root: "ragcanary-" + id}
	leaves := []string{"kubepods/burstable/pod0123/ctr0", "kubepods/besteffort", "node"}
	t.Cleanup(func() { rmdirTree(t, mounted, tree.Root) })
	for _, h := range mounted {
		for _, leaf := range leaves {
			dir := filepath.Join(h, tree.Root, leaf)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatalf("making the cgroup %s (the test runs as uid %d; teardown needs root too): %v", dir, os.Getuid(), err)
			}
		}
	}
	s := State{ID: id, Block: 250, Dir: filepath.Join(t.TempDir(), "cluster")}
	before := strings.Join(Leftovers(s), "; ")
	for _, h := range mounted {
		if !strings.Contains(before, filepath.Join(h, tree.Root)) {
			t.Errorf("Leftovers does not name the cgroup in %s: %q", h, before)
		}
	}
	if err := tree.remove(); err != nil {
		t.Errorf("remove: %v", err)
	}
	for _, h := range mounted {
		if _, err := os.Stat(filepath.Join(h, tree.Root)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is left after remove (stat: %v)", filepath.Join(h, tree.Root), err)
		}
	}
	if left := Leftovers(s); len(left) > 0 {
		t.Errorf("Leftovers after remove: %q", left)
	}
}

// machineHierarchies reads, independently of the code under test, every
// cgroup (v1) and cgroup2 hierarchy mounted under /sys/fs/cgroup, and
// fails when there is none: the test is about this machine's cgroups.
func machineHierarchies(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	v2 := false
	s := bufio.NewScanner(f)
	for s.Scan() {
		head, tail, ok := strings.Cut(s.Text(), " - ")
		fields, fstype := strings.Fields(head), strings.Fields(tail)
		if !ok || len(fields) < 5 || len(fstype) == 0 {
			continue
		}
		mp := fields[4]
		if (fstype[0] == "cgroup" || fstype[0] == "cgroup2") && (mp == cgroupMount || strings.HasPrefix(mp, cgroupMount+"/")) {
			out = append(out, mp)
			v2 = v2 || fstype[0] == "cgroup2"
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no cgroup hierarchy is mounted under %s on this machine", cgroupMount)
	}
	t.Logf("hierarchies %v (cgroup2 mounted: %v)", out, v2)
	return out
}

// rmdirTree removes what is left of root in every hierarchy, deepest
// first, so a failed test leaves nothing behind.
func rmdirTree(t *testing.T, hierarchies []string, root string) {
	for _, h := range hierarchies {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(h, root), func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		slices.Reverse(dirs)
		for _, d := range dirs {
			if err := syscall.Rmdir(d); err != nil {
				t.Errorf("cleaning up %s: %v", d, err)
			}
		}
	}
}
