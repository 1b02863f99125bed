package giteatest

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/dev/ldaptest"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
)

// TestLDAPGroupsMapToTeams: a directory user signs in to Gitea with its
// LDAP password and lands on the team its group maps to. Removed from the
// group in the directory, it keeps the team while it only uses its token,
// until Gitea's sync_external_users run takes it off; a sign-in with its
// password would have done so at once.
func TestLDAPGroupsMapToTeams(t *testing.T) {
	const every = 2 * time.Second
	dir := ldaptest.Start(t)
	pw := testutil.RandomKey(t, "pw-")
	userDN := dir.AddUser(t, "dora", pw)
	dir.AddGroup(t, "readers", ldaptest.GroupOfNames, userDN)
	s := Start(t, SyncExternalUsersEvery(every))
	s.CreateOrg(t, "canaries")
	team := s.CreateTeam(t, "canaries", "readers")
	s.AddLDAPSource(t, LDAPSource{URL: dir.URL(), BindDN: dir.BindDN(), BindPassword: dir.BindPassword(),
		UserSearchBase: dir.PeopleDN(), UserFilter: "(&(objectClass=inetOrgPerson)(uid=%s))", GroupSearchBase: dir.GroupsDN(),
		GroupTeams: map[string]map[string][]string{dir.GroupDN("readers"): {"canaries": {"readers"}}}})
	dora := s.SignInLDAP(t, "dora", pw)
	member := func() (bool, error) {
		status, _, err := s.API(http.MethodGet, fmt.Sprintf("/teams/%d/members/dora", team), s.Admin.Token, nil)
		if err != nil || (status != http.StatusOK && status != http.StatusNotFound) {
			return false, fmt.Errorf("team membership: %d %v", status, err)
		}
		return status == http.StatusOK, nil
	}
	if in, err := member(); err != nil || !in {
		t.Fatalf("after signing in with its LDAP password dora is on the team: %v, err %v; want true", in, err)
	}
	dir.RemoveMember(t, "readers", userDN)
	removed := time.Now()
	// The token reads without touching the directory: dora stays on the
	// team until a sync runs, then not.
	if _, _, err := s.API(http.MethodGet, "/repos/issues/search?q=x", dora.Token, nil); err != nil {
		t.Fatal(err)
	}
	testutil.EventuallyEvery(t, 3*every+10*time.Second, 100*time.Millisecond, "the sync took dora off the team", func() error {
		in, err := member()
		if err != nil {
			return err
		}
		if in {
			return fmt.Errorf("still on the team %s after the change", time.Since(removed).Round(time.Millisecond))
		}
		return nil
	})
	t.Logf("a sync every %s took dora off the team %s after the LDAP change", every, time.Since(removed).Round(time.Millisecond))
}
