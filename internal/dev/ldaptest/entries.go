package ldaptest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-ldap/ldap/v3"
)

// Group object classes AddGroup accepts, with the attribute holding their
// members: user DNs for the first two, user ids (uid) for posixGroup.
const (
	GroupOfNames       = "groupOfNames"
	GroupOfUniqueNames = "groupOfUniqueNames"
	PosixGroup         = "posixGroup"
)

// Placeholder is the member value of a groupOfNames or groupOfUniqueNames
// that has no real member: their schemas require at least one value, so an
// empty group holds this DN of no entry, as directories commonly do. The
// helpers add it when a group would be left empty and drop it when a real
// member arrives; a posixGroup may be empty and never holds it.
const Placeholder = "cn=nobody"

// memberAttribute is where a group of class objectClass lists its members.
func memberAttribute(objectClass string) (string, error) {
	switch objectClass {
	case GroupOfNames:
		return "member", nil
	case GroupOfUniqueNames:
		return "uniqueMember", nil
	case PosixGroup:
		return "memberUid", nil
	}
	return "", fmt.Errorf("%w %q: want %s, %s or %s", errNoSuchClass, objectClass, GroupOfNames, GroupOfUniqueNames, PosixGroup)
}

// loadBase adds the suffix's entry, ou=people and ou=groups.
func (s *Server) loadBase() error {
	conn, err := s.adminConn()
	if err != nil {
		return err
	}
	defer conn.Close()
	top, err := suffixEntry(s.suffix)
	if err != nil {
		return err
	}
	reqs := []*ldap.AddRequest{top, organizationalUnit(s.PeopleDN(), "people"), organizationalUnit(s.GroupsDN(), "groups")}
	for _, r := range reqs {
		if err := conn.Add(r); err != nil {
			return fmt.Errorf("adding %s: %w", r.DN, err)
		}
	}
	return nil
}

// suffixEntry is the naming context's own entry, of the class its first
// RDN calls for.
func suffixEntry(suffix string) (*ldap.AddRequest, error) {
	dn, err := ldap.ParseDN(suffix)
	if err != nil || len(dn.RDNs) == 0 || len(dn.RDNs[0].Attributes) != 1 {
		return nil, fmt.Errorf("suffix %q: want a DN whose first RDN is dc=… or o=…", suffix)
	}
	rdn := dn.RDNs[0].Attributes[0]
	r := ldap.NewAddRequest(suffix, nil)
	switch strings.ToLower(rdn.Type) {
	case "dc":
		r.Attribute("objectClass", []string{"top", "dcObject", "organization"})
		r.Attribute("dc", []string{rdn.Value})
		r.Attribute("o", []string{rdn.Value})
	case "o":
		r.Attribute("objectClass", []string{"top", "organization"})
		r.Attribute("o", []string{rdn.Value})
	default:
		return nil, fmt.Errorf("suffix %q: want a DN whose first RDN is dc=… or o=…", suffix)
	}
	return r, nil
}

func organizationalUnit(dn, ou string) *ldap.AddRequest {
	r := ldap.NewAddRequest(dn, nil)
	r.Attribute("objectClass", []string{"top", "organizationalUnit"})
	r.Attribute("ou", []string{ou})
	return r
}

// UserDN is the DN AddUser gives uid: uid=<uid>,ou=people,<suffix>.
func (s *Server) UserDN(uid string) string {
	return "uid=" + ldap.EscapeDN(uid) + "," + s.PeopleDN()
}

// GroupDN is the DN AddGroup gives cn: cn=<cn>,ou=groups,<suffix>.
func (s *Server) GroupDN(cn string) string {
	return "cn=" + ldap.EscapeDN(cn) + "," + s.GroupsDN()
}

// Mail is the address AddUser gives uid: <uid>@<the suffix's dc values
// joined by dots>, e.g. alice@ragcanary.test.
func (s *Server) Mail(uid string) string {
	var labels []string
	if dn, err := ldap.ParseDN(s.suffix); err == nil {
		for _, rdn := range dn.RDNs {
			for _, a := range rdn.Attributes {
				if strings.EqualFold(a.Type, "dc") {
					labels = append(labels, a.Value)
				}
			}
		}
	}
	if len(labels) == 0 {
		labels = []string{"ldaptest", "test"}
	}
	return uid + "@" + strings.Join(labels, ".")
}

