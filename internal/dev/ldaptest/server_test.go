package ldaptest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-ldap/ldap/v3"
)

func TestStartBindsAdminAndUsers(t *testing.T) {
	t.Parallel()
	began := time.Now()
	s := Start(t)
	t.Logf("slapd started and loaded its base in %d ms", time.Since(began).Milliseconds())

	if err := s.Bind(s.BindDN(), s.BindPassword()); err != nil {
		t.Fatalf("admin bind: %v", err)
	}
	dn := s.AddUser(t, "alice", "alice-pw")
	if want := "uid=alice,ou=people," + DefaultSuffix; dn != want {
		t.Fatalf("AddUser gave %s, want %s", dn, want)
	}
	if err := s.Bind(dn, "alice-pw"); err != nil {
		t.Fatalf("user bind: %v", err)
	}
	if err := s.Bind(dn, "wrong"); !ldap.IsErrorWithCode(err, ldap.LDAPResultInvalidCredentials) {
		t.Fatalf("bind with a wrong password: got %v, want invalid credentials", err)
	}
}

func TestListensOnLoopbackOnly(t *testing.T) {
	t.Parallel()
	s := Start(t)
	got, err := listeningSockets(s.PID())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"tcp " + s.Addr()}; !slices.Equal(got, want) {
		t.Fatalf("slapd listens on %v, want only %v", got, want)
	}
}

func TestGroupMembership(t *testing.T) {
	t.Parallel()
	s := Start(t, WithSuffix("dc=example,dc=org"))
	alice, bob := s.AddUser(t, "alice", "a"), s.AddUser(t, "bob", "b")
	for _, tc := range []struct {
		class      string
		alice, bob string   // each user's member value in this class
		empty      []string // Members once nobody is left
	}{
		{class: GroupOfNames, alice: alice, bob: bob, empty: []string{Placeholder}},
		{class: GroupOfUniqueNames, alice: alice, bob: bob, empty: []string{Placeholder}},
		{class: PosixGroup, alice: "alice", bob: "bob", empty: nil},
	} {
		t.Run(tc.class, func(t *testing.T) {
			cn := "g-" + tc.class
			if dn := s.AddGroup(t, cn, tc.class, tc.alice); dn != "cn="+cn+",ou=groups,dc=example,dc=org" {
				t.Fatalf("AddGroup gave %s", dn)
			}
			expectMembers(t, s, cn, tc.alice)
			s.AddMember(t, cn, tc.bob)
			expectMembers(t, s, cn, tc.alice, tc.bob)
			s.RemoveMember(t, cn, tc.alice)
			expectMembers(t, s, cn, tc.bob)
			s.RemoveMember(t, cn, tc.bob)
			expectMembers(t, s, cn, tc.empty...)
			s.AddMember(t, cn, tc.alice)
			expectMembers(t, s, cn, tc.alice)
		})
	}
}

func TestEmptyGroupHoldsPlaceholder(t *testing.T) {
	t.Parallel()
	s := Start(t)
	s.AddGroup(t, "empty", GroupOfNames)
	expectMembers(t, s, "empty", Placeholder)
	s.AddGroup(t, "empty-posix", PosixGroup)
	expectMembers(t, s, "empty-posix")
}

func expectMembers(t *testing.T, s *Server, cn string, want ...string) {
	t.Helper()
	got := s.Members(t, cn)
	norm := func(v []string) []string {
		out := make([]string, len(v))
		for i, x := range v {
			out[i] = strings.ToLower(x)
		}
		slices.Sort(out)
		return out
	}
	if !slices.Equal(norm(got), norm(want)) {
		t.Fatalf("members of %s: got %q, want %q", cn, got, want)
	}
}

