package giteatest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/dev/testutil"
)

const (
	requestTimeout = 10 * time.Second
	// maxReply bounds what one reply may put into memory or a message.
	maxReply = 1 << 20
)

// client never follows redirects: a redirect from the API is an answer to
// look at, not a place to send a token.
var client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// API sends one request to Gitea's REST API: path is below /api/v1 (with
// its query, values already escaped), token the personal access token it
// carries (none when empty), body marshalled as JSON when not nil. Errors
// name the request, never the token.
func (s *Server) API(method, path, token string, body any) (int, []byte, error) {
	return s.send(method, path, body, func(r *http.Request) {
		if token != "" {
			r.Header.Set("Authorization", "token "+token)
		}
	})
}

func (s *Server) send(method, path string, body any, auth func(*http.Request)) (int, []byte, error) {
	var payload io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		payload = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.URL+"/api/v1"+path, payload)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	auth(req)
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	reply, err := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: reading the reply: %w", method, path, err)
	}
	return resp.StatusCode, reply, nil
}

// MustAPI is API failing t unless the reply's status is one of want.
func (s *Server) MustAPI(t testing.TB, method, path, token string, body any, want ...int) []byte {
	t.Helper()
	status, reply, err := s.API(method, path, token, body)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(want, status) {
		t.Fatalf("%s %s: %d %s, want %v", method, path, status, reply, want)
	}
	return reply
}

// CreateUser makes an active user (by the administrator) and a personal
// access token for it with the scopes read:issue and read:repository,
// created with the user's own basic auth as Gitea requires.
func (s *Server) CreateUser(t testing.TB, name string) User {
	t.Helper()
	u := User{Name: name, Password: testutil.RandomKey(t, "pw-")}
	var created struct {
		ID int64 `json:"id"`
	}
	decode(t, s.MustAPI(t, http.MethodPost, "/admin/users", s.Admin.Token, map[string]any{
		"username": name, "email": name + "@ragcanary.test", "password": u.Password,
		"must_change_password": false, "visibility": "public",
	}, http.StatusCreated), &created)
	u.ID = created.ID
	s.createToken(t, &u)
	return u
}

// createToken creates a personal access token for u with the scopes
// read:issue and read:repository, with u's own basic auth as Gitea
// requires (which, for a directory user, signs it in through LDAP).
func (s *Server) createToken(t testing.TB, u *User) {
	t.Helper()
	if err := s.tryCreateToken(u); err != nil {
		t.Fatal(err)
	}
}

func (s *Server) tryCreateToken(u *User) error {
	path := "/users/" + url.PathEscape(u.Name) + "/tokens"
	status, reply, err := s.send(http.MethodPost, path, map[string]any{
		"name": "ragcanary", "scopes": []string{"read:issue", "read:repository"},
	}, func(r *http.Request) { r.SetBasicAuth(u.Name, u.Password) })
	if err != nil {
		return err
	}
	if status != http.StatusCreated {
		return fmt.Errorf("POST %s: %d %s", path, status, reply)
	}
	var token struct {
		SHA1 string `json:"sha1"`
	}
	if err := json.Unmarshal(reply, &token); err != nil || token.SHA1 == "" {
		return fmt.Errorf("POST %s: no token in the reply", path)
	}
	u.Token = token.SHA1
	return nil
}

// CreateOrg makes a private organisation owned by the administrator.
func (s *Server) CreateOrg(t testing.TB, name string) {
	t.Helper()
	s.MustAPI(t, http.MethodPost, "/orgs", s.Admin.Token,
		map[string]any{"username": name, "visibility": "private"}, http.StatusCreated)
}

// CreateTeam makes a team in org that reads code and issues of only the
// repositories added to it, and returns its ID.
func (s *Server) CreateTeam(t testing.TB, org, name string) int64 {
	t.Helper()
	var team struct {
		ID int64 `json:"id"`
	}
	decode(t, s.MustAPI(t, http.MethodPost, "/orgs/"+url.PathEscape(org)+"/teams", s.Admin.Token, map[string]any{
		"name": name, "permission": "read", "includes_all_repositories": false,
		"units":     []string{"repo.code", "repo.issues"},
		"units_map": map[string]string{"repo.code": "read", "repo.issues": "read"},
	}, http.StatusCreated), &team)
	if team.ID == 0 {
		t.Fatalf("creating team %s/%s: no id in the reply", org, name)
	}
	return team.ID
}

func decode(t testing.TB, reply []byte, into any) {
	t.Helper()
	if err := json.Unmarshal(reply, into); err != nil {
		t.Fatalf("decoding %s: %v", reply, err)
	}
}

// errExited stops waiting: a server that has exited will not answer.
var errExited = errors.New("gitea web exited before serving (its logs follow)")

// waitReady waits until /api/healthz answers 200 (database and cache
// reachable) and an issue search as the administrator answers 200: until
// the bleve indexer is open, search answers 500.
func (s *Server) waitReady(t testing.TB) {
	t.Helper()
	testutil.Eventually(t, readyTimeout, "gitea serving issue search", func() error {
		select {
		case <-s.exited:
			t.Fatalf("%v\n%s", errExited, s.logs())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/api/healthz", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /api/healthz: %d", resp.StatusCode)
		}
		status, reply, err := s.API(http.MethodGet, "/repos/issues/search?q=ready", s.Admin.Token, nil)
		if err != nil {
			return err
		}
		if status != http.StatusOK {
			return fmt.Errorf("issue search: %d %.200s", status, reply)
		}
		return nil
	})
}

// ProhibitLogin sets or clears u's "prohibit login" flag as the
// administrator: how an account is disabled in Gitea without deleting it.
func (s *Server) ProhibitLogin(t testing.TB, u User, prohibit bool) {
	t.Helper()
	s.MustAPI(t, http.MethodPatch, "/admin/users/"+url.PathEscape(u.Name), s.Admin.Token, map[string]any{
		"login_name": u.Name, "source_id": 0, "prohibit_login": prohibit,
	}, http.StatusOK)
}
