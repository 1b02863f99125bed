package directory

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"

	"github.com/go-ldap/ldap/v3"
)

// Member attributes, in their schema spelling.
const (
	attrMember       = "member"
	attrUniqueMember = "uniqueMember"
	attrMemberUID    = "memberUid"
)

// parseURL is the address to dial and, for ldaps, the TLS configuration.
// Credentials, paths and queries in the URL are refused: the bind DN and
// password have their own fields, and an LDAP URL's path would be a search.
func parseURL(raw string, ca []byte) (string, *tls.Config, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", nil, errors.New("directory: URL is not a URL")
	}
	port := map[string]string{"ldap": ldap.DefaultLdapPort, "ldaps": ldap.DefaultLdapsPort}[u.Scheme]
	switch {
	case port == "":
		return "", nil, errors.New("directory: URL scheme must be ldap or ldaps")
	case u.User != nil:
		return "", nil, errors.New("directory: URL must not hold credentials; use BindDN and BindPassword")
	case u.Hostname() == "":
		return "", nil, errors.New("directory: URL has no host")
	case (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "":
		return "", nil, errors.New("directory: URL must be scheme://host[:port] only")
	}
	if u.Port() != "" {
		port = u.Port()
	}
	addr := net.JoinHostPort(u.Hostname(), port)
	if u.Scheme == "ldap" {
		if len(ca) > 0 {
			return "", nil, errors.New("directory: CA is only used with an ldaps URL")
		}
		return addr, nil, nil
	}
	tc, err := tlsConfig(u.Hostname(), ca)
	return addr, tc, err
}

func tlsConfig(host string, ca []byte) (*tls.Config, error) {
	tc := &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	if len(ca) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, errors.New("directory: CA holds no PEM certificate")
		}
		tc.RootCAs = pool
	}
	return tc, nil
}

// validateBind refuses a bind DN without a password: LDAP treats that as
// an unauthenticated bind, which succeeds without proving anything. No
// bind DN at all binds anonymously.
func validateBind(cfg Config) error {
	switch {
	case cfg.BindDN == "" && cfg.BindPassword != "":
		return errors.New("directory: BindPassword set without BindDN")
	case cfg.BindDN != "" && cfg.BindPassword == "":
		return errors.New("directory: BindDN set without BindPassword")
	case cfg.BindDN != "":
		if _, err := ldap.ParseDN(cfg.BindDN); err != nil {
			return errors.New("directory: BindDN is not a DN")
		}
	}
	return nil
}

func memberAttribute(name string) (string, error) {
	for _, a := range []string{attrMember, attrUniqueMember, attrMemberUID} {
		if strings.EqualFold(name, a) {
			return a, nil
		}
	}
	return "", fmt.Errorf("directory: MemberAttribute must be %s, %s or %s", attrMember, attrUniqueMember, attrMemberUID)
}

// attributeName is an LDAP attribute description without options: a name
// or a numeric OID (RFC 4512 section 1.4).
var attributeName = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9-]*|[0-9]+(\.[0-9]+)+)$`)

// userLookup checks how subjects are found and returns the UserDN template,
// or nil for a search. memberUid groups hold subjects, not DNs, and need
// neither.
func userLookup(cfg Config, member string) (*dnTemplate, error) {
	byTemplate := cfg.UserDN != ""
	bySearch := cfg.UserSearchBase != "" || cfg.UserSearchAttribute != ""
	switch {
	case byTemplate && bySearch:
		return nil, errors.New("directory: set UserDN or UserSearchBase and UserSearchAttribute, not both")
	case byTemplate:
		t, err := parseTemplate(cfg.UserDN, subjectPlaceholder)
		if err != nil {
			return nil, fmt.Errorf("directory: UserDN %w", err)
		}
		return t, nil
	case bySearch:
		return nil, validateSearch(cfg)
	case member != attrMemberUID:
		return nil, fmt.Errorf("directory: %s groups hold DNs: set UserDN, or UserSearchBase and UserSearchAttribute", member)
	}
	return nil, nil
}

func validateSearch(cfg Config) error {
	if cfg.UserSearchBase == "" || cfg.UserSearchAttribute == "" {
		return errors.New("directory: UserSearchBase and UserSearchAttribute go together")
	}
	if _, err := ldap.ParseDN(cfg.UserSearchBase); err != nil {
		return errors.New("directory: UserSearchBase is not a DN")
	}
	if !attributeName.MatchString(cfg.UserSearchAttribute) {
		return errors.New("directory: UserSearchAttribute is not an attribute name")
	}
	return nil
}
