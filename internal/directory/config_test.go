package directory

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/go-ldap/ldap/v3"
)

// validConfig is a groupOfNames directory found by the UserDN template.
func validConfig() Config {
	return Config{
		URL:             "ldap://directory.example:389",
		BindDN:          "cn=admin,dc=example,dc=org",
		BindPassword:    "s3cret",
		GroupDN:         "cn={group},ou=groups,dc=example,dc=org",
		MemberAttribute: "member",
		UserDN:          "uid={subject},ou=people,dc=example,dc=org",
	}
}

func TestNewValidates(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		// want is a fragment of the error, "" for a valid config.
		want string
	}{
		{"valid template", func(*Config) {}, ""},
		{"valid search", func(c *Config) {
			c.UserDN, c.UserSearchBase, c.UserSearchAttribute = "", "ou=people,dc=example,dc=org", "uid"
		}, ""},
		{"memberUid needs no user lookup", func(c *Config) { c.MemberAttribute, c.UserDN = "memberuid", "" }, ""},
		{"anonymous", func(c *Config) { c.BindDN, c.BindPassword = "", "" }, ""},
		{"ldaps without CA", func(c *Config) { c.URL = "ldaps://directory.example" }, ""},
		{"ldaps with CA", func(c *Config) { c.URL, c.CA = "ldaps://directory.example", testCA(t) }, ""},
		{"ipv6 host", func(c *Config) { c.URL = "ldap://[::1]:1389" }, ""},
		{"http scheme", func(c *Config) { c.URL = "http://directory.example" }, "scheme must be ldap or ldaps"},
		{"ldapi scheme", func(c *Config) { c.URL = "ldapi:///var/run/slapd" }, "scheme must be ldap or ldaps"},
		{"credentials in URL", func(c *Config) { c.URL = "ldap://admin:pw@directory.example" }, "must not hold credentials"},
		{"no host", func(c *Config) { c.URL = "ldap://:389" }, "no host"},
		{"search in URL", func(c *Config) { c.URL = "ldap://directory.example/dc=example??sub" }, "scheme://host[:port] only"},
		{"CA with plain ldap", func(c *Config) { c.CA = testCA(t) }, "only used with an ldaps URL"},
		{"CA not PEM", func(c *Config) { c.URL, c.CA = "ldaps://directory.example", []byte("nope") }, "no PEM certificate"},
		{"bind DN without password", func(c *Config) { c.BindPassword = "" }, "BindDN set without BindPassword"},
		{"password without bind DN", func(c *Config) { c.BindDN = "" }, "BindPassword set without BindDN"},
		{"bind DN not a DN", func(c *Config) { c.BindDN = "admin" }, "BindDN is not a DN"},
		{"group template without placeholder", func(c *Config) { c.GroupDN = "cn=staff,dc=example,dc=org" }, "{group} exactly once"},
		{"group template twice", func(c *Config) { c.GroupDN = "cn={group},ou={group},dc=org" }, "{group} exactly once"},
		{"group placeholder inside a value", func(c *Config) { c.GroupDN = "cn=team-{group},dc=org" }, "whole attribute value"},
		{"group template not a DN", func(c *Config) { c.GroupDN = "{group}" }, "not a DN"},
		{"unknown member attribute", func(c *Config) { c.MemberAttribute = "owner" }, "MemberAttribute must be"},
		{"member without user lookup", func(c *Config) { c.UserDN = "" }, "hold DNs"},
		{"template and search", func(c *Config) { c.UserSearchBase, c.UserSearchAttribute = "dc=org", "uid" }, "not both"},
		{"search base alone", func(c *Config) { c.UserDN, c.UserSearchBase = "", "dc=org" }, "go together"},
		{"search attribute not a name", func(c *Config) {
			c.UserDN, c.UserSearchBase, c.UserSearchAttribute = "", "dc=org", "uid=*)("
		}, "not an attribute name"},
		{"user template without placeholder", func(c *Config) { c.UserDN = "uid=alice,dc=org" }, "{subject} exactly once"},
		{"negative timeout", func(c *Config) { c.Timeout = -time.Second }, "must not be negative"},
		{"too many values", func(c *Config) { c.MaxValues = MaxMaxValues + 1 }, "at most"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := validConfig()
			tc.edit(&cfg)
			_, err := New(cfg)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("New: got %v, want an error containing %q", err, tc.want)
			case err != nil && strings.Contains(err.Error(), cfg.BindPassword) && cfg.BindPassword != "":
				t.Fatalf("New's error %q holds the password", err)
			}
		})
	}
}

