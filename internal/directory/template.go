package directory

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-ldap/ldap/v3"
)

// Placeholders of the DN templates.
const (
	groupPlaceholder   = "{group}"
	subjectPlaceholder = "{subject}"
)

// sentinel stands in for the placeholder when a template is parsed, to find
// where its value sits.
const sentinel = "ragcanarysentinel"

// dnTemplate is a DN with one placeholder that is a whole attribute value,
// e.g. "uid={subject},ou=people,dc=example,dc=org".
type dnTemplate struct {
	text        string
	placeholder string
	// rdn and attr locate the placeholder's value in the parsed DN.
	rdn, attr int
	parsed    *ldap.DN
}

func parseTemplate(text, placeholder string) (*dnTemplate, error) {
	if n := strings.Count(text, placeholder); n != 1 {
		return nil, fmt.Errorf("must hold %s exactly once (found %d)", placeholder, n)
	}
	parsed, err := ldap.ParseDN(strings.Replace(text, placeholder, sentinel, 1))
	if err != nil || len(parsed.RDNs) == 0 {
		return nil, errors.New("is not a DN")
	}
	t := &dnTemplate{text: text, placeholder: placeholder, rdn: -1, parsed: parsed}
	for i, rdn := range parsed.RDNs {
		for j, atv := range rdn.Attributes {
			if atv.Value == sentinel {
				t.rdn, t.attr = i, j
			}
		}
	}
	if t.rdn < 0 {
		return nil, fmt.Errorf("must have %s as a whole attribute value, e.g. uid=%s,ou=people,dc=example,dc=org", placeholder, placeholder)
	}
	return t, nil
}

// render is the DN for value, DN-escaped so that a value such as "a,b=c"
// stays one attribute value.
func (t *dnTemplate) render(value string) string {
	return strings.Replace(t.text, t.placeholder, ldap.EscapeDN(value), 1)
}

// value is the placeholder's value in dn when dn is the template rendered
// with that value (compared as DNs, case-insensitively), else false.
func (t *dnTemplate) value(dn string) (string, bool) {
	parsed, err := ldap.ParseDN(dn)
	if err != nil || len(parsed.RDNs) != len(t.parsed.RDNs) {
		return "", false
	}
	v, ok := attributeValue(parsed.RDNs[t.rdn], t.parsed.RDNs[t.rdn].Attributes[t.attr].Type)
	if !ok {
		return "", false
	}
	back, err := ldap.ParseDN(t.render(v))
	if err != nil || !back.EqualFold(parsed) {
		return "", false
	}
	return v, true
}

// attributeValue is the value of typ in rdn, looked up by type because a
// multi-valued RDN may list its attributes in any order.
func attributeValue(rdn *ldap.RelativeDN, typ string) (string, bool) {
	for _, atv := range rdn.Attributes {
		if strings.EqualFold(atv.Type, typ) {
			return atv.Value, true
		}
	}
	return "", false
}

// dnKey is a DN's comparison key: attribute types and values case-folded,
// the way DN.EqualFold compares them.
func dnKey(dn *ldap.DN) string {
	return strings.ToLower(dn.String())
}
