package directory

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/go-ldap/ldap/v3"
)

// Check binds, proving the URL, the TLS trust and the credential.
func (d *Directory) Check(ctx context.Context) error {
	return d.do(ctx, "check", func(*session) error { return nil })
}

// AddMember makes subject a member of group. Already a member is success;
// the group must exist, and with a user search so must the subject's entry
// (NotFound otherwise).
func (d *Directory) AddMember(ctx context.Context, group, subject string) error {
	return d.modify(ctx, "add member", group, subject, (*ldap.ModifyRequest).Add, ldap.LDAPResultAttributeOrValueExists)
}

// RemoveMember makes subject no longer a member of group. Not a member is
// success; a subject the user search does not find is NotFound, since its
// DN, and so its membership, cannot be known. (A groupOfNames or groupOfUniqueNames must keep one member: the
// server refuses to remove the last, an objectClassViolation.)
func (d *Directory) RemoveMember(ctx context.Context, group, subject string) error {
	return d.modify(ctx, "remove member", group, subject, (*ldap.ModifyRequest).Delete, ldap.LDAPResultNoSuchAttribute)
}

// modify adds or deletes subject's member value; done is the result code
// meaning the group is already as asked.
func (d *Directory) modify(ctx context.Context, op, group, subject string, change func(*ldap.ModifyRequest, string, []string), done uint16) error {
	if err := validateNames(op, group, subject); err != nil {
		return err
	}
	return d.do(ctx, op, func(s *session) error {
		value, err := d.memberValue(s, subject)
		if err != nil {
			return err
		}
		req := ldap.NewModifyRequest(d.group.render(group), nil)
		change(req, d.cfg.MemberAttribute, []string{value})
		err = s.conn.Modify(req)
		if ldap.IsErrorWithCode(err, done) {
			return nil
		}
		return groupMissing(err)
	})
}

// IsMember reports whether subject is a member of group, compared by the
// server with the attribute's own matching rule (DN matching for member).
func (d *Directory) IsMember(ctx context.Context, group, subject string) (bool, error) {
	if err := validateNames("is member", group, subject); err != nil {
		return false, err
	}
	var member bool
	err := d.do(ctx, "is member", func(s *session) error {
		value, err := d.memberValue(s, subject)
		if err != nil {
			return err
		}
		member, err = s.conn.Compare(d.group.render(group), d.cfg.MemberAttribute, value)
		if ldap.IsErrorWithCode(err, ldap.LDAPResultNoSuchAttribute) {
			return nil // a posixGroup with no memberUid at all
		}
		return groupMissing(err)
	})
	return member, err
}

// Members is the subjects of group, sorted: memberUid values as they are,
// member DNs mapped back through the UserDN template or the user search.
// A DN that is not a subject's (another group, an entry outside the
// search base) is left out.
func (d *Directory) Members(ctx context.Context, group string) ([]string, error) {
	if err := validateNames("members", group); err != nil {
		return nil, err
	}
	var subjects []string
	err := d.do(ctx, "members", func(s *session) error {
		values, err := d.memberValues(s, group)
		if err != nil {
			return err
		}
		subjects, err = d.subjects(s, values)
		return err
	})
	slices.Sort(subjects)
	return slices.Compact(subjects), err
}

// memberValue is what the group holds for subject: the subject itself for
// memberUid, else its entry's DN.
func (d *Directory) memberValue(s *session, subject string) (string, error) {
	switch {
	case d.cfg.MemberAttribute == attrMemberUID:
		return subject, nil
	case d.user != nil:
		return d.user.render(subject), nil
	default:
		return d.searchUser(s, subject)
	}
}

