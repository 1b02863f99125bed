package nodecluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// mountsUnder are the mount points at or below dir, deepest first: the
// kubelet's bind mount of its root directory and the volumes it mounts for
// Pods, containerd's root filesystems, shm and the Pods' network namespace
// files (kept under containerd's state directory).
func mountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dir = filepath.Clean(dir)
	var out []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out, s.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &c); err == nil {
				b.WriteByte(c)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unmountAll detaches every mount under dir, repeating while some remain
// (a bind mount may be stacked several times).
func unmountAll(dir string) error {
	for range 10 {
		mps, err := mountsUnder(dir)
		if err != nil || len(mps) == 0 {
			return err
		}
		for _, mp := range mps {
			if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
				return fmt.Errorf("unmount %s: %w", mp, err)
			}
		}
	}
	mps, err := mountsUnder(dir)
	if err == nil && len(mps) > 0 {
		err = fmt.Errorf("still mounted under %s: %v", dir, mps)
	}
	return err
}

// containerLogLinks is where the kubelet links every container's log
// (fixed in the kubelet, not under its root directory).
const containerLogLinks = "/var/log/containers"

// removeLogLinks removes the kubelet's links that point into dir.
func removeLogLinks(dir string) error {
	entries, err := os.ReadDir(containerLogLinks)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		p := filepath.Join(containerLogLinks, e.Name())
		target, err := os.Readlink(p)
		if err != nil || !strings.HasPrefix(target, filepath.Clean(dir)+"/") {
			continue
		}
		if err := os.Remove(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// shimSocketDir is where containerd's runc shims bind their sockets,
// whatever containerd's state directory (fixed in containerd).
const shimSocketDir = "/run/containerd/s"

// shimSockets are the shim sockets bound inside the node's network
// namespace: the kernel lists a namespace's unix sockets in its
// /proc/net/unix, so these are the cluster's and no one else's.
func shimSockets(ctx context.Context, n Network) []string {
	if _, err := os.Stat(n.NamespacePath()); err != nil {
		return nil
	}
	out, err := n.output(ctx, "cat", "/proc/net/unix")
	if err != nil {
		return nil
	}
	var paths []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 8 && strings.HasPrefix(f[7], shimSocketDir+"/") {
			paths = append(paths, f[7])
		}
	}
	return paths
}

// removeShimSockets removes the sockets and then the directories
// containerd made for them, if nothing else is left in them.
func removeShimSockets(paths []string) error {
	var errs []error
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	for _, d := range []string{shimSocketDir, filepath.Dir(shimSocketDir)} {
		_ = syscall.Rmdir(d) // fails, as it should, when not empty
	}
	return errors.Join(errs...)
}
