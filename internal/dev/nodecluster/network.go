package nodecluster

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Network is where one cluster's addresses live. The node is a network
// namespace of its own: every server of the cluster binds inside it, its
// iptables chains (kubelet's, kube-proxy's) are its own and go with it, and
// it has no default route, so nothing in it reaches past this machine. The
// host reaches it only through a veth pair on a /30 and a route to the
// Service range (for a scraper outside the cluster, through kube-proxy).
type Network struct {
	// Namespace is the node's network namespace (ip netns).
	Namespace string
	// HostLink is the veth end on the host; the node's end is eth0.
	HostLink string
	// HostIP and NodeIP are the two ends of the /30.
	HostIP, NodeIP net.IP
	// PodCIDR is the Pods' subnet on the node's bridge, Gateway its first
	// address (the bridge's).
	PodCIDR *net.IPNet
	Gateway net.IP
	// ServiceCIDR holds the ClusterIPs; APIServiceIP is the kubernetes
	// Service's.
	ServiceCIDR  *net.IPNet
	APIServiceIP net.IP
	// Bridge is the Pods' bridge inside the node.
	Bridge string
}

// NewNetwork lays out the addresses of cluster id from block, the second
// octet of three consecutive 10.x.0.0/16 ranges: the link, the Pods and the
// Services.
func NewNetwork(id string, block int) (Network, error) {
	if block < 1 || block > 250 {
		return Network{}, fmt.Errorf("address block %d: want 1..250", block)
	}
	cidr := func(s string) *net.IPNet { _, n, _ := net.ParseCIDR(s); return n }
	return Network{
		Namespace:    "ragcanary-" + id,
		HostLink:     "rc-" + id,
		HostIP:       net.IPv4(10, byte(block), 0, 1).To4(),
		NodeIP:       net.IPv4(10, byte(block), 0, 2).To4(),
		PodCIDR:      cidr(fmt.Sprintf("10.%d.0.0/24", block+1)),
		Gateway:      net.IPv4(10, byte(block+1), 0, 1).To4(),
		ServiceCIDR:  cidr(fmt.Sprintf("10.%d.0.0/24", block+2)),
		APIServiceIP: net.IPv4(10, byte(block+2), 0, 1).To4(),
		Bridge:       "rcbr0",
	}, nil
}

// NamespacePath is the namespace's file, as nsenter --net takes it.
func (n Network) NamespacePath() string { return filepath.Join("/run/netns", n.Namespace) }

// LinkCIDR is the /30 between host and node.
func (n Network) LinkCIDR() string {
	return (&net.IPNet{IP: n.HostIP.Mask(net.CIDRMask(30, 32)), Mask: net.CIDRMask(30, 32)}).String()
}

// up creates the namespace, the veth pair, the addresses, the host's route
// to the Services and the node's forwarding settings.
func (n Network) up(ctx context.Context) error {
	if _, err := os.Stat(n.NamespacePath()); err == nil {
		return fmt.Errorf("network namespace %s exists: another cluster is running, or one was not torn down (run its down command)", n.Namespace)
	}
	steps := [][]string{
		{"ip", "netns", "add", n.Namespace},
		{"ip", "link", "add", n.HostLink, "type", "veth", "peer", "name", "eth0", "netns", n.Namespace},
		{"ip", "addr", "add", n.HostIP.String() + "/30", "dev", n.HostLink},
		{"ip", "link", "set", n.HostLink, "up"},
		{"ip", "-n", n.Namespace, "link", "set", "lo", "up"},
		{"ip", "-n", n.Namespace, "addr", "add", n.NodeIP.String() + "/30", "dev", "eth0"},
		{"ip", "-n", n.Namespace, "link", "set", "eth0", "up"},
		{"ip", "route", "add", n.ServiceCIDR.String(), "via", n.NodeIP.String(), "dev", n.HostLink},
	}
	for _, s := range steps {
		if err := run(ctx, s...); err != nil {
			return err
		}
	}
	// Forwarding between the bridge and eth0, and iptables on bridged
	// frames, so a Pod reaching a Service backed by a Pod on the same
	// bridge gets its reply translated back.
	return n.exec(ctx, "sh", "-c",
		"echo 1 > /proc/sys/net/ipv4/ip_forward && echo 1 > /proc/sys/net/bridge/bridge-nf-call-iptables")
}

// down removes the host's end of the veth pair (and with it the node's
// eth0) and then the namespace (and with it the bridge, the Pods' links and
// every iptables chain made inside). The host's end goes first because a
// namespace's devices are destroyed asynchronously after "ip netns del": the
// host's end would vanish at a moment of the kernel's choosing, racing a
// delete of our own (CI saw "Cannot find device"). Missing pieces are not
// errors: down must finish a half-made or half-removed network.
func (n Network) down(ctx context.Context) error {
	var errs []string
	if err := n.deleteHostLink(ctx); err != nil {
		errs = append(errs, err.Error())
	}
	if _, err := os.Stat(n.NamespacePath()); err == nil {
		if err := run(ctx, "ip", "netns", "del", n.Namespace); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("network %s: %s", n.Namespace, strings.Join(errs, "; "))
	}
	return nil
}

// deleteHostLink deletes the host's end if it exists. A delete that fails
// because the link is gone by then (someone else removed it in between)
// has still reached what down wants.
func (n Network) deleteHostLink(ctx context.Context) error {
	if !n.hostLinkExists() {
		return nil
	}
	err := run(ctx, "ip", "link", "del", n.HostLink)
	if err != nil && !n.hostLinkExists() {
		return nil
	}
	return err
}

func (n Network) hostLinkExists() bool {
	_, err := os.Stat(filepath.Join("/sys/class/net", n.HostLink))
	return err == nil
}

// exec runs a command inside the node's network namespace.
func (n Network) exec(ctx context.Context, args ...string) error {
	return run(ctx, append([]string{"nsenter", "--net=" + n.NamespacePath(), "--"}, args...)...)
}

// output runs a command inside the node's network namespace and returns
// what it printed.
func (n Network) output(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + n.NamespacePath(), "--"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return out, nil
}

func run(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}
