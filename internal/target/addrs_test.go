package target

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/dev/pgtest"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/driver"
)

func mustAllowlist(t *testing.T, entries ...string) Allowlist {
	t.Helper()
	a, err := ParseAllowlist(entries)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func mustPolicy(t *testing.T, denied, allowed string, allow Allowlist) AddressPolicy {
	t.Helper()
	p, err := AddressPolicyFromFlags(denied, allowed, allow)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAddressPolicyFromFlags(t *testing.T) {
	byName := mustAllowlist(t, "http://rag.internal/")
	byLoopback := mustAllowlist(t, "http://127.0.0.1:9090/")
	for _, c := range []struct {
		name            string
		denied, allowed string
		allow           Allowlist
		addr            string
		permitted       bool
	}{
		// The defaults deny link-local and metadata addresses.
		{"metadata v4", "", "", byName, "169.254.169.254", false},
		{"link-local v6", "", "", byName, "fe80::1", false},
		{"AWS metadata v6", "", "", byName, "fd00:ec2::254", false},
		{"Alibaba metadata", "", "", byName, "100.100.100.200", false},
		// An IPv4-mapped IPv6 form is the IPv4 address.
		{"mapped metadata", "", "", byName, "::ffff:169.254.169.254", false},
		// Loopback is denied unless an allowlist entry is a loopback address.
		{"loopback, names only", "", "", byName, "127.0.0.1", false},
		{"loopback v6, names only", "", "", byName, "::1", false},
		{"loopback, loopback entry", "", "", byLoopback, "127.0.0.1", true},
		{"loopback, allowed CIDR", "", "127.0.0.0/8", byName, "127.0.0.1", true},
		// Anything else passes the defaults.
		{"private address", "", "", byName, "10.1.2.3", true},
		// An explicit list replaces the defaults; "none" denies nothing.
		{"explicit list", "10.0.0.0/8", "", byLoopback, "169.254.169.254", true},
		{"explicit list denies", "10.0.0.0/8", "", byLoopback, "10.1.2.3", false},
		{"none", "none", "", byLoopback, "169.254.169.254", true},
		// Allowed CIDRs admit only their ranges; denied wins over allowed.
		{"outside allowed", "", "10.0.0.0/8", byName, "192.168.1.1", false},
		{"inside allowed", "", "10.0.0.0/8", byName, "10.9.9.9", true},
		{"denied inside allowed", "", "169.254.0.0/16", byName, "169.254.169.254", false},
	} {
		p := mustPolicy(t, c.denied, c.allowed, c.allow)
		if got := p.Permits(netip.MustParseAddr(c.addr)); got != c.permitted {
			t.Errorf("%s: Permits(%s) = %v, want %v (%s)", c.name, c.addr, got, c.permitted, p)
		}
	}
	if _, err := AddressPolicyFromFlags("10.0.0.0/33", "", byName); err == nil {
		t.Error("an invalid CIDR was accepted")
	}
}

// TestHTTPTargetsAreDialledOnlyAtPermittedAddresses: an allowed name that
// resolves to a denied address is refused in the dialer, and the target
// never sees a request; the same target by an allowed address is reached.
func TestHTTPTargetsAreDialledOnlyAtPermittedAddresses(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	port := srv.URL[len("http://127.0.0.1:"):]
	byName := "http://localhost:" + port + "/"
	allow := mustAllowlist(t, byName)
	d := &Door{Reader: secretsReader(t, sourceSecret(true)), Allow: allow, Addresses: mustPolicy(t, "", "", allow)}
	c, err := d.Corpus(t.Context(), corpusFor(byName))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	_, err = c.Driver.Capabilities(t.Context())
	if err == nil || !errors.Is(err, ErrAddressDenied) {
		t.Fatalf("a call to localhost (loopback, not allowed by address) gave %v, want the address policy's refusal", err)
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("the target received %d requests at a denied address", n)
	}

	open := mustAllowlist(t, srv.URL+"/")
	d2 := &Door{Reader: secretsReader(t, sourceSecret(true)), Allow: open, Addresses: mustPolicy(t, "", "", open)}
	c2, err := d2.Corpus(t.Context(), corpusFor(srv.URL+"/"))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Release()
	_, _ = c2.Driver.Capabilities(t.Context())
	if requests.Load() == 0 {
		t.Fatal("a loopback allowlist entry did not let the door reach its loopback target")
	}
}

// TestPostgresIsDialledOnlyAtPermittedAddresses: the same rule in pgx's
// dialer, against a real server: by name to a denied address nothing
// connects; by an allowed address the search runs.
func TestPostgresIsDialledOnlyAtPermittedAddresses(t *testing.T) {
	srv := pgtest.Start(t)
	port := strconv.Itoa(srv.Port)
	byName := "postgres://postgres:" + url.QueryEscape(pgtest.SuperPassword) + "@localhost:" + port + "/postgres?sslmode=disable"
	allow := mustAllowlist(t, "postgres://localhost:"+port)
	corpus := pgCorpus(false)
	corpus.Spec.Driver.Postgres.ManageSchema = true
	d := &Door{Reader: secretsReader(t, pgSecret("writer", byName)), Allow: allow, Addresses: mustPolicy(t, "", "", allow)}
	c, err := d.Corpus(t.Context(), corpus)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	_, err = c.Driver.Search(t.Context(), driver.Token("alice"), "handle", 10)
	if err == nil || !errors.Is(err, ErrAddressDenied) {
		t.Fatalf("a search through localhost (loopback, not allowed) gave %v, want the address policy's refusal", err)
	}

	byAddr := mustAllowlist(t, "postgres://127.0.0.1:"+port)
	d2 := &Door{Reader: secretsReader(t, pgSecret("writer", srv.SuperDSN())), Allow: byAddr, Addresses: mustPolicy(t, "", "", byAddr)}
	c2, err := d2.Corpus(t.Context(), corpus)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Release()
	if _, err := c2.Driver.Search(t.Context(), driver.Token("alice"), "handle", 10); err != nil {
		t.Fatalf("a search at a permitted address failed: %v", err)
	}
}

// TestSpiceDBIsDialledOnlyAtPermittedAddresses: the same rule in gRPC's
// dialer; a listener counts the connections it accepts.
func TestSpiceDBIsDialledOnlyAtPermittedAddresses(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int64
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			_ = conn.Close()
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	grant := func(source, endpoint string, allow Allowlist) error {
		c := spicedbCorpus()
		c.Spec.Driver.HTTP.URL = source
		c.Spec.Permissions.SpiceDB.Endpoint = endpoint
		d := &Door{Reader: secretsReader(t, sourceSecret(true), spicedbKey("k")), Allow: allow, Addresses: mustPolicy(t, "", "", allow)}
		resolved, err := d.Corpus(t.Context(), c)
		if err != nil {
			t.Fatal(err)
		}
		defer resolved.Release()
		return resolved.Driver.Grant(t.Context(), "doc", "alice")
	}
	// Only names in the allowlist: loopback stays denied.
	byName := mustAllowlist(t, "http://rag.internal/", "grpc://localhost:"+port)
	if err := grant("http://rag.internal/", "localhost:"+port, byName); err == nil {
		t.Fatal("a grant through a denied address succeeded")
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("the engine's port accepted %d connections at a denied address", n)
	}

	// The grant itself fails (the listener speaks no gRPC); reaching it is the point.
	_ = grant("http://127.0.0.1:1/", "127.0.0.1:"+port, mustAllowlist(t, "http://127.0.0.1:1/", "grpc://127.0.0.1:"+port))
	testutil.EventuallyTrue(t, 5*time.Second, "a connection at a permitted address", func() bool { return accepted.Load() > 0 })
}
