package giteatest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/dev/testutil"
)

// lagBound is how long a change may take to reach issue search before the
// test fails: far above what was measured, well below a test's timeout.
const lagBound = 30 * time.Second

// TestGiteaIssueSearchFollowsCollaborators plants an issue in a private
// repository and watches, as a persona polling issue search every 20 ms,
// how long each grant and revocation takes to change what search returns:
// a read collaborator, a read team of the organisation, and deleting the
// repository. A control user never granted sees nothing throughout.
func TestGiteaIssueSearchFollowsCollaborators(t *testing.T) {
	s := Start(t)
	began := time.Now()
	const org, repo = "canaries", "docs"
	s.CreateOrg(t, org)
	persona, control := s.CreateUser(t, "persona"), s.CreateUser(t, "control")
	word := strings.ToLower(testutil.RandomKey(t, "canary"))
	s.MustAPI(t, http.MethodPost, "/orgs/"+org+"/repos", s.Admin.Token,
		map[string]any{"name": repo, "private": true}, http.StatusCreated)
	s.MustAPI(t, http.MethodPost, "/repos/"+org+"/"+repo+"/issues", s.Admin.Token,
		map[string]any{"title": "planted " + word, "body": "the canary word is " + word}, http.StatusCreated)
	type lag struct {
		what string
		took time.Duration
	}
	lags := []lag{{"issue indexed (admin finds it)", s.waitSearch(t, s.Admin, word, true)}}

	// The index holds the issue now: an empty answer is the permission check.
	s.mustSee(t, persona, word, false)
	s.mustSee(t, control, word, false)

	collaborator := "/repos/" + org + "/" + repo + "/collaborators/" + persona.Name
	s.MustAPI(t, http.MethodPut, collaborator, s.Admin.Token, map[string]any{"permission": "read"}, http.StatusNoContent)
	lags = append(lags, lag{"collaborator added -> visible", s.waitSearch(t, persona, word, true)})
	s.mustSee(t, control, word, false)
	s.MustAPI(t, http.MethodDelete, collaborator, s.Admin.Token, nil, http.StatusNoContent)
	lags = append(lags, lag{"collaborator removed -> invisible", s.waitSearch(t, persona, word, false)})

	team := s.CreateTeam(t, org, "readers")
	s.MustAPI(t, http.MethodPut, fmt.Sprintf("/teams/%d/repos/%s/%s", team, org, repo), s.Admin.Token, nil, http.StatusNoContent)
	s.mustSee(t, persona, word, false) // a team the persona is not in grants nothing
	member := fmt.Sprintf("/teams/%d/members/%s", team, persona.Name)
	s.MustAPI(t, http.MethodPut, member, s.Admin.Token, nil, http.StatusNoContent)
	lags = append(lags, lag{"team member added -> visible", s.waitSearch(t, persona, word, true)})
	s.MustAPI(t, http.MethodDelete, member, s.Admin.Token, nil, http.StatusNoContent)
	lags = append(lags, lag{"team member removed -> invisible", s.waitSearch(t, persona, word, false)})

	s.MustAPI(t, http.MethodPut, collaborator, s.Admin.Token, map[string]any{"permission": "read"}, http.StatusNoContent)
	s.waitSearch(t, persona, word, true)
	s.MustAPI(t, http.MethodDelete, "/repos/"+org+"/"+repo, s.Admin.Token, nil, http.StatusNoContent)
	lags = append(lags, lag{"repository deleted -> invisible", s.waitSearch(t, persona, word, false)})
	s.mustSee(t, s.Admin, word, false)

	for _, l := range lags {
		t.Logf("%-36s %s", l.what, l.took.Round(time.Millisecond))
	}
	t.Logf("test body after start: %s", time.Since(began).Round(time.Millisecond))
}

// searchHits counts the issues whose title holds word among those issue
// search returns to u. A reply other than 200 is an error, never "none".
func (s *Server) searchHits(u User, word string) (int, error) {
	status, reply, err := s.API(http.MethodGet, "/repos/issues/search?limit=50&q="+url.QueryEscape(word), u.Token, nil)
	if err != nil {
		return 0, err
	}
	if status != http.StatusOK {
		return 0, fmt.Errorf("issue search as %s: %d %.200s", u.Name, status, reply)
	}
	var issues []struct {
		Title string `json:"title"`
	}
	if err := json.Unmarshal(reply, &issues); err != nil {
		return 0, fmt.Errorf("issue search as %s: %w", u.Name, err)
	}
	n := 0
	for _, i := range issues {
		if strings.Contains(i.Title, word) {
			n++
		}
	}
	return n, nil
}

// waitSearch polls issue search as u until it shows (or no longer shows)
// the issue holding word, and returns how long that took after the change
// that was just made.
func (s *Server) waitSearch(t *testing.T, u User, word string, visible bool) time.Duration {
	t.Helper()
	start := time.Now()
	testutil.Eventually(t, lagBound, fmt.Sprintf("%s sees the issue: %t", u.Name, visible), func() error {
		n, err := s.searchHits(u, word)
		if err != nil {
			return err
		}
		if (n > 0) != visible {
			return fmt.Errorf("%s sees %d matching issues", u.Name, n)
		}
		return nil
	})
	return time.Since(start)
}

// mustSee checks at once what search shows u.
func (s *Server) mustSee(t *testing.T, u User, word string, visible bool) {
	t.Helper()
	n, err := s.searchHits(u, word)
	if err != nil {
		t.Fatal(err)
	}
	if (n > 0) != visible {
		t.Fatalf("%s sees %d issues holding %s, want visible=%t", u.Name, n, word, visible)
	}
}

func TestMissingBinaryNamesTheMakeTarget(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	t.Setenv("RAGCANARY_GITEA", "")
	if _, _, err := binary(); err == nil || !strings.Contains(err.Error(), "make gitea-tools") {
		t.Errorf("binary() = %v, want an error naming make gitea-tools", err)
	}
	// A binary without the assets the Makefile copies beside it is not enough.
	if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "bin", "gitea"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, err := binary(); err == nil || !strings.Contains(err.Error(), "make gitea-tools") {
		t.Errorf("binary() without bin/gitea-assets = %v, want an error naming make gitea-tools", err)
	}
}
