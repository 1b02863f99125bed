package giteatest

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// Option changes how Start configures Gitea.
type Option func(*options)

type options struct {
	syncEvery       time.Duration
	accessTokenLife time.Duration
}

// SyncExternalUsersEvery runs Gitea's sync_external_users cron task (users
// of LDAP sources and their group→team mapping; @midnight by default)
// every d, whole seconds, at least one.
func SyncExternalUsersEvery(d time.Duration) Option {
	return func(o *options) { o.syncEvery = d }
}

// syncSchedule is the cron line of the sync task, "" for Gitea's default
// (cron off in these tests).
func (o options) syncSchedule() string {
	if o.syncEvery <= 0 {
		return ""
	}
	return fmt.Sprintf("@every %ds", max(int(o.syncEvery/time.Second), 1))
}

// LDAPSource is an LDAP authentication source whose groups map to teams.
type LDAPSource struct {
	// URL is the directory, ldap://127.0.0.1:PORT.
	URL            string
	BindDN         string
	BindPassword   string
	UserSearchBase string
	// UserFilter finds a user signing in; %s is the login name.
	UserFilter      string
	GroupSearchBase string
	// GroupTeams maps a group's DN to an organisation and its teams.
	GroupTeams map[string]map[string][]string
}

// AddLDAPSource adds an LDAP (via BindDN) authentication source with
// Gitea's own CLI: users sign in with their directory password and are
// synchronised; groups (member attribute "member", holding user DNs) map to
// teams, and a user no longer in a mapped group is removed from its team
// (--group-team-map-removal), at the user's next LDAP sign-in and at each
// sync_external_users run. The bind password is on the CLI's command line
// for the command's few seconds: it is the test directory's own.
func (s *Server) AddLDAPSource(t testing.TB, src LDAPSource) {
	t.Helper()
	u, err := url.Parse(src.URL)
	if err != nil || u.Scheme != "ldap" {
		t.Fatalf("AddLDAPSource: %q is not an ldap:// URL", src.URL)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		t.Fatalf("AddLDAPSource: %v", err)
	}
	teams, err := json.Marshal(src.GroupTeams)
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.run("admin", "auth", "add-ldap", "--name", "directory", "--security-protocol", "unencrypted",
		"--host", host, "--port", port, "--bind-dn", src.BindDN, "--bind-password", src.BindPassword,
		"--user-search-base", src.UserSearchBase, "--user-filter", src.UserFilter,
		"--username-attribute", "uid", "--email-attribute", "mail", "--firstname-attribute", "cn",
		"--synchronize-users", "--enable-groups", "--group-search-base-dn", src.GroupSearchBase,
		"--group-member-attribute", "member", "--group-user-attribute", "dn",
		"--group-team-map", string(teams), "--group-team-map-removal")
	if err != nil {
		t.Fatalf("gitea admin auth add-ldap: %v\n%s%s", err, redact(out), s.logs())
	}
}

// SignInLDAP signs a directory user in for the first time, which makes its
// Gitea account (and maps its groups to teams), and creates a personal
// access token for it as CreateUser does.
func (s *Server) SignInLDAP(t testing.TB, name, password string) User {
	t.Helper()
	u := User{Name: name, Password: password}
	if err := s.tryCreateToken(&u); err != nil {
		// The sync task can create the account from the directory at the
		// moment this first sign-in does; the loser fails on the unique
		// name (seen under load). Once the account exists, a sign-in finds
		// it.
		if status, _, _ := s.API(http.MethodGet, "/users/"+url.PathEscape(name), s.Admin.Token, nil); status != http.StatusOK {
			t.Fatal(err)
		}
		s.createToken(t, &u)
	}
	var me struct {
		ID int64 `json:"id"`
	}
	decode(t, s.MustAPI(t, http.MethodGet, "/users/"+url.PathEscape(name), s.Admin.Token, nil, http.StatusOK), &me)
	u.ID = me.ID
	return u
}
