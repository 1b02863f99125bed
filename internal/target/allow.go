package target

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path"
	"strings"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// Schemes an allowlist entry may name: HTTP drivers, and the DSN and gRPC
// endpoints of drivers that are not HTTP.
var allowedSchemes = map[string]bool{"http": true, "https": true, "postgres": true, "grpc": true, "ldap": true, "ldaps": true}

// Allowlist is the set of targets the operator may call. The zero value
// allows nothing; AllowAny is only for a deliberate --allow-any-target.
type Allowlist struct {
	prefixes []*url.URL
	any      bool
}

// AllowAny returns an allowlist that admits every well-formed target.
func AllowAny() Allowlist { return Allowlist{any: true} }

// ParseAllowlist parses and normalises entries such as
// "https://rag.internal/tenant-a/". Entries with userinfo, no host, a query
// or an unknown scheme are refused, so a typo cannot widen the list.
func ParseAllowlist(entries []string) (Allowlist, error) {
	var a Allowlist
	for _, e := range entries {
		u, err := normalize(e)
		if err != nil {
			return Allowlist{}, fmt.Errorf("allowed target URL %q: %w", redactURL(e), err)
		}
		a.prefixes = append(a.prefixes, u)
	}
	return a, nil
}

// Empty reports whether the list admits nothing.
func (a Allowlist) Empty() bool { return !a.any && len(a.prefixes) == 0 }

// String lists the entries, for start-up logs.
func (a Allowlist) String() string {
	if a.any {
		return "*"
	}
	out := make([]string, len(a.prefixes))
	for i, p := range a.prefixes {
		out[i] = p.String()
	}
	return strings.Join(out, ",")
}

// Check parses and normalises raw and returns it when a prefix admits it.
// field names the spec field for the message. Prefixes match on whole path
// segments after dot segments are resolved, so ".../tenant-a/../tenant-b/"
// is tenant-b, and "/tenant-a" does not admit "/tenant-ab".
func (a Allowlist) Check(field, raw string) (*url.URL, error) {
	u, err := normalize(raw)
	if err != nil {
		return nil, Stall(v1alpha1.ReasonInvalidURL, "%s: %v", field, err)
	}
	if a.any {
		return u, nil
	}
	for _, p := range a.prefixes {
		if admits(p, u) {
			return u, nil
		}
	}
	return nil, Stall(v1alpha1.ReasonURLNotAllowed,
		"%s: target %s://%s%s is not in the operator's allowed target URLs; ask the operator admin to add it to --allowed-target-urls",
		field, u.Scheme, u.Host, u.EscapedPath())
}

// normalize parses an absolute URL and puts it in the form prefixes are
// compared in: lower-case scheme and host, default ports dropped, dot
// segments resolved, a path of anything but unreserved characters refused.
func normalize(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	switch {
	case err != nil:
		return nil, fmt.Errorf("not a valid URL")
	case u.User != nil:
		return nil, fmt.Errorf("must not embed credentials (user:password@); use a credential Secret")
	case !allowedSchemes[strings.ToLower(u.Scheme)]:
		return nil, fmt.Errorf("must be an absolute http or https URL (postgres://, grpc:// and ldap(s):// only where a driver, engine or directory uses them)")
	case u.Opaque != "" || u.Hostname() == "":
		return nil, fmt.Errorf("must be an absolute URL with a host")
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("must not have a query or fragment")
	}
	if !plainPath(u) {
		return nil, errPathCharacters
	}
	out := &url.URL{Scheme: strings.ToLower(u.Scheme), Host: hostPort(u)}
	p := u.Path
	if p != "" {
		clean := path.Clean("/" + p)
		if strings.HasSuffix(p, "/") && clean != "/" {
			clean += "/"
		}
		p = clean
	}
	if dotDotPrefixed(p) {
		return nil, errPathCharacters
	}
	out.Path = p
	return out, nil
}

// errPathCharacters says what a path may hold. Servers disagree on what the
// rest means ("..;" is ".." to a servlet container, "\" is "/" to some,
// "%252e" is "." to one that decodes twice), so anything the prefix check
// and the server could read differently is refused, not interpreted.
var errPathCharacters = errors.New(`its path may hold only letters, digits, "-", ".", "_", "~" and "/" ` +
	`(no percent-encoding, ";" or "\"), and no segment may start with ".." unless it is exactly ".."`)

// plainPath reports whether the path, as written, holds only RFC 3986
// unreserved characters and slashes. EscapedPath keeps the original
// encoding, so a percent sign in the input is seen even when it decodes to
// an unreserved character.
func plainPath(u *url.URL) bool {
	if strings.Contains(u.EscapedPath(), "%") {
		return false
	}
	for _, r := range u.Path {
		if !unreservedOrSlash(r) {
			return false
		}
	}
	return true
}

func unreservedOrSlash(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		r == '-' || r == '.' || r == '_' || r == '~' || r == '/'
}

// dotDotPrefixed reports a segment that is not ".." but starts with it
// ("...", "..x"): path.Clean leaves it alone, and some servers do not.
func dotDotPrefixed(cleaned string) bool {
	for _, seg := range strings.Split(cleaned, "/") {
		if strings.HasPrefix(seg, "..") {
			return true
		}
	}
	return false
}

func hostPort(u *url.URL) string {
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if port == "" {
		if strings.Contains(host, ":") {
			return "[" + host + "]"
		}
		return host
	}
	return net.JoinHostPort(host, port)
}

// admits compares scheme, host and port exactly and the path on segments.
func admits(prefix, u *url.URL) bool {
	if prefix.Scheme != u.Scheme || prefix.Host != u.Host {
		return false
	}
	want := strings.TrimSuffix(prefix.Path, "/")
	got := u.Path
	return want == "" || got == want || strings.HasPrefix(got, want+"/")
}

// redactURL drops userinfo from a URL for a message.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable)"
	}
	if u.User != nil {
		u.User = url.User("redacted")
	}
	return u.String()
}

// AllowlistFromFlags reads the --allowed-target-urls / --allow-any-target
// pair the manager and the CLI share: one of them is required, both is an
// error. list is comma-separated.
func AllowlistFromFlags(list string, anyTarget bool) (Allowlist, error) {
	var entries []string
	for _, e := range strings.Split(list, ",") {
		if e = strings.TrimSpace(e); e != "" {
			entries = append(entries, e)
		}
	}
	switch {
	case anyTarget && len(entries) > 0:
		return Allowlist{}, fmt.Errorf("--allow-any-target and --allowed-target-urls are exclusive")
	case anyTarget:
		return AllowAny(), nil
	case len(entries) == 0:
		return Allowlist{}, fmt.Errorf("--allowed-target-urls is required (the URL prefixes ragcanary may call, e.g. https://rag.internal/); or pass --allow-any-target to allow every target")
	}
	return ParseAllowlist(entries)
}
