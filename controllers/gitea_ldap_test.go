package controllers

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/ldaptest"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/giteatest"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
)

// The directory tests: group data lives in OpenLDAP, Gitea maps an LDAP
// group to the team that reads the canary's repository, and the canary's
// membership changes go to the directory (spec.directory), never to Gitea.
// How long Gitea keeps serving a member removed from the group depends on
// how the member signs in: an LDAP password signs in through the
// directory on every request, and Gitea maps the groups to teams then; a
// personal access token never touches the directory, so the team keeps
// the member until Gitea's sync_external_users task runs.

const (
	ldapGroup = "canary-ldap-readers"
	// giteaSyncEvery is the test's sync_external_users schedule (Gitea's
	// default is @midnight).
	giteaSyncEvery = 10 * time.Second
	// watchEvery paces the observer.
	watchEvery = 50 * time.Millisecond
)

// giteaLDAPFixture is one directory and one Gitea that takes its users and
// the group's team membership from it.
type giteaLDAPFixture struct {
	dir       *ldaptest.Server
	srv       *giteatest.Server
	team      int64
	users     map[string]giteatest.User // by name: the directory's users signed in once
	passwords map[string]string
	mallory   giteatest.User
}

func startGiteaLDAP(t *testing.T, members ...string) *giteaLDAPFixture {
	t.Helper()
	f := &giteaLDAPFixture{dir: ldaptest.Start(t), users: map[string]giteatest.User{}, passwords: map[string]string{}}
	for _, name := range members {
		f.passwords[name] = testutil.RandomKey(t, "pw-")
		f.dir.AddUser(t, name, f.passwords[name])
	}
	f.dir.AddGroup(t, ldapGroup, "groupOfNames")
	f.srv = giteatest.Start(t, giteatest.SyncExternalUsersEvery(giteaSyncEvery))
	f.srv.CreateOrg(t, giteaOrg)
	f.team = f.srv.CreateTeam(t, giteaOrg, ldapGroup)
	f.srv.AddLDAPSource(t, giteatest.LDAPSource{
		URL: f.dir.URL(), BindDN: f.dir.BindDN(), BindPassword: f.dir.BindPassword(),
		UserSearchBase: f.dir.PeopleDN(), UserFilter: "(&(objectClass=inetOrgPerson)(uid=%s))",
		GroupSearchBase: f.dir.GroupsDN(),
		GroupTeams:      map[string]map[string][]string{f.groupDN(): {giteaOrg: {ldapGroup}}},
	})
	for _, name := range members {
		f.users[name] = f.srv.SignInLDAP(t, name, f.passwords[name])
	}
	f.mallory = f.srv.CreateUser(t, "mallory")
	return f
}

func (f *giteaLDAPFixture) groupDN() string { return "cn=" + ldapGroup + "," + f.dir.GroupsDN() }

// corpus is the docs' Gitea Corpus with the directory as its group
// authority; basic probes the search surface with the personas' LDAP
// passwords (HTTP basic) instead of their tokens.
func (f *giteaLDAPFixture) corpus(t *testing.T, ns, name string, basic bool) *v1alpha1.Corpus {
	t.Helper()
	c := giteaDocsCorpus(t, f.srv.URL)
	c.Namespace, c.Name = ns, name
	c.Spec.Directory = &v1alpha1.Directory{Type: v1alpha1.DirectoryLDAP, LDAP: &v1alpha1.LDAPDirectory{
		URL: f.dir.URL(), BindDN: f.dir.BindDN(),
		BindPasswordSecretRef: v1alpha1.SecretKeyReference{Name: "directory", Key: "password"},
		GroupDN:               "cn={group}," + f.dir.GroupsDN(), MemberAttribute: v1alpha1.LDAPMember,
		UserDN: "uid={subject}," + f.dir.PeopleDN(),
	}}
	if basic {
		c.Spec.Surfaces.Search.CredentialHeader.Prefix = "Basic "
	}
	return c
}

// namespace holds both corpora, the Secrets and the personas: each
// directory user twice (its token, its password) and mallory, the control.
func (f *giteaLDAPFixture) namespace(t *testing.T) string {
	t.Helper()
	ns := newNamespace(t)
	createSecret(t, ns, "gitea-admin", "token", f.srv.Admin.Token)
	createSecret(t, ns, "directory", "password", f.dir.BindPassword())
	createSecret(t, ns, "mallory-cred", "token", f.mallory.Token)
	crCreate(t, objects.Persona(ns, "mallory", "mallory"))
	// The control on the password corpus signs in with its password too.
	createSecret(t, ns, "mallory-password", "token", base64.StdEncoding.EncodeToString([]byte("mallory:"+f.mallory.Password)))
	controlPW := objects.Persona(ns, "mallory-password", "mallory")
	controlPW.Spec.CredentialSecretRef = &v1alpha1.SecretKeyReference{Name: "mallory-password", Key: "token"}
	crCreate(t, controlPW)
	for name, u := range f.users {
		createSecret(t, ns, name+"-token", "token", u.Token)
		createSecret(t, ns, name+"-password", "token", base64.StdEncoding.EncodeToString([]byte(name+":"+f.passwords[name])))
		for _, cred := range []string{"token", "password"} {
			p := objects.Persona(ns, name+"-"+cred, name)
			p.Spec.CredentialSecretRef = &v1alpha1.SecretKeyReference{Name: name + "-" + cred, Key: "token"}
			crCreate(t, p)
		}
	}
	crCreate(t, f.corpus(t, ns, "gitea-token", false))
	crCreate(t, f.corpus(t, ns, "gitea-password", true))
	return ns
}

