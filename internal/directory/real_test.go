package directory_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-ldap/ldap/v3"
	"github.com/ragcanary/ragcanary/internal/dev/ldaptest"
	"github.com/ragcanary/ragcanary/internal/directory"
)

// configFor is a directory on s for groups of class, users found by the
// UserDN template or, with search, by uid under ou=people.
func configFor(s *ldaptest.Server, class string, search bool) directory.Config {
	cfg := directory.Config{
		URL:             s.URL(),
		BindDN:          s.BindDN(),
		BindPassword:    s.BindPassword(),
		GroupDN:         "cn={group}," + s.GroupsDN(),
		MemberAttribute: map[string]string{ldaptest.GroupOfNames: "member", ldaptest.GroupOfUniqueNames: "uniqueMember", ldaptest.PosixGroup: "memberUid"}[class],
		Timeout:         5 * time.Second,
	}
	if search {
		cfg.UserSearchBase, cfg.UserSearchAttribute = s.PeopleDN(), "uid"
	} else {
		cfg.UserDN = "uid={subject}," + s.PeopleDN()
	}
	return cfg
}

func newDirectory(t *testing.T, cfg directory.Config) *directory.Directory {
	t.Helper()
	d, err := directory.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// Check binds with the credential; a wrong password is permanent (and
// absent from the error), a stopped server transient.
func TestRealCheck(t *testing.T) {
	s := ldaptest.Start(t)
	ctx := context.Background()
	cfg := configFor(s, ldaptest.GroupOfNames, false)
	began := time.Now()
	if err := newDirectory(t, cfg).Check(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("Check against slapd: %s", time.Since(began))

	wrong := cfg
	wrong.BindPassword = "not-" + cfg.BindPassword
	err := newDirectory(t, wrong).Check(ctx)
	if !directory.IsUnauthorized(err) || !directory.IsPermanent(err) || directory.IsTransient(err) {
		t.Fatalf("wrong password: got %v, want unauthorized and permanent", err)
	}
	if strings.Contains(err.Error(), wrong.BindPassword) {
		t.Fatalf("error %q holds the password", err)
	}

	user := s.AddUser(t, "carol", "carol-pw")
	asUser := cfg
	asUser.BindDN, asUser.BindPassword = user, "carol-pw"
	if err := newDirectory(t, asUser).Check(ctx); err != nil {
		t.Fatalf("a user's own bind: %v", err)
	}

	s.Stop()
	if err := newDirectory(t, cfg).Check(ctx); !directory.IsTransient(err) {
		t.Fatalf("stopped server: got %v, want transient", err)
	}
}

// Membership changes land in the directory and read back, for every group
// class and both ways of finding users, with names that need escaping.
func TestRealMembership(t *testing.T) {
	s := ldaptest.Start(t)
	// A subject that is a filter if unescaped, and one that is a DN.
	subjects := []string{"alice", "*)(uid=*", "a,b=c"}
	for _, subject := range append(subjects, "bob") {
		s.AddUser(t, subject, subject+"-pw")
	}
	for _, tc := range []struct {
		class  string
		search bool
	}{
		{ldaptest.GroupOfNames, false},
		{ldaptest.GroupOfNames, true},
		{ldaptest.GroupOfUniqueNames, false},
		{ldaptest.GroupOfUniqueNames, true},
		{ldaptest.PosixGroup, false},
	} {
		name := tc.class + map[bool]string{false: " by template", true: " by search"}[tc.search]
		t.Run(name, func(t *testing.T) {
			group := strings.ReplaceAll(name, " ", "-") + ",x"
			s.AddGroup(t, group, tc.class)
			d := newDirectory(t, configFor(s, tc.class, tc.search))
			membership(t, s, d, tc.class, group, subjects)
		})
	}
}

// membership adds subjects to group (each twice), checks the directory's
// raw values and Members, then removes them (each twice).
func membership(t *testing.T, s *ldaptest.Server, d *directory.Directory, class, group string, subjects []string) {
	t.Helper()
	ctx := context.Background()
	value := func(subject string) string {
		if class == ldaptest.PosixGroup {
			return subject
		}
		return s.UserDN(subject)
	}
	lat := latency{}
	for _, subject := range subjects {
		if in := lat.isMember(t, d, group, subject); in {
			t.Fatalf("%s is a member before being added", subject)
		}
		for range 2 {
			lat.time(t, "AddMember", func() error { return d.AddMember(ctx, group, subject) })
		}
		if !lat.isMember(t, d, group, subject) {
			t.Fatalf("%s is not a member after AddMember", subject)
		}
		if raw := s.Members(t, group); !holds(class, raw, value(subject)) {
			t.Fatalf("the directory holds %q, not %q", raw, value(subject))
		}
	}
	if got, want := lat.members(t, d, group), sorted(subjects); !slices.Equal(got, want) {
		t.Fatalf("Members = %q, want %q", got, want)
	}
	if lat.isMember(t, d, group, "bob") {
		t.Fatal("bob, never added, is a member")
	}
	for _, subject := range subjects {
		for range 2 {
			lat.time(t, "RemoveMember", func() error { return d.RemoveMember(ctx, group, subject) })
		}
		if lat.isMember(t, d, group, subject) {
			t.Fatalf("%s is still a member after RemoveMember", subject)
		}
	}
	if got := lat.members(t, d, group); len(got) != 0 {
		t.Fatalf("Members after removing all = %q", got)
	}
	lat.log(t)
}

// Missing groups and subjects are NotFound, never a silent success.
func TestRealNotFound(t *testing.T) {
	s := ldaptest.Start(t)
	s.AddUser(t, "alice", "alice-pw")
	s.AddGroup(t, "staff", ldaptest.GroupOfNames)
	ctx := context.Background()
	byTemplate := newDirectory(t, configFor(s, ldaptest.GroupOfNames, false))
	if err := byTemplate.AddMember(ctx, "no-such-group", "alice"); !directory.IsNotFound(err) {
		t.Fatalf("AddMember to a missing group: %v", err)
	}
	if _, err := byTemplate.Members(ctx, "no-such-group"); !directory.IsNotFound(err) {
		t.Fatalf("Members of a missing group: %v", err)
	}
	if _, err := byTemplate.IsMember(ctx, "no-such-group", "alice"); !directory.IsNotFound(err) {
		t.Fatalf("IsMember of a missing group: %v", err)
	}
	bySearch := newDirectory(t, configFor(s, ldaptest.GroupOfNames, true))
	if err := bySearch.AddMember(ctx, "staff", "nobody-such"); !directory.IsNotFound(err) {
		t.Fatalf("AddMember of a missing subject: %v", err)
	}
	// The placeholder member (cn=nobody) is outside ou=people: not a subject.
	if got, err := bySearch.Members(ctx, "staff"); err != nil || len(got) != 0 {
		t.Fatalf("Members of a group holding only the placeholder = %q, %v", got, err)
	}
}

// Members of a large group maps every DN back through the user search in
// a few searches, within the default bounds.
func TestRealMembersOfALargeGroup(t *testing.T) {
	s := ldaptest.Start(t)
	const n = 600
	var dns, want []string
	for i := range n {
		uid := fmt.Sprintf("user%04d", i)
		dns = append(dns, s.AddUser(t, uid, "pw-"+uid))
		want = append(want, uid)
	}
	s.AddGroup(t, "everyone", ldaptest.GroupOfNames, dns...)
	d := newDirectory(t, configFor(s, ldaptest.GroupOfNames, true))
	began := time.Now()
	got, err := d.Members(context.Background(), "everyone")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Members of %d by search: %s", n, time.Since(began))
	if !slices.Equal(got, want) {
		t.Fatalf("Members gave %d subjects, want %d", len(got), len(want))
	}
}

// latency records how long each operation took against slapd.
type latency map[string][]time.Duration

func (l latency) time(t *testing.T, op string, f func() error) {
	t.Helper()
	began := time.Now()
	err := f()
	l[op] = append(l[op], time.Since(began))
	if err != nil {
		t.Fatalf("%s: %v", op, err)
	}
}

func (l latency) isMember(t *testing.T, d *directory.Directory, group, subject string) bool {
	t.Helper()
	began := time.Now()
	in, err := d.IsMember(context.Background(), group, subject)
	l["IsMember"] = append(l["IsMember"], time.Since(began))
	if err != nil {
		t.Fatalf("IsMember(%s, %s): %v", group, subject, err)
	}
	return in
}

func (l latency) members(t *testing.T, d *directory.Directory, group string) []string {
	t.Helper()
	began := time.Now()
	got, err := d.Members(context.Background(), group)
	l["Members"] = append(l["Members"], time.Since(began))
	if err != nil {
		t.Fatalf("Members(%s): %v", group, err)
	}
	return got
}

func (l latency) log(t *testing.T) {
	t.Helper()
	var parts []string
	for _, op := range []string{"AddMember", "RemoveMember", "IsMember", "Members"} {
		ds := l[op]
		slices.Sort(ds)
		parts = append(parts, op+" median "+ds[len(ds)/2].Round(10*time.Microsecond).String()+" max "+ds[len(ds)-1].Round(10*time.Microsecond).String())
	}
	t.Log(strings.Join(parts, "; "))
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// holds reports whether raw member values include want, DNs compared as
// DNs (slapd stores them in its own escaping, e.g. "=" as "\\3D").
func holds(class string, raw []string, want string) bool {
	if class == ldaptest.PosixGroup {
		return slices.Contains(raw, want)
	}
	w, err := ldap.ParseDN(want)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(raw, func(v string) bool {
		dn, err := ldap.ParseDN(v)
		return err == nil && dn.EqualFold(w)
	})
}

// A groupOfNames must keep a member: removing its last is the server's
// objectClassViolation, a permanent error the caller sees, not a success.
func TestRealLastMemberOfGroupOfNames(t *testing.T) {
	s := ldaptest.Start(t)
	s.AddGroup(t, "solo", ldaptest.GroupOfNames, s.AddUser(t, "alice", "alice-pw"))
	d := newDirectory(t, configFor(s, ldaptest.GroupOfNames, false))
	err := d.RemoveMember(context.Background(), "solo", "alice")
	if !directory.IsPermanent(err) || !strings.Contains(err.Error(), "Object Class Violation") {
		t.Fatalf("removing the last member: got %v, want a permanent object class violation", err)
	}
	if in, err := d.IsMember(context.Background(), "solo", "alice"); err != nil || !in {
		t.Fatalf("alice after the refused removal: member %v, %v", in, err)
	}
}
