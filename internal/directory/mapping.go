package directory

import (
	"strings"

	"github.com/go-ldap/ldap/v3"
)

// Bounds of one mapping search's filter: terms and bytes.
const (
	maxFilterTerms = 256
	maxFilterBytes = 16 << 10
)

// subjectsBySearch maps member DNs to subjects with few searches instead
// of one read per member: each search under UserSearchBase asks for the
// entries named by a batch of DNs' first RDNs, (|(uid=a)(uid=b)...), and
// keeps the entries whose DN is one of the members'. Filters are bounded
// in terms and bytes, and each search in entries (MaxEntries).
func (d *Directory) subjectsBySearch(s *session, values []string) ([]string, error) {
	b := mappingBatch{d: d, s: s, wanted: map[string]*ldap.DN{}, limit: min(maxFilterTerms, d.cfg.MaxEntries)}
	for _, v := range values {
		dn, err := ldap.ParseDN(d.memberDN(v))
		if err != nil || len(dn.RDNs) == 0 {
			continue
		}
		term, ok := rdnFilter(dn.RDNs[0])
		if !ok || b.wanted[dnKey(dn)] != nil {
			continue
		}
		if err := b.add(dnKey(dn), dn, term); err != nil {
			return nil, err
		}
	}
	if err := b.flush(); err != nil {
		return nil, err
	}
	return b.subjects, nil
}

// mappingBatch gathers filter terms until a search is due.
type mappingBatch struct {
	d      *Directory
	s      *session
	limit  int
	terms  []string
	size   int
	wanted map[string]*ldap.DN // every member DN seen, by dnKey
	// subjects found so far.
	subjects []string
}

func (b *mappingBatch) add(key string, dn *ldap.DN, term string) error {
	if len(b.terms) == b.limit || (len(b.terms) > 0 && b.size+len(term) > maxFilterBytes) {
		if err := b.flush(); err != nil {
			return err
		}
	}
	b.wanted[key] = dn
	b.terms = append(b.terms, term)
	b.size += len(term)
	return nil
}

func (b *mappingBatch) flush() error {
	if len(b.terms) == 0 {
		return nil
	}
	filter := "(|" + strings.Join(b.terms, "") + ")"
	b.terms, b.size = b.terms[:0], 0
	attr := b.d.cfg.UserSearchAttribute
	req := ldap.NewSearchRequest(b.d.cfg.UserSearchBase, ldap.ScopeWholeSubtree, ldap.NeverDerefAliases,
		b.d.cfg.MaxEntries, b.d.timeLimit, false, filter, []string{attr}, nil)
	entries, err := b.s.search(req)
	if err != nil {
		return err
	}
	for _, e := range entries {
		dn, err := ldap.ParseDN(e.DN)
		if err != nil || b.wanted[dnKey(dn)] == nil {
			continue
		}
		if subject, ok := subjectOf(e, dn, attr); ok {
			b.subjects = append(b.subjects, subject)
		}
	}
	return nil
}

// subjectOf is the entry's UserSearchAttribute value; of several, the one
// naming the entry (its RDN's), so the choice does not depend on order.
func subjectOf(e *ldap.Entry, dn *ldap.DN, attr string) (string, bool) {
	values := e.GetEqualFoldAttributeValues(attr)
	if len(values) == 0 {
		return "", false
	}
	if named, ok := attributeValue(dn.RDNs[0], attr); ok && len(values) > 1 {
		for _, v := range values {
			if strings.EqualFold(v, named) {
				return v, true
			}
		}
	}
	return values[0], true
}

// rdnFilter is a filter matching the entries an RDN names, its values
// filter-escaped; false for an attribute type that is not a plain name.
func rdnFilter(rdn *ldap.RelativeDN) (string, bool) {
	parts := make([]string, 0, len(rdn.Attributes))
	for _, atv := range rdn.Attributes {
		if !attributeName.MatchString(atv.Type) {
			return "", false
		}
		parts = append(parts, "("+atv.Type+"="+ldap.EscapeFilter(atv.Value)+")")
	}
	if len(parts) == 1 {
		return parts[0], true
	}
	return "(&" + strings.Join(parts, "") + ")", true
}
