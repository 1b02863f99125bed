// Package forgetest is a small in-memory stand-in for a Gitea-like forge's
// REST API (organisation repositories, issues, collaborators, teams) on a
// loopback httptest server, for tests of the REST source. It answers the
// way Gitea's API does for the routes it serves, and can be told to answer
// one route with a 500.
package forgetest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Token is the admin token the forge accepts ("Authorization: token <Token>").
const Token = "forge-admin-token"

// Forge is the stand-in. Its methods are safe for concurrent use.
type Forge struct {
	// URL is the API's base URL, ending in /api/v1.
	URL string

	mu    sync.Mutex
	repos map[string]*repo // by "org/name"
	teams map[int]*team
	fail  map[string]bool // route patterns answered with 500
	calls []string        // "METHOD pattern", in order
}

type repo struct {
	collaborators []string
	issues        []issue
}

type issue struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
	Body   string `json:"body"`
}

type team struct {
	id      int
	name    string
	members []string
	repos   []string
}

// Start serves a forge until the test ends, with the teams named (ids from 1).
func Start(t testing.TB, teams ...string) *Forge {
	t.Helper()
	f := &Forge{repos: map[string]*repo{}, teams: map[int]*team{}, fail: map[string]bool{}}
	for i, name := range teams {
		f.teams[i+1] = &team{id: i + 1, name: name}
	}
	mux := http.NewServeMux()
	for pattern, h := range f.routes() {
		mux.HandleFunc(pattern, f.guard(pattern, h))
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	f.URL = srv.URL + "/api/v1"
	return f
}

// Fail makes the route (a pattern such as
// "DELETE /api/v1/repos/{org}/{repo}/collaborators/{user}") answer 500.
func (f *Forge) Fail(pattern string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[pattern] = true
}

// Repos are the repositories held, as "org/name", sorted.
func (f *Forge) Repos() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for k := range f.repos {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Members are the team's members.
func (f *Forge) Members(teamName string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, tm := range f.teams {
		if tm.name == teamName {
			return slices.Clone(tm.members)
		}
	}
	return nil
}

// Calls are the routes called, "METHOD pattern", in order.
func (f *Forge) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *Forge) guard(pattern string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "token "+Token {
			http.Error(w, `{"message":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		f.mu.Lock()
		f.calls = append(f.calls, pattern)
		failing := f.fail[pattern]
		f.mu.Unlock()
		if failing {
			http.Error(w, `{"message":"internal error"}`, http.StatusInternalServerError)
			return
		}
		h(w, r)
	}
}

const (
	repoPath   = "/api/v1/repos/{org}/{repo}"
	collabPath = repoPath + "/collaborators/{user}"
	issuesPath = repoPath + "/issues"
	teamRepo   = "/api/v1/teams/{id}/repos/{org}/{repo}"
	teamMember = "/api/v1/teams/{id}/members/{user}"
)

func (f *Forge) routes() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"POST /api/v1/orgs/{org}/repos": f.createRepo,
		"GET " + repoPath: f.withRepo(func(w http.ResponseWriter, r *http.Request, _ *repo) {
			reply(w, 200, map[string]any{"name": r.PathValue("repo")})
		}),
		"DELETE " + repoPath:                f.deleteRepo,
		"POST " + issuesPath:                f.withRepo(f.createIssue),
		"GET " + issuesPath:                 f.withRepo(func(w http.ResponseWriter, _ *http.Request, rp *repo) { reply(w, 200, rp.issues) }),
		"PATCH " + issuesPath + "/{number}": f.withRepo(f.editIssue),
		"PUT " + collabPath: f.withRepo(func(w http.ResponseWriter, r *http.Request, rp *repo) {
			rp.collaborators = add(rp.collaborators, r.PathValue("user"))
			w.WriteHeader(204)
		}),
		"DELETE " + collabPath: f.withRepo(func(w http.ResponseWriter, r *http.Request, rp *repo) {
			rp.collaborators = remove(rp.collaborators, r.PathValue("user"))
			w.WriteHeader(204)
		}),
		"GET /api/v1/orgs/{org}/teams/search": f.searchTeams,
		"PUT " + teamRepo:                     f.withTeam(func(tm *team, r *http.Request) { tm.repos = add(tm.repos, r.PathValue("org")+"/"+r.PathValue("repo")) }),
		"DELETE " + teamRepo: f.withTeam(func(tm *team, r *http.Request) {
			tm.repos = remove(tm.repos, r.PathValue("org")+"/"+r.PathValue("repo"))
		}),
		"PUT " + teamMember:    f.withTeam(func(tm *team, r *http.Request) { tm.members = add(tm.members, r.PathValue("user")) }),
		"DELETE " + teamMember: f.withTeam(func(tm *team, r *http.Request) { tm.members = remove(tm.members, r.PathValue("user")) }),
	}
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *Forge) createRepo(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Name string `json:"name"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Name == "" || strings.ContainsAny(in.Name, "/ ") {
		reply(w, 422, map[string]string{"message": "invalid name"})
		return
	}
	key := r.PathValue("org") + "/" + in.Name
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.repos[key] != nil {
		reply(w, 409, map[string]string{"message": "repository already exists"})
		return
	}
	f.repos[key] = &repo{}
	reply(w, 201, map[string]any{"name": in.Name, "full_name": key, "private": true})
}

func (f *Forge) deleteRepo(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("org") + "/" + r.PathValue("repo")
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.repos[key] == nil {
		reply(w, 404, map[string]string{"message": "not found"})
		return
	}
	delete(f.repos, key)
	for _, tm := range f.teams {
		tm.repos = remove(tm.repos, key)
	}
	w.WriteHeader(204)
}

// withRepo runs h on the named repository under the lock, or answers 404.
func (f *Forge) withRepo(h func(http.ResponseWriter, *http.Request, *repo)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		rp := f.repos[r.PathValue("org")+"/"+r.PathValue("repo")]
		if rp == nil {
			reply(w, 404, map[string]string{"message": "not found"})
			return
		}
		h(w, r, rp)
	}
}

func (f *Forge) createIssue(w http.ResponseWriter, r *http.Request, rp *repo) {
	var in issue
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Title == "" {
		reply(w, 422, map[string]string{"message": "invalid issue"})
		return
	}
	in.Number = len(rp.issues) + 1
	rp.issues = append(rp.issues, in)
	reply(w, 201, in)
}

func (f *Forge) editIssue(w http.ResponseWriter, r *http.Request, rp *repo) {
	n, err := strconv.Atoi(r.PathValue("number"))
	if err != nil || n < 1 || n > len(rp.issues) {
		reply(w, 404, map[string]string{"message": "not found"})
		return
	}
	var in issue
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		reply(w, 422, map[string]string{"message": "invalid issue"})
		return
	}
	in.Number = n
	rp.issues[n-1] = in
	reply(w, 201, in)
}

func (f *Forge) searchTeams(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query().Get("q")
	f.mu.Lock()
	defer f.mu.Unlock()
	data := []map[string]any{}
	for id := 1; id <= len(f.teams); id++ {
		if tm := f.teams[id]; strings.Contains(tm.name, q) {
			data = append(data, map[string]any{"id": tm.id, "name": tm.name})
		}
	}
	reply(w, 200, map[string]any{"ok": true, "data": data})
}

// withTeam runs change on the team under the lock and answers 204, or 404.
func (f *Forge) withTeam(change func(*team, *http.Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.Atoi(r.PathValue("id"))
		f.mu.Lock()
		defer f.mu.Unlock()
		tm := f.teams[id]
		if tm == nil {
			reply(w, 404, map[string]string{"message": "not found"})
			return
		}
		change(tm, r)
		w.WriteHeader(204)
	}
}

func add(list []string, v string) []string {
	if slices.Contains(list, v) {
		return list
	}
	return append(list, v)
}

func remove(list []string, v string) []string {
	return slices.DeleteFunc(list, func(s string) bool { return s == v })
}
