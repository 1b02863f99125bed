// Package nodecluster runs a real one-node Kubernetes cluster on this
// machine from parts built here: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, a kubelet on cgroup v1,
// kube-proxy in iptables mode, containerd with runc, the CNI bridge
// plugins, CoreDNS answering cluster names only, and a pause image built
// here. The node is a network namespace of its own (see Network); every
// process runs in the cluster's own cgroup tree (see cgroupTree), so Stop —
// or Down from another process, after a crash — finds and removes every
// process, container, mount, namespace, iptables chain, cgroup and file the
// cluster made. Images are imported, never pulled.
package nodecluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Options say what to run and where.
type Options struct {
	// ID names the namespace (ragcanary-<ID>), the host's link (rc-<ID>)
	// and the cgroup tree; at most 8 characters.
	ID string
	// Block is the second octet of the cluster's three 10.x.0.0 ranges
	// (see NewNetwork).
	Block int
	// Dir holds all the cluster's files; it is created, and removed by
	// Stop. Keep it short: containerd's sockets live in it.
	Dir string
	// BinDir holds the Kubernetes binaries, containerd, its shim, ctr,
	// coredns and cni/.
	BinDir string
	// Images are image archives (docker or OCI) imported into containerd's
	// k8s.io namespace before the kubelet starts; the pause image must be
	// among them.
	Images []string
	// NodeName is the Node's name (default "node").
	NodeName string
	// PauseImage is the sandbox image's name; an archive in Images must
	// hold it.
	PauseImage string
}

// Binaries are what Start runs from BinDir.
var Binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy",
	"containerd", "containerd-shim-runc-v2", "ctr", "coredns", "cni/bridge", "cni/host-local", "cni/loopback", "cni/portmap"}

// HostTools are what Start needs from the machine (Debian's runc,
// iptables and iproute2, util-linux's nsenter).
var HostTools = []string{"runc", "iptables", "ip", "nsenter"}

// layout is where every file of a cluster goes.
type layout struct {
	dir, pki, logs, etcdData                                  string
	caFile, adminKubeconfig                                   string
	containerdRoot, containerdState, containerdSocket         string
	registryConfig, cniConf, cniIPAM, kubeletRoot, resolvConf string
	podLogs, state                                            string
}

func newLayout(dir string) layout {
	j := func(p ...string) string { return filepath.Join(append([]string{dir}, p...)...) }
	return layout{
		dir: dir, pki: j("pki"), logs: j("logs"), etcdData: j("etcd"),
		caFile: j("pki", "ca.crt"), adminKubeconfig: j("kubeconfig"),
		containerdRoot: j("containerd", "root"), containerdState: j("containerd", "state"), containerdSocket: j("containerd", "sock"),
		registryConfig: j("containerd", "certs.d"), cniConf: j("cni", "net.d"), cniIPAM: j("cni", "ipam"),
		kubeletRoot: j("kubelet"), resolvConf: j("resolv.conf"), podLogs: j("pod-logs"), state: j("cluster.json"),
	}
}

// State is what Down needs to tear a cluster down from another process;
// Start writes it to Dir/cluster.json first of all.
type State struct {
	ID    string `json:"id"`
	Block int    `json:"block"`
	Dir   string `json:"dir"`
}

// Cluster is a running cluster.
type Cluster struct {
	opts    Options
	l       layout
	Network Network
	cgroups cgroupTree
	// Kubeconfig is the admin kubeconfig (system:masters).
	Kubeconfig string
	// Server is the API server's URL, reachable from the host.
	Server string
	// Started is when Start began; Ready when the node first was.
	Started, Ready time.Time
	procs          map[string]*process
}

func (o *Options) defaults() error {
	if o.NodeName == "" {
		o.NodeName = "node"
	}
	if o.ID == "" || len(o.ID) > 8 || strings.Trim(o.ID, "abcdefghijklmnopqrstuvwxyz0123456789") != "" {
		return fmt.Errorf("cluster ID %q: want 1-8 lowercase letters or digits", o.ID)
	}
	if o.PauseImage == "" {
		return errors.New("no pause image named")
	}
	if !filepath.IsAbs(o.Dir) {
		return fmt.Errorf("cluster directory %q must be absolute", o.Dir)
	}
	return nil
}

// Check reports the first missing binary or host tool, with what provides it.
func Check(binDir string) error {
	for _, b := range Binaries {
		if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
			return fmt.Errorf("%s not found in %s: run 'make cluster-tools'", b, binDir)
		}
	}
	for _, t := range HostTools {
		if _, err := exec.LookPath(t); err != nil {
			return fmt.Errorf("%s not found: run 'make cluster-tools' (installs Debian's runc, iptables)", t)
		}
	}
	if os.Geteuid() != 0 {
		return errors.New("the cluster needs root (network namespaces, cgroups, mounts)")
	}
	return nil
}

// Start brings the cluster up and returns once the API server answers and
// the node's runtime is running; WaitReady waits for the node. On an error
// everything made so far is torn down.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	if err := Check(opts.BinDir); err != nil {
		return nil, err
	}
	n, err := NewNetwork(opts.ID, opts.Block)
	if err != nil {
		return nil, err
	}
	c := &Cluster{opts: opts, l: newLayout(opts.Dir), Network: n, cgroups: cgroupTree{Root: "ragcanary-" + opts.ID},
		Started: time.Now(), procs: map[string]*process{}}
	c.Kubeconfig = c.l.adminKubeconfig
	c.Server = fmt.Sprintf("https://%s:%d", n.NodeIP, apiServerPort)
	if _, err := os.Stat(opts.Dir); err == nil {
		return nil, fmt.Errorf("%s exists: a cluster is running there or was not torn down (run its down command)", opts.Dir)
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, err
	}
	if err := c.saveState(); err != nil {
		_ = os.RemoveAll(opts.Dir)
		return nil, err
	}
	if err := c.start(ctx); err != nil {
		return nil, errors.Join(err, c.Stop(context.Background()))
	}
	return c, nil
}