// isMember asks Gitea, as its administrator, whether name is on the team:
// the access the group gives, read without signing name in.
func (f *giteaLDAPFixture) isMember(ctx context.Context, name string) (bool, error) {
	status, _, err := f.srv.API(http.MethodGet, fmt.Sprintf("/teams/%d/members/%s", f.team, url.PathEscape(name)), f.srv.Admin.Token, nil)
	switch {
	case err != nil:
		return false, err
	case status == http.StatusOK:
		return true, nil
	case status == http.StatusNotFound:
		return false, nil
	default:
		return false, fmt.Errorf("team membership: status %d", status)
	}
}

// TestGiteaLDAPGroupSync: a RemoveFromGroup canary whose membership lives
// in OpenLDAP, once for a persona that reads Gitea with its LDAP password
// and once for one that reads with a personal access token. Both end
// SLOMet with bounds containing the instant an observer (Gitea's team
// membership, read as the administrator) saw the access end; the token's
// bounds reach Gitea's next sync_external_users run, the password's do not
// wait for it.
func TestGiteaLDAPGroupSync(t *testing.T) {
	t.Parallel() // its own Gitea, directory and namespace; its bounds are checked against its own observer, so load widens them but cannot move them
	f := startGiteaLDAP(t, "bob", "carol")
	ns := f.namespace(t)
	type path struct{ persona, user, corpus, control string }
	paths := []path{{"bob-token", "bob", "gitea-token", "mallory"}, {"carol-password", "carol", "gitea-password", "mallory-password"}}
	bounds := map[string]*v1alpha1.ExclusionBounds{}
	for _, p := range paths {
		t.Run(p.persona, func(t *testing.T) {
			run := objects.CanaryRun(ns, p.persona, objects.OnCorpus(p.corpus), objects.Revoke(v1alpha1.RevokeRemoveFromGroup, ldapGroup),
				objects.Every(300*time.Millisecond, 2), objects.Timeouts(60*time.Second, 60*time.Second))
			run.Spec.PersonaRef.Name = p.persona
			run.Spec.ControlPersonaRefs = []v1alpha1.LocalObjectReference{{Name: p.control}}
			crCreate(t, run)
			obs := watchAccess(t, func(ctx context.Context) (bool, error) { return f.isMember(ctx, p.user) })
			got := giteaWaitDone(t, run)
			if got.Status.Verdict != v1alpha1.VerdictSLOMet {
				t.Fatalf("verdict %s (%s), want SLOMet", got.Status.Verdict, got.Status.Message)
			}
			seen, gone := obs.stop(t)
			m := crSurface(t, got, v1alpha1.SurfaceSearch)
			if !m.Excluded || m.Bounds == nil || m.Bounds.Lower == nil || m.Bounds.Upper == nil {
				t.Fatalf("search not excluded with both bounds: %+v", m)
			}
			req, ack := got.Status.RevokeRequestedTime.Time, got.Status.RevokeAcknowledgedTime.Time
			lower, upper := m.Bounds.Lower.Duration, m.Bounds.Upper.Duration
			t.Logf("%s: team membership last seen %s after the LDAP change, gone by %s; measured [%s, %s]; visible after %s; probes %+v",
				p.persona, seen.Sub(req), gone.Sub(req), lower, upper, got.Status.TimeToVisibility.Duration, m.Probes)
			if (lower > 0 && ack.Add(lower).After(gone)) || req.Add(upper).Before(seen) {
				t.Errorf("measured [%s, %s] does not contain the observed end of access between %s and %s after the request",
					lower, upper, seen.Sub(req), gone.Sub(req))
			}
			if m.Probes.Errors != 0 {
				t.Errorf("probes %+v, want no errors", m.Probes)
			}
			if got.Status.IsolationViolations != 0 {
				t.Errorf("control persona saw the canary %d times", got.Status.IsolationViolations)
			}
			if members := f.dir.Members(t, ldapGroup); containsUser(members, p.user) {
				t.Errorf("the directory group still lists %s after cleanup: %v", p.user, members)
			}
			bounds[p.persona] = m.Bounds
		})
	}
	// A password signs in through LDAP on the next probe, so its exclusion
	// comes well inside one sync interval; a token waits for the sync,
	// whenever in its interval the LDAP change fell (the observer's
	// bracket, checked above, is where the sync ran).
	if pw := bounds["carol-password"]; pw == nil || pw.Upper.Duration >= giteaSyncEvery/2 {
		t.Errorf("password path bounds %+v, want exclusion well inside one sync interval (%s)", pw, giteaSyncEvery)
	}
}

// watchAccess polls whether access holds every watchEvery, until the test stops
// it: far more often than the runs probe, and gentle on Gitea.
func watchAccess(t *testing.T, poll func(context.Context) (bool, error)) *observer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	o := &observer{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(o.done)
		tick := time.NewTicker(watchEvery)
		defer tick.Stop()
		for ctx.Err() == nil {
			start := time.Now()
			seen, err := poll(ctx)
			o.record(start, time.Now(), seen, err, ctx.Err() != nil)
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(cancel)
	return o
}

// containsUser reports whether a group's member DNs name user's entry.
func containsUser(members []string, user string) bool {
	for _, m := range members {
		if strings.HasPrefix(strings.ToLower(m), "uid="+strings.ToLower(user)+",") {
			return true
		}
	}
	return false
}