// searchUser is the DN of the one entry under UserSearchBase whose
// UserSearchAttribute is subject.
func (d *Directory) searchUser(s *session, subject string) (string, error) {
	filter := "(" + d.cfg.UserSearchAttribute + "=" + ldap.EscapeFilter(subject) + ")"
	req := ldap.NewSearchRequest(d.cfg.UserSearchBase, ldap.ScopeWholeSubtree, ldap.NeverDerefAliases,
		2, d.timeLimit, false, filter, []string{noAttributes}, nil)
	entries, err := s.search(req)
	switch {
	case ldap.IsErrorWithCode(err, ldap.LDAPResultSizeLimitExceeded) || errors.Is(err, ldap.ErrSizeLimitExceeded):
		return "", newError(Permanent, "", 0, reasonAmbiguous, nil)
	case err != nil:
		return "", err
	case len(entries) == 0:
		return "", newError(NotFound, "", 0, reasonNoSubject, nil)
	case len(entries) > 1:
		return "", newError(Permanent, "", 0, reasonAmbiguous, nil)
	}
	return entries[0].DN, nil
}

// memberValues reads the group's member attribute, at most MaxValues values.
func (d *Directory) memberValues(s *session, group string) ([]string, error) {
	req := ldap.NewSearchRequest(d.group.render(group), ldap.ScopeBaseObject, ldap.NeverDerefAliases,
		1, d.timeLimit, false, "(objectClass=*)", []string{d.cfg.MemberAttribute}, nil)
	entries, err := s.search(req)
	if err != nil {
		return nil, groupMissing(err)
	}
	if len(entries) == 0 {
		return nil, newError(NotFound, "", 0, reasonNoGroup, nil)
	}
	if ranged(entries[0], d.cfg.MemberAttribute) {
		return nil, newError(Permanent, "", 0, reasonRanged, nil)
	}
	values := entries[0].GetEqualFoldAttributeValues(d.cfg.MemberAttribute)
	if len(values) > d.cfg.MaxValues {
		return nil, newError(Permanent, "", 0, reasonTooManyVals, nil)
	}
	return values, nil
}

// ranged reports whether the server sent the attribute in ranges
// ("member;range=0-1499", Active Directory's way with large groups):
// reading only the plain attribute would silently drop members.
func ranged(e *ldap.Entry, attr string) bool {
	for _, a := range e.Attributes {
		if len(a.Name) > len(attr) && strings.EqualFold(a.Name[:len(attr)+1], attr+";") {
			return true
		}
	}
	return false
}

func (d *Directory) subjects(s *session, values []string) ([]string, error) {
	switch {
	case d.cfg.MemberAttribute == attrMemberUID:
		return values, nil
	case d.user != nil:
		return d.subjectsByTemplate(values), nil
	default:
		return d.subjectsBySearch(s, values)
	}
}

func (d *Directory) subjectsByTemplate(values []string) []string {
	var out []string
	for _, v := range values {
		if subject, ok := d.user.value(d.memberDN(v)); ok {
			out = append(out, subject)
		}
	}
	return out
}

// memberDN is a member value's DN: a uniqueMember value may end in an
// optional UID ("dn#'0101'B", RFC 4517 nameAndOptionalUID).
func (d *Directory) memberDN(value string) string {
	if d.cfg.MemberAttribute != attrUniqueMember || !strings.HasSuffix(value, "'B") {
		return value
	}
	if i := strings.LastIndex(value, "#'"); i > 0 {
		return value[:i]
	}
	return value
}

// groupMissing names a missing group as such.
func groupMissing(err error) error {
	if ldap.IsErrorWithCode(err, ldap.LDAPResultNoSuchObject) {
		return newError(NotFound, "", ldap.LDAPResultNoSuchObject, reasonNoGroup, nil)
	}
	return err
}

// validateNames refuses empty names: an empty group or subject would
// render a DN with an empty value, or a filter matching nothing useful.
func validateNames(op string, names ...string) error {
	if slices.Contains(names, "") {
		return newError(Permanent, op, 0, "empty group or subject", nil)
	}
	return nil
}

// noAttributes asks a search for DNs only (RFC 4511 section 4.5.1.8).
const noAttributes = "1.1"