// AddUser adds an inetOrgPerson uid=<uid> under ou=people with cn and sn
// set to uid, mail set to Mail(uid) and the password, which binds as the
// returned DN.
func (s *Server) AddUser(t testing.TB, uid, password string) (dn string) {
	t.Helper()
	dn = s.UserDN(uid)
	r := ldap.NewAddRequest(dn, nil)
	r.Attribute("objectClass", []string{"top", "person", "organizationalPerson", "inetOrgPerson"})
	r.Attribute("uid", []string{uid})
	r.Attribute("cn", []string{uid})
	r.Attribute("sn", []string{uid})
	r.Attribute("mail", []string{s.Mail(uid)})
	r.Attribute("userPassword", []string{password})
	conn := s.admin(t)
	defer conn.Close()
	if err := conn.Add(r); err != nil {
		t.Fatalf("adding user %s: %v", dn, err)
	}
	return dn
}

// AddGroup adds cn=<cn> under ou=groups of objectClass GroupOfNames,
// GroupOfUniqueNames or PosixGroup with members as its raw member values
// (user DNs, or uids for a posixGroup, which gets the next gidNumber from
// 10001). A groupOfNames or groupOfUniqueNames without members holds
// Placeholder. It returns the group's DN.
func (s *Server) AddGroup(t testing.TB, cn, objectClass string, members ...string) string {
	t.Helper()
	attr, err := memberAttribute(objectClass)
	if err != nil {
		t.Fatal(err)
	}
	dn := s.GroupDN(cn)
	r := ldap.NewAddRequest(dn, nil)
	r.Attribute("objectClass", []string{"top", objectClass})
	r.Attribute("cn", []string{cn})
	if objectClass == PosixGroup {
		r.Attribute("gidNumber", []string{strconv.Itoa(s.nextGID())})
	} else if len(members) == 0 {
		members = []string{Placeholder}
	}
	if len(members) > 0 {
		r.Attribute(attr, members)
	}
	conn := s.admin(t)
	defer conn.Close()
	if err := conn.Add(r); err != nil {
		t.Fatalf("adding group %s: %v", dn, err)
	}
	return dn
}

func (s *Server) nextGID() int {
	s.gidMu.Lock()
	defer s.gidMu.Unlock()
	s.gid++
	return s.gid
}

// Members is the raw values of group cn's member attribute (Placeholder
// included when it is there), in the directory's order.
func (s *Server) Members(t testing.TB, cn string) []string {
	t.Helper()
	conn := s.admin(t)
	defer conn.Close()
	_, values := s.group(t, conn, cn)
	return values
}

// AddMember adds value to group cn's member attribute (a user DN, or a uid
// for a posixGroup), dropping Placeholder in the same change. Adding a
// present value fails t.
func (s *Server) AddMember(t testing.TB, cn, value string) {
	t.Helper()
	conn := s.admin(t)
	defer conn.Close()
	attr, values := s.group(t, conn, cn)
	r := ldap.NewModifyRequest(s.GroupDN(cn), nil)
	r.Add(attr, []string{value})
	if slices.Contains(values, Placeholder) {
		r.Delete(attr, []string{Placeholder})
	}
	if err := conn.Modify(r); err != nil {
		t.Fatalf("adding %s to %s: %v", value, cn, err)
	}
}

// RemoveMember removes value from group cn's member attribute; a
// groupOfNames or groupOfUniqueNames left empty holds Placeholder instead.
// Removing an absent value fails t.
func (s *Server) RemoveMember(t testing.TB, cn, value string) {
	t.Helper()
	conn := s.admin(t)
	defer conn.Close()
	attr, values := s.group(t, conn, cn)
	r := ldap.NewModifyRequest(s.GroupDN(cn), nil)
	if attr != "memberUid" && len(values) == 1 && values[0] == value {
		r.Replace(attr, []string{Placeholder})
	} else {
		r.Delete(attr, []string{value})
	}
	if err := conn.Modify(r); err != nil {
		t.Fatalf("removing %s from %s: %v", value, cn, err)
	}
}

// group reads group cn: its member attribute and that attribute's values.
func (s *Server) group(t testing.TB, conn *ldap.Conn, cn string) (attr string, values []string) {
	t.Helper()
	req := ldap.NewSearchRequest(s.GroupDN(cn), ldap.ScopeBaseObject, ldap.NeverDerefAliases, 1, 10, false,
		"(objectClass=*)", []string{"objectClass", "member", "uniqueMember", "memberUid"}, nil)
	res, err := conn.Search(req)
	if err != nil {
		t.Fatalf("reading group %s: %v", cn, err)
	}
	if len(res.Entries) != 1 {
		t.Fatalf("reading group %s: %d entries", cn, len(res.Entries))
	}
	e := res.Entries[0]
	for _, class := range e.GetAttributeValues("objectClass") {
		if a, err := memberAttribute(class); err == nil {
			return a, e.GetAttributeValues(a)
		}
	}
	t.Fatalf("group %s has none of the classes %s, %s, %s", cn, GroupOfNames, GroupOfUniqueNames, PosixGroup)
	return "", nil
}
