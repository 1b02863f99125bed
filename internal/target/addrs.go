package target

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// AddressPolicy is what the door may connect to after a name is resolved.
// The allowlist is checked on names; a name a tenant controls (an
// in-cluster Service they can turn into an ExternalName, DNS that changes
// between the check and the dial) could still aim the operator at any
// address. The policy is enforced in the dialer of every connection the
// door opens (HTTP, PostgreSQL, gRPC), on the address actually dialled.
// The zero value permits every address (tests and the CLI, which run as
// their user).
type AddressPolicy struct {
	denied  []netip.Prefix
	allowed []netip.Prefix
}

// DefaultDeniedCIDRs are link-local ranges, where cloud metadata services
// answer, and the metadata addresses outside them.
var DefaultDeniedCIDRs = []string{
	"169.254.0.0/16",     // IPv4 link-local: AWS, GCP, Azure, OpenStack metadata at 169.254.169.254
	"fe80::/10",          // IPv6 link-local
	"fd00:ec2::254/128",  // AWS metadata over IPv6
	"100.100.100.200/32", // Alibaba Cloud metadata
}

var loopbackCIDRs = []string{"127.0.0.0/8", "::1/128"}

// ErrAddressDenied is returned by a dial the policy refuses.
var ErrAddressDenied = errors.New("the target's address is not allowed by the operator's address policy")

// AddressPolicyFromFlags reads --denied-target-cidrs and
// --allowed-target-cidrs (comma-separated; denied "" means the defaults,
// "none" denies nothing). Loopback is denied as well unless an allowlist
// entry names a loopback address or an allowed CIDR holds one: a manager
// Pod's own loopback serves its metrics and probes.
func AddressPolicyFromFlags(denied, allowed string, allow Allowlist) (AddressPolicy, error) {
	var p AddressPolicy
	deniedList := DefaultDeniedCIDRs
	switch d := strings.TrimSpace(denied); d {
	case "":
	case "none":
		deniedList = nil
	default:
		deniedList = splitList(d)
	}
	var err error
	if p.denied, err = parsePrefixes("--denied-target-cidrs", deniedList); err != nil {
		return AddressPolicy{}, err
	}
	if p.allowed, err = parsePrefixes("--allowed-target-cidrs", splitList(allowed)); err != nil {
		return AddressPolicy{}, err
	}
	if !allow.namesLoopback() && !p.allowsLoopback() {
		lo, _ := parsePrefixes("loopback", loopbackCIDRs)
		p.denied = append(p.denied, lo...)
	}
	return p, nil
}

func splitList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

func parsePrefixes(flag string, list []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(list))
	for _, e := range list {
		pfx, err := netip.ParsePrefix(e)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a CIDR (for example 10.0.0.0/8 or fd00::/8)", flag, e)
		}
		out = append(out, pfx.Masked())
	}
	return out, nil
}

func (p AddressPolicy) allowsLoopback() bool {
	for _, a := range p.allowed {
		if a.Addr().IsLoopback() {
			return true
		}
	}
	return false
}

// Permits reports whether the door may connect to ip: not in a denied
// range and, when allowed ranges are set, in one of them. Denied wins.
func (p AddressPolicy) Permits(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, d := range p.denied {
		if d.Contains(ip) {
			return false
		}
	}
	if len(p.allowed) == 0 {
		return true
	}
	for _, a := range p.allowed {
		if a.Contains(ip) {
			return true
		}
	}
	return false
}

// String lists the policy, for start-up logs.
func (p AddressPolicy) String() string {
	join := func(ps []netip.Prefix) string {
		s := make([]string, len(ps))
		for i, x := range ps {
			s[i] = x.String()
		}
		return strings.Join(s, ",")
	}
	return "denied=" + join(p.denied) + " allowed=" + join(p.allowed)
}

// control runs on every connection after resolution, with the address
// about to be dialled.
func (p AddressPolicy) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return ErrAddressDenied
	}
	if !p.Permits(ap.Addr()) {
		return ErrAddressDenied
	}
	return nil
}

// Dialer returns a dialer that refuses addresses the policy does not permit.
func (p AddressPolicy) Dialer() *net.Dialer {
	return &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: p.control}
}

// DialContext dials through Dialer; its shape fits pgx and gRPC.
func (p AddressPolicy) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return p.Dialer().DialContext(ctx, network, address)
}

// namesLoopback reports whether an allowlist entry's host is a loopback
// address literal (names are not resolved here: that is the point).
func (a Allowlist) namesLoopback() bool {
	for _, u := range a.prefixes {
		if ip, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil && ip.IsLoopback() {
			return true
		}
	}
	return false
}