func TestTwoServersAtOnce(t *testing.T) {
	t.Parallel()
	a, b := Start(t), Start(t)
	if a.URL() == b.URL() {
		t.Fatalf("both servers on %s", a.URL())
	}
	dn := a.AddUser(t, "carol", "carol-pw")
	if err := a.Bind(dn, "carol-pw"); err != nil {
		t.Fatalf("bind on the first server: %v", err)
	}
	if err := b.Bind(dn, "carol-pw"); err == nil {
		t.Fatal("a user of the first server binds on the second")
	}
	if err := b.Bind(a.BindDN(), a.BindPassword()); err == nil {
		t.Fatal("the first server's admin password binds on the second")
	}
}

func TestStopLeavesNothing(t *testing.T) {
	t.Parallel()
	s := Start(t)
	pid, dir, url := s.PID(), s.dir, s.URL()
	s.Stop()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("slapd (pid %d) after Stop: kill -0 gave %v, want no such process", pid, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s after Stop: %v", dir, err)
	}
	if conn, err := ldap.DialURL(url); err == nil {
		_ = conn.Close()
		t.Fatalf("%s still accepts connections", url)
	}
	s.Stop() // the cleanup's second call is harmless
}

// fatalRecorder stands in for t to catch Start's failure message; Fatalf
// ends the goroutine as testing.T's does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestStartWithoutSlapdNamesTheMakeTarget(t *testing.T) {
	old := slapdPath
	slapdPath = filepath.Join(t.TempDir(), "slapd")
	t.Cleanup(func() { slapdPath = old })
	rec := &fatalRecorder{TB: t}
	var wg sync.WaitGroup
	wg.Go(func() { Start(rec) })
	wg.Wait()
	if !strings.Contains(rec.msg, "make ldap-tools") {
		t.Fatalf("Start without slapd said %q; want it to name make ldap-tools", rec.msg)
	}
}

// listeningSockets is "tcp ADDR" or "tcp6 ADDR" for each TCP socket pid
// listens on, plus "unix" for any socket file (an ldapi:// listener).
func listeningSockets(pid int) ([]string, error) {
	inodes, err := socketInodes(pid)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, proto := range []string{"tcp", "tcp6"} {
		listeners, err := tcpListeners(filepath.Join("/proc", fmt.Sprint(pid), "net", proto))
		if err != nil {
			return nil, err
		}
		for inode, addr := range listeners {
			if inodes[inode] {
				out = append(out, proto+" "+addr)
			}
		}
	}
	unix, err := os.ReadFile(filepath.Join("/proc", fmt.Sprint(pid), "net", "unix"))
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(unix), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) >= 7 && inodes[f[6]] {
			out = append(out, "unix")
		}
	}
	slices.Sort(out)
	return out, nil
}

// socketInodes are the inodes of the sockets among pid's open files.
func socketInodes(pid int) (map[string]bool, error) {
	fdDir := filepath.Join("/proc", fmt.Sprint(pid), "fd")
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
		if err == nil && strings.HasPrefix(target, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")] = true
		}
	}
	return inodes, nil
}

// tcpListeners maps inode to address for the LISTEN sockets in a
// /proc/net/tcp{,6} table.
func tcpListeners(table string) (map[string]string, error) {
	b, err := os.ReadFile(table)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		const listen = "0A"
		if len(f) < 10 || f[3] != listen {
			continue
		}
		out[f[9]] = hexAddr(f[1])
	}
	return out, nil
}

// hexAddr turns /proc/net/tcp's "0100007F:1F90" into "127.0.0.1:8080"
// (IPv4 in host byte order, little-endian here); IPv6 stays in hex.
func hexAddr(s string) string {
	host, port, _ := strings.Cut(s, ":")
	var p int
	_, _ = fmt.Sscanf(port, "%X", &p)
	if len(host) != 8 {
		return fmt.Sprintf("[%s]:%d", host, p)
	}
	var ip [4]int
	for i := range 4 {
		_, _ = fmt.Sscanf(host[2*(3-i):2*(3-i)+2], "%X", &ip[i])
	}
	return fmt.Sprintf("%d.%d.%d.%d:%d", ip[0], ip[1], ip[2], ip[3], p)
}
