package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ragcanary/ragcanary/internal/directory"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// directoryCheckTimeout bounds the bind ragtarget tries at start.
const directoryCheckTimeout = 15 * time.Second

// groupFlags say which directory, if any, group memberships are read from.
type groupFlags struct {
	syncInterval    time.Duration
	url             string
	bindDN          string
	passwordFile    string
	caFile          string
	groupDN         string
	memberAttribute string
	userDN          string
}

func (g *groupFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&g.syncInterval, "groups-sync-interval", ragtarget.DefaultGroupsSyncInterval, "how often group memberships are read from the directory (--groups-ldap-url), as assistants that sync groups from a directory do; a member removed there keeps the group's access until the next read")
	fs.StringVar(&g.url, "groups-ldap-url", "", "ldap://HOST:PORT or ldaps://HOST:PORT of the directory that is the group authority: the members of every principal a document is granted to are read from it, and the contract's group member calls are refused")
	fs.StringVar(&g.bindDN, "groups-ldap-bind-dn", "", "DN ragtarget binds as to read groups; empty binds anonymously")
	fs.StringVar(&g.passwordFile, "groups-ldap-bind-password-file", "", "file holding the bind DN's password (one trailing newline is dropped); never given on the command line")
	fs.StringVar(&g.caFile, "groups-ldap-ca-file", "", "PEM file of the CA that signed an ldaps:// directory's certificate; the system roots when empty")
	fs.StringVar(&g.groupDN, "groups-ldap-group-dn", "", "DN template of a group, with {group} for the granted principal (DN-escaped), e.g. cn={group},ou=groups,dc=example,dc=org")
	fs.StringVar(&g.memberAttribute, "groups-ldap-member-attribute", "member", "attribute listing a group's members: member or uniqueMember (user DNs) or memberUid (the principals themselves)")
	fs.StringVar(&g.userDN, "groups-ldap-user-dn", "", "DN template of a user, with {subject} for the persona principal, e.g. uid={subject},ou=people,dc=example,dc=org; member DNs are mapped back through it (not needed for memberUid)")
}

// set reports whether any directory flag other than the interval was given
// a value.
func (g *groupFlags) set() bool {
	return g.bindDN != "" || g.passwordFile != "" || g.caFile != "" || g.groupDN != "" || g.userDN != "" || g.memberAttribute != "member"
}

// directoryConfig is the directory the flags describe, its password and CA
// read from their files; nil without --groups-ldap-url.
func (g *groupFlags) directoryConfig() (*directory.Config, error) {
	if g.url == "" {
		if g.set() || g.syncInterval != ragtarget.DefaultGroupsSyncInterval {
			return nil, errors.New("--groups-sync-interval and --groups-ldap-* need --groups-ldap-url")
		}
		return nil, nil
	}
	cfg := &directory.Config{URL: g.url, BindDN: g.bindDN, GroupDN: g.groupDN, MemberAttribute: g.memberAttribute, UserDN: g.userDN}
	if g.passwordFile != "" {
		pw, err := os.ReadFile(g.passwordFile)
		if err != nil {
			return nil, fmt.Errorf("--groups-ldap-bind-password-file: %w", err)
		}
		cfg.BindPassword = strings.TrimSuffix(strings.TrimSuffix(string(pw), "\n"), "\r")
	}
	if g.caFile != "" {
		ca, err := os.ReadFile(g.caFile)
		if err != nil {
			return nil, fmt.Errorf("--groups-ldap-ca-file: %w", err)
		}
		cfg.CA = ca
	}
	return cfg, nil
}

// completeGroups opens the directory the flags name and checks that its
// bind works, so a wrong password or address stops ragtarget at start
// instead of failing every sync. Errors never hold the password.
func (o *options) completeGroups() error {
	cfg, err := o.groups.directoryConfig()
	if err != nil || cfg == nil {
		return err
	}
	dir, err := directory.New(*cfg)
	if err != nil {
		return fmt.Errorf("--groups-ldap-*: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), directoryCheckTimeout)
	defer cancel()
	if err := dir.Check(ctx); err != nil {
		_ = dir.Close()
		return fmt.Errorf("the directory at --groups-ldap-url: %w", err)
	}
	o.directory = dir
	o.cfg.Groups = ragtarget.DirectoryGroups(dir)
	o.cfg.GroupsSyncInterval = o.groups.syncInterval
	return nil
}

// closeDirectory releases the directory completeGroups opened, if any.
func (o *options) closeDirectory() {
	if o.directory != nil {
		_ = o.directory.Close()
	}
}