func (c *Cluster) saveState() error {
	data, err := json.Marshal(State{ID: c.opts.ID, Block: c.opts.Block, Dir: c.opts.Dir})
	if err != nil {
		return err
	}
	return os.WriteFile(c.l.state, data, 0o600)
}

func (c *Cluster) start(ctx context.Context) error {
	if err := c.Network.up(ctx); err != nil {
		return err
	}
	if err := c.cgroups.create(); err != nil {
		return err
	}
	cfg, err := c.writeConfig()
	if err != nil {
		return err
	}
	if err := c.startControlPlane(ctx, cfg); err != nil {
		return err
	}
	if err := c.startRuntime(ctx); err != nil {
		return err
	}
	return c.startNode(ctx, cfg)
}

// Stop tears the cluster down; see Down.
func (c *Cluster) Stop(ctx context.Context) error {
	return Down(ctx, State{ID: c.opts.ID, Block: c.opts.Block, Dir: c.opts.Dir})
}

// Down removes everything the cluster of s made, whether or not it is
// running and whoever started it: every process in its cgroup tree (the
// cluster's own, containerd's shims, the containers), the mounts under its
// directory, the kubelet's log links, the network namespace and host link
// (and with them every iptables chain made inside), the cgroup tree and the
// directory. It is safe to run twice.
func Down(ctx context.Context, s State) error {
	n, err := NewNetwork(s.ID, s.Block)
	if err != nil {
		return err
	}
	cg := cgroupTree{Root: "ragcanary-" + s.ID}
	var errs []error
	// The shims' sockets are under a fixed /run/containerd/s, not the
	// state directory: read which are ours while the node's namespace,
	// where they are bound, still exists.
	sockets := shimSockets(ctx, n)
	if cg.exists() {
		errs = append(errs, cg.killAll(30*time.Second))
	}
	errs = append(errs, removeShimSockets(sockets))
	if s.Dir != "" {
		errs = append(errs, unmountAll(s.Dir), removeLogLinks(s.Dir))
	}
	errs = append(errs, n.down(ctx))
	if cg.exists() {
		errs = append(errs, cg.remove())
	}
	if s.Dir != "" {
		errs = append(errs, os.RemoveAll(s.Dir))
	}
	return errors.Join(errs...)
}

// Attach is the cluster of s, started by another process, for WaitReady
// and the accessors.
func Attach(s State) (*Cluster, error) {
	n, err := NewNetwork(s.ID, s.Block)
	if err != nil {
		return nil, err
	}
	l := newLayout(s.Dir)
	return &Cluster{opts: Options{ID: s.ID, Block: s.Block, Dir: s.Dir, NodeName: "node"}, l: l, Network: n,
		cgroups: cgroupTree{Root: "ragcanary-" + s.ID}, Kubeconfig: l.adminKubeconfig,
		Server: fmt.Sprintf("https://%s:%d", n.NodeIP, apiServerPort), procs: map[string]*process{}}, nil
}

// LoadState reads the state a cluster's Start wrote in dir.
func LoadState(dir string) (State, error) {
	data, err := os.ReadFile(newLayout(dir).state)
	if err != nil {
		return State{}, err
	}
	var s State
	if err := json.Unmarshal(data, &s); err != nil {
		return State{}, fmt.Errorf("%s: %w", newLayout(dir).state, err)
	}
	return s, nil
}

// Leftovers lists what a torn-down cluster of s would have left: its
// processes, mounts, namespace, host link, cgroups, log links and
// directory. Empty means Down did its job.
func Leftovers(s State) []string {
	var out []string
	n, err := NewNetwork(s.ID, s.Block)
	if err != nil {
		return []string{err.Error()}
	}
	cg := cgroupTree{Root: "ragcanary-" + s.ID}
	if left := cg.left(); len(left) > 0 {
		pids, _ := cg.pids()
		out = append(out, fmt.Sprintf("cgroup %s (processes %v)", strings.Join(left, ", "), pids))
	}
	if mps, _ := mountsUnder(s.Dir); len(mps) > 0 {
		out = append(out, fmt.Sprintf("mounts %v", mps))
	}
	if _, err := os.Stat(n.NamespacePath()); err == nil {
		out = append(out, "network namespace "+n.Namespace)
	}
	if _, err := os.Stat(filepath.Join("/sys/class/net", n.HostLink)); err == nil {
		out = append(out, "link "+n.HostLink)
	}
	if _, err := os.Stat(s.Dir); err == nil {
		out = append(out, "directory "+s.Dir)
	}
	entries, _ := os.ReadDir(containerLogLinks)
	for _, e := range entries {
		if t, err := os.Readlink(filepath.Join(containerLogLinks, e.Name())); err == nil && strings.HasPrefix(t, s.Dir+"/") {
			out = append(out, "log link "+e.Name())
		}
	}
	return out
}

// alive reports whether pid is a running (not zombie) process.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}
