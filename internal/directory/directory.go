// Package directory is the LDAP client that changes and reads group
// membership when a Corpus names a directory as its group authority. Every
// reply is bounded (entries, values, bytes, BER elements, time), referrals
// are refused, values are escaped for DNs and filters, and errors are typed
// and never carry the server's text or the bind password.
//
// Each operation opens its own connection (dial, bind, work, close): the
// callers change membership a few times per canary run, so a pool would
// save little and would have to revalidate connections a server closed.
package directory

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"sync/atomic"
	"time"
)

// Config is one directory as a Corpus (or ragtarget) declares it.
type Config struct {
	URL          string // ldap://host:port or ldaps://host:port
	BindDN       string
	BindPassword string
	CA           []byte // PEM, optional (ldaps)
	// GroupDN is a DN template with one placeholder {group}, e.g.
	// "cn={group},ou=groups,dc=example,dc=org"; the group name is DN-escaped.
	GroupDN string
	// MemberAttribute is member, uniqueMember (values are user DNs) or
	// memberUid (values are the subject itself).
	MemberAttribute string
	// How a subject's entry (its DN) is found: UserDN is a DN template with
	// one placeholder {subject} (DN-escaped); or UserSearchBase +
	// UserSearchAttribute: a subtree search for
	// (<attribute>=<subject, filter-escaped>) that must match exactly one entry.
	UserDN              string
	UserSearchBase      string
	UserSearchAttribute string
	// Dial opens connections; the caller passes one that enforces its
	// address policy (allowlist, denied CIDRs). nil: net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Timeout bounds each operation (default 10s); MaxEntries bounds a
	// search's entries (default 1000); MaxValues bounds a group's member values (default 10000).
	Timeout    time.Duration
	MaxEntries int
	MaxValues  int
}

// String leaves the password out, so printing a Config cannot leak it.
func (c Config) String() string {
	shown := "[unparsable]"
	if u, err := url.Parse(c.URL); err == nil {
		shown = u.Redacted()
	}
	return fmt.Sprintf("{URL:%s BindDN:%s BindPassword:[redacted] GroupDN:%s MemberAttribute:%s UserDN:%s UserSearchBase:%s UserSearchAttribute:%s Timeout:%s MaxEntries:%d MaxValues:%d}",
		shown, c.BindDN, c.GroupDN, c.MemberAttribute, c.UserDN, c.UserSearchBase, c.UserSearchAttribute, c.Timeout, c.MaxEntries, c.MaxValues)
}

// GoString is String, for %#v.
func (c Config) GoString() string { return "directory.Config" + c.String() }

// Defaults and ceilings of the bounds. The ceilings keep the reply budget
// derived from MaxValues (512 bytes a value) within tens of megabytes.
const (
	DefaultTimeout    = 10 * time.Second
	DefaultMaxEntries = 1000
	DefaultMaxValues  = 10000
	MaxMaxEntries     = 100000
	MaxMaxValues      = 100000
)

// Directory changes and reads group membership in one LDAP directory.
type Directory struct {
	cfg    Config
	addr   string
	tls    *tls.Config
	dial   func(ctx context.Context, network, addr string) (net.Conn, error)
	group  *dnTemplate
	user   *dnTemplate // nil when users are found by search
	limits replyLimits
	// timeLimit is Timeout in whole seconds, rounded up, for the server.
	timeLimit int
	closed    atomic.Bool
}

// New validates cfg (URL, CA, DNs, templates, attribute, bounds) and fills
// in defaults. It does no I/O.
func New(cfg Config) (*Directory, error) {
	if err := withDefaults(&cfg); err != nil {
		return nil, err
	}
	d := &Directory{cfg: cfg, dial: cfg.Dial, limits: limitsFor(cfg.MaxValues)}
	d.timeLimit = int(math.Ceil(cfg.Timeout.Seconds()))
	if d.dial == nil {
		d.dial = (&net.Dialer{}).DialContext
	}
	var err error
	if d.addr, d.tls, err = parseURL(cfg.URL, cfg.CA); err != nil {
		return nil, err
	}
	if err := validateBind(cfg); err != nil {
		return nil, err
	}
	if d.group, err = parseTemplate(cfg.GroupDN, groupPlaceholder); err != nil {
		return nil, fmt.Errorf("directory: GroupDN %w", err)
	}
	if d.cfg.MemberAttribute, err = memberAttribute(cfg.MemberAttribute); err != nil {
		return nil, err
	}
	if d.user, err = userLookup(cfg, d.cfg.MemberAttribute); err != nil {
		return nil, err
	}
	return d, nil
}

// Close marks the directory closed; later operations fail. Connections
// live only as long as one operation, so none is left to close.
func (d *Directory) Close() error {
	d.closed.Store(true)
	return nil
}

// do runs one operation on its own connection, within Timeout, and
// classifies whatever error it ends with.
func (d *Directory) do(ctx context.Context, op string, work func(*session) error) error {
	if d.closed.Load() {
		return newError(Permanent, op, 0, reasonClosed, nil)
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	s, err := d.open(ctx, op)
	if err != nil {
		return err
	}
	defer s.close()
	if err := work(s); err != nil {
		return failure(ctx, op, s.guard, err)
	}
	return nil
}

func withDefaults(cfg *Config) error {
	if cfg.Timeout < 0 || cfg.MaxEntries < 0 || cfg.MaxValues < 0 {
		return errors.New("directory: Timeout, MaxEntries and MaxValues must not be negative")
	}
	if cfg.MaxEntries > MaxMaxEntries || cfg.MaxValues > MaxMaxValues {
		return fmt.Errorf("directory: MaxEntries and MaxValues must be at most %d and %d", MaxMaxEntries, MaxMaxValues)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxEntries == 0 {
		cfg.MaxEntries = DefaultMaxEntries
	}
	if cfg.MaxValues == 0 {
		cfg.MaxValues = DefaultMaxValues
	}
	return nil
}
