package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/dev/ldaptest"
	"github.com/ragcanary/ragcanary/internal/directory"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// passwordFile writes password (with the newline editors add) to a file.
func passwordFile(t *testing.T, password string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bind-password")
	if err := os.WriteFile(path, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestGroupsFlags: the directory flags become the directory's settings,
// the password read from its file without the trailing newline.
func TestGroupsFlags(t *testing.T) {
	args := []string{"--groups-ldap-url", "ldap://127.0.0.1:389", "--groups-ldap-bind-dn", "cn=admin,dc=example,dc=org",
		"--groups-ldap-bind-password-file", passwordFile(t, "s3cret"), "--groups-ldap-group-dn", "cn={group},ou=groups,dc=example,dc=org",
		"--groups-ldap-member-attribute", "uniqueMember", "--groups-ldap-user-dn", "uid={subject},ou=people,dc=example,dc=org"}
	var o options
	if err := newFlagSet(&o, io.Discard).Parse(args); err != nil {
		t.Fatal(err)
	}
	got, err := o.groups.directoryConfig()
	if err != nil {
		t.Fatal(err)
	}
	want := directory.Config{URL: "ldap://127.0.0.1:389", BindDN: "cn=admin,dc=example,dc=org", BindPassword: "s3cret",
		GroupDN: "cn={group},ou=groups,dc=example,dc=org", MemberAttribute: "uniqueMember", UserDN: "uid={subject},ou=people,dc=example,dc=org"}
	if got == nil || got.String() != want.String() || got.BindPassword != want.BindPassword {
		t.Fatalf("directory config %v, want %v (and the file's password)", got, want)
	}
	if o.groups.syncInterval != ragtarget.DefaultGroupsSyncInterval {
		t.Fatalf("default --groups-sync-interval %v, want %v", o.groups.syncInterval, ragtarget.DefaultGroupsSyncInterval)
	}
}

// TestGroupsFlagsRefused: directory flags without a directory, unreadable
// files, settings the directory client refuses and a directory that cannot
// be reached stop ragtarget before it serves, saying which and why.
func TestGroupsFlagsRefused(t *testing.T) {
	base := []string{"--source-token", "src", "--listen", "127.0.0.1:0"}
	ldap := []string{"--groups-ldap-url", "ldap://127.0.0.1:1", "--groups-ldap-group-dn", "cn={group},ou=groups,dc=x",
		"--groups-ldap-user-dn", "uid={subject},ou=people,dc=x"}
	for _, tc := range []struct {
		args []string
		// want is in what ragtarget prints.
		want string
	}{
		{[]string{"--groups-sync-interval", "1m"}, "--groups-sync-interval and --groups-ldap-* need --groups-ldap-url"},
		{[]string{"--groups-ldap-group-dn", "cn={group},dc=x"}, "need --groups-ldap-url"},
		{slices.Concat(ldap, []string{"--groups-ldap-bind-dn", "cn=a,dc=x", "--groups-ldap-bind-password-file", "/nonexistent/pw"}), "--groups-ldap-bind-password-file: open /nonexistent/pw"},
		{slices.Concat(ldap, []string{"--groups-ldap-member-attribute", "owner"}), "MemberAttribute must be member, uniqueMember or memberUid"},
		{slices.Concat(ldap, []string{"--groups-ldap-bind-dn", "cn=a,dc=x"}), "BindDN set without BindPassword"},
		{ldap, "the directory at --groups-ldap-url: ldap check: transient: connection failed"},
	} {
		var stderr bytes.Buffer
		if code := run(slices.Concat(base, tc.args), &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 saying %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

// TestGroupsFromOpenLDAP: against a real directory, the flags read a
// group's members as persona principals; a refused password stops
// ragtarget at start without printing it; and a query-time engine, which
// holds its own memberships, is refused beside a directory.
func TestGroupsFromOpenLDAP(t *testing.T) {
	srv := ldaptest.Start(t)
	srv.AddGroup(t, "eng", ldaptest.GroupOfNames, srv.AddUser(t, "alice", "pw"))
	flags := func(password string) []string {
		return []string{"--source-token", "src", "--listen", "127.0.0.1:0", "--groups-ldap-url", srv.URL(),
			"--groups-ldap-bind-dn", srv.BindDN(), "--groups-ldap-bind-password-file", passwordFile(t, password),
			"--groups-ldap-group-dn", "cn={group}," + srv.GroupsDN(), "--groups-ldap-user-dn", "uid={subject}," + srv.PeopleDN(),
			"--groups-sync-interval", "2s"}
	}

	var o options
	if err := newFlagSet(&o, io.Discard).Parse(flags(srv.BindPassword())); err != nil {
		t.Fatal(err)
	}
	if err := o.complete(nil); err != nil {
		t.Fatal(err)
	}
	defer o.closeDirectory()
	members, err := o.cfg.Groups.Members(context.Background(), "eng")
	if err != nil || !slices.Equal(members, []string{"alice"}) || o.cfg.GroupsSyncInterval != 2*time.Second {
		t.Fatalf("eng's members %v (%v), interval %v; want [alice], 2s", members, err, o.cfg.GroupsSyncInterval)
	}

	const wrong = "not-the-bind-password"
	var stderr bytes.Buffer
	if code := run(flags(wrong), &stderr); code != 2 || !strings.Contains(stderr.String(), "unauthorized") || strings.Contains(stderr.String(), wrong) {
		t.Fatalf("wrong password: exit %d, %q; want exit 2 saying unauthorized, without the password", code, stderr.String())
	}
	stderr.Reset()
	if code := run(append(flags(srv.BindPassword()), "--authz-spicedb-endpoint", "127.0.0.1:1"), &stderr); code != 2 ||
		!strings.Contains(stderr.String(), "directory groups need the index's own access lists") {
		t.Fatalf("with SpiceDB: exit %d, %q; want exit 2 refusing the pair", code, stderr.String())
	}
}
