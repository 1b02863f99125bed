package controllers

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
)

// forge is a small Gitea-shaped source for the REST source's crash-safety
// tests: repositories holding one issue, read collaborators, and an issue
// search filtered by them. lose makes it act on the first create of each
// repository and then answer 500, as if the operator had stopped before
// it could record the reply.
type forge struct {
	lose bool

	mu      sync.Mutex
	repos   map[string]*forgeRepo
	creates map[string]int
}

type forgeRepo struct {
	body    string
	readers map[string]bool
}

// forgeUsers maps the personas' tokens to their logins.
var forgeUsers = map[string]string{testAliceToken: "alice", testMalloryToken: "mallory"}

func startForge(t *testing.T, lose bool) (*forge, string) {
	t.Helper()
	f := &forge{lose: lose, repos: map[string]*forgeRepo{}, creates: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func (f *forge) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) == 1 && parts[0] == "search" {
		f.search(w, r)
		return
	}
	if r.Header.Get("Authorization") != "token "+testSourceToken {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	switch {
	case r.Method == http.MethodPost && len(parts) == 1 && parts[0] == "repos":
		var in struct{ Name, Body string }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Name == "" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		f.creates[in.Name]++
		if f.repos[in.Name] != nil {
			w.WriteHeader(http.StatusConflict)
			return
		}
		f.repos[in.Name] = &forgeRepo{body: in.Body, readers: map[string]bool{}}
		if f.lose && f.creates[in.Name] == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"name": in.Name, "number": 1})
	case len(parts) == 2 && parts[0] == "repos":
		repo := f.repos[parts[1]]
		switch {
		case repo == nil:
			w.WriteHeader(http.StatusNotFound)
		case r.Method == http.MethodGet:
			_ = json.NewEncoder(w).Encode(map[string]any{"name": parts[1], "number": 1})
		case r.Method == http.MethodDelete:
			delete(f.repos, parts[1])
			w.WriteHeader(http.StatusNoContent)
		default:
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	case len(parts) == 4 && parts[0] == "repos" && parts[2] == "collaborators":
		repo := f.repos[parts[1]]
		switch {
		case repo == nil:
			w.WriteHeader(http.StatusNotFound)
		case r.Method == http.MethodPut:
			repo.readers[parts[3]] = true
			w.WriteHeader(http.StatusNoContent)
		case r.Method == http.MethodDelete:
			delete(repo.readers, parts[3])
			w.WriteHeader(http.StatusNoContent)
		default:
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

// search returns the issues the caller reads whose body holds q.
func (f *forge) search(w http.ResponseWriter, r *http.Request) {
	user, ok := forgeUsers[strings.TrimPrefix(r.Header.Get("Authorization"), "token ")]
	if !ok {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	hits := []map[string]any{}
	for name, repo := range f.repos {
		if repo.readers[user] && strings.Contains(repo.body, r.URL.Query().Get("q")) {
			hits = append(hits, map[string]any{"id": "issue-of-" + name, "body": repo.body})
		}
	}
	_ = json.NewEncoder(w).Encode(hits)
}

func (f *forge) state() (repos int, creates map[string]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for k, v := range f.creates {
		out[k] = v
	}
	return len(f.repos), out
}

// forgeCorpus is a REST source for the forge, with or without lookupDocument.
func forgeCorpus(ns, base string, lookup bool) *v1alpha1.Corpus {
	ops := v1alpha1.RESTOperations{
		CreateDocument: []v1alpha1.RESTRequest{{Method: "POST", Path: "/repos",
			Body: `{"name": {{json .DocumentID}}, "body": {{json .Body}}}`, Expect: []int32{201},
			Capture: map[string]v1alpha1.RESTValue{"issue": "/number"}}},
		DeleteDocument: []v1alpha1.RESTRequest{{Method: "DELETE", Path: "/repos/{{.DocumentID}}", Expect: []int32{204}}},
		Grant:          []v1alpha1.RESTRequest{{Method: "PUT", Path: "/repos/{{.DocumentID}}/collaborators/{{.Principal}}", Expect: []int32{204}}},
		Revoke:         []v1alpha1.RESTRequest{{Method: "DELETE", Path: "/repos/{{.DocumentID}}/collaborators/{{.Principal}}", Expect: []int32{204}}},
	}
	if lookup {
		ops.LookupDocument = []v1alpha1.RESTRequest{{Method: "GET", Path: "/repos/{{.DocumentID}}", Expect: []int32{200},
			Capture: map[string]v1alpha1.RESTValue{"issue": "/number"}}}
	}
	return &v1alpha1.Corpus{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "target"},
		Spec: v1alpha1.CorpusSpec{
			Driver: v1alpha1.Driver{Type: v1alpha1.DriverREST, REST: &v1alpha1.RESTDriver{
				URL:        base,
				Auth:       &v1alpha1.RESTAuth{Type: v1alpha1.RESTAuthBearer, Scheme: "token", SecretRef: v1alpha1.SecretKeyReference{Name: "source", Key: "token"}},
				Operations: ops,
			}},
			Surfaces: &v1alpha1.CorpusSurfaces{Search: &v1alpha1.SearchSurface{Type: v1alpha1.SearchHTTP, URL: base + "/search", Method: "GET",
				Query:            map[string]v1alpha1.SearchQueryValue{"q": "{{.Query}}"},
				CredentialHeader: v1alpha1.CredentialHeader{Name: "Authorization", Prefix: "token "}, Hits: "", ID: "/id", Text: "/body"}},
		},
	}
}

func forgeFixture(t *testing.T, base string, lookup bool) string {
	t.Helper()
	ns := newNamespace(t)
	for name, token := range map[string]string{"source": testSourceToken, "alice-cred": testAliceToken, "mallory-cred": testMalloryToken} {
		createSecret(t, ns, name, "token", token)
	}
	crCreate(t, forgeCorpus(ns, base, lookup))
	for _, p := range []string{"alice", "mallory"} {
		crCreate(t, objects.Persona(ns, p, p))
	}
	return ns
}

// TestRESTSourceFindsADocumentItsReplyLost: the source created the
// document but its reply never reached the run (as when the operator stops
// before recording it). With lookupDocument the run finds it by its
// run-derived ID, takes its captures from the lookup, creates nothing
// twice, and removes it at cleanup.
func TestRESTSourceFindsADocumentItsReplyLost(t *testing.T) {
	t.Parallel()
	f, base := startForge(t, true)
	ns := forgeFixture(t, base, true)
	run := crRunSpec(ns, 10*time.Second, v1alpha1.SurfaceSearch)
	crCreate(t, run)
	got := giteaWaitDone(t, run)
	if got.Status.Verdict != v1alpha1.VerdictSLOMet {
		t.Fatalf("verdict %s (%s), want SLOMet", got.Status.Verdict, got.Status.Message)
	}
	repos, creates := f.state()
	if creates[got.Status.DocumentID] != 1 {
		t.Errorf("the document was created %d times, want once: %v", creates[got.Status.DocumentID], creates)
	}
	if repos != 0 {
		t.Errorf("%d repositories left after cleanup", repos)
	}
}

// TestRESTSourceWithoutLookupSaysItMayHaveLeftOne: the same lost reply at
// a source with no lookupDocument: the retried create is refused (the
// document exists), and the run says plainly that an earlier attempt may
// have left the document behind; cleanup still removes it, addressed by
// the run-derived ID.
func TestRESTSourceWithoutLookupSaysItMayHaveLeftOne(t *testing.T) {
	t.Parallel()
	f, base := startForge(t, true)
	ns := forgeFixture(t, base, false)
	run := crRunSpec(ns, 10*time.Second, v1alpha1.SurfaceSearch)
	crCreate(t, run)
	got := giteaWaitDone(t, run)
	if got.Status.Verdict != v1alpha1.VerdictSetupFailed || !strings.Contains(got.Status.Message, "may have been left behind") {
		t.Fatalf("verdict %s (%s), want SetupFailed saying the document may have been left behind", got.Status.Verdict, got.Status.Message)
	}
	if repos, creates := f.state(); repos != 0 {
		t.Errorf("%d repositories left after cleanup (creates %v)", repos, creates)
	}
}