func TestNewDefaults(t *testing.T) {
	d, err := New(validConfig())
	if err != nil {
		t.Fatal(err)
	}
	if d.cfg.Timeout != DefaultTimeout || d.cfg.MaxEntries != DefaultMaxEntries || d.cfg.MaxValues != DefaultMaxValues {
		t.Fatalf("defaults: %s", d.cfg)
	}
	if d.addr != "directory.example:389" || d.timeLimit != 10 {
		t.Fatalf("addr %q timeLimit %d", d.addr, d.timeLimit)
	}
	cfg := validConfig()
	cfg.URL, cfg.Timeout = "ldaps://directory.example", 1500*time.Millisecond
	if d, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	if d.addr != "directory.example:636" || d.tls == nil || d.tls.ServerName != "directory.example" || d.timeLimit != 2 {
		t.Fatalf("ldaps: addr %q tls %v timeLimit %d", d.addr, d.tls, d.timeLimit)
	}
}

// Printing a Config, however, never shows the password.
func TestConfigPrintsNoPassword(t *testing.T) {
	cfg := validConfig()
	cfg.URL = "ldap://admin:" + cfg.BindPassword + "@directory.example" // refused by New, but printable
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		if out := fmt.Sprintf(verb, cfg); strings.Contains(out, cfg.BindPassword) || !strings.Contains(out, cfg.BindDN) {
			t.Fatalf("%s printed %s", verb, out)
		}
	}
}

func TestTemplateRendersEscapedAndMapsBack(t *testing.T) {
	tmpl, err := parseTemplate("uid={subject},ou=people,dc=example,dc=org", subjectPlaceholder)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		subject string
		// dn is what render must give: every DN special escaped, so the
		// subject stays one attribute value.
		dn string
	}{
		{"alice", "uid=alice,ou=people,dc=example,dc=org"},
		{"a,b=c", `uid=a\,b=c,ou=people,dc=example,dc=org`},
		{"*)(uid=*", "uid=*)(uid=*,ou=people,dc=example,dc=org"},
		{`x+cn=admin\`, `uid=x\+cn=admin\\,ou=people,dc=example,dc=org`},
		{" #lead", `uid=\ #lead,ou=people,dc=example,dc=org`},
		{"#hash", `uid=\#hash,ou=people,dc=example,dc=org`},
	} {
		got := tmpl.render(tc.subject)
		if got != tc.dn {
			t.Errorf("render(%q) = %q, want %q", tc.subject, got, tc.dn)
		}
		if back, ok := tmpl.value(got); !ok || back != tc.subject {
			t.Errorf("value(%q) = %q, %v; want %q", got, back, ok, tc.subject)
		}
	}
}

func TestTemplateValueRejectsOtherDNs(t *testing.T) {
	tmpl, err := parseTemplate("uid={subject},ou=people,dc=example,dc=org", subjectPlaceholder)
	if err != nil {
		t.Fatal(err)
	}
	for dn, want := range map[string]string{
		"UID=Alice,OU=People,DC=Example,DC=Org":           "Alice", // DNs compare case-insensitively
		"uid=alice,ou=other,dc=example,dc=org":            "",
		"cn=alice,ou=people,dc=example,dc=org":            "",
		"uid=alice+cn=x,ou=people,dc=example,dc=org":      "",
		"uid=alice,ou=deeper,ou=people,dc=example,dc=org": "",
		"cn=nobody": "",
		"not a dn":  "",
	} {
		got, ok := tmpl.value(dn)
		if ok != (want != "") || got != want {
			t.Errorf("value(%q) = %q, %v; want %q", dn, got, ok, want)
		}
	}
}

func TestRDNFilterEscapes(t *testing.T) {
	dn := mustDN(t, `uid=*)(uid=*,ou=people,dc=org`)
	if got, _ := rdnFilter(dn.RDNs[0]); got != `(uid=\2a\29\28uid=\2a)` {
		t.Fatalf("rdnFilter = %s", got)
	}
	dn = mustDN(t, `cn=a+sn=b,dc=org`)
	if got, _ := rdnFilter(dn.RDNs[0]); got != "(&(cn=a)(sn=b))" {
		t.Fatalf("rdnFilter = %s", got)
	}
}

func TestUniqueMemberOptionalUIDIsDropped(t *testing.T) {
	d := &Directory{cfg: Config{MemberAttribute: attrUniqueMember}}
	if got := d.memberDN("uid=a,dc=org#'0101'B"); got != "uid=a,dc=org" {
		t.Fatalf("memberDN = %s", got)
	}
	d.cfg.MemberAttribute = attrMember
	if got := d.memberDN("uid=a,dc=org#'0101'B"); got != "uid=a,dc=org#'0101'B" {
		t.Fatalf("member values are kept whole, got %s", got)
	}
}

// testCA is a self-signed CA certificate in PEM.
func testCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func mustDN(t *testing.T, s string) *ldap.DN {
	t.Helper()
	dn, err := ldap.ParseDN(s)
	if err != nil {
		t.Fatal(err)
	}
	return dn
}
