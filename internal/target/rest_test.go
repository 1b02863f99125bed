package target

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
)

// restSource records what a REST source sends: method, path, user agent
// and credential.
type restSource struct {
	mu  sync.Mutex
	got []string
}

func (s *restSource) handler(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.got = append(s.got, r.Method+" "+r.URL.EscapedPath()+" ua="+r.UserAgent()+" auth="+r.Header.Get("Authorization"))
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write([]byte(`{"id": 41}`))
}

func (s *restSource) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

func restCorpus(base string) *v1alpha1.Corpus {
	c := &v1alpha1.Corpus{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
	c.Spec.Driver = v1alpha1.Driver{Type: v1alpha1.DriverREST, Timeout: &metav1.Duration{Duration: 2 * time.Second},
		REST: &v1alpha1.RESTDriver{URL: base + "/api/v1",
			Auth: &v1alpha1.RESTAuth{Type: v1alpha1.RESTAuthBearer, Scheme: "token", SecretRef: v1alpha1.SecretKeyReference{Name: "src", Key: "token"}},
			Operations: v1alpha1.RESTOperations{
				CreateDocument: []v1alpha1.RESTRequest{{Method: "POST", Path: "/items", Body: `{"name": {{json .DocumentID}}}`,
					Capture: map[string]v1alpha1.RESTValue{"id": "/id"}}},
				DeleteDocument: []v1alpha1.RESTRequest{{Method: "DELETE", Path: "/items/{{.Captured.id}}"}},
			}}}
	c.Spec.Surfaces = &v1alpha1.CorpusSurfaces{Search: &v1alpha1.SearchSurface{URL: base + "/search", Method: "GET", Hits: "/hits", ID: "/id"}}
	return c
}

// TestRESTSourceGoesThroughTheDoor: a REST corpus resolves through the
// door (allowlist, labelled Secret, user agent, credential in its
// header), its captures are reachable on the unwrapped source, its
// identity names its base URL, and a recipe rebuilds it with no Secret
// left to read, so cleanup works after the Corpus is gone.
func TestRESTSourceGoesThroughTheDoor(t *testing.T) {
	src := &restSource{}
	srv := httptest.NewServer(http.HandlerFunc(src.handler))
	defer srv.Close()
	allow := mustAllowlist(t, srv.URL+"/")
	door := &Door{Reader: secretsReader(t, sourceSecret(true)), Allow: allow, Addresses: mustPolicy(t, "", "", allow), UserAgent: "ragcanary-test"}
	c, err := door.Corpus(t.Context(), restCorpus(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if err := c.Driver.CreateDocument(t.Context(), driver.Document{ID: "canary-1"}); err != nil {
		t.Fatal(err)
	}
	caps, ok := c.Source().(driver.Captures)
	if !ok || caps.Captured("canary-1")["id"] != "41" {
		t.Fatalf("the source's captures are not reachable: %v", ok)
	}
	id, err := c.Identity()
	if err != nil || !strings.HasPrefix(id.Source, "rest "+srv.URL+"/api/v1?requests=") {
		t.Fatalf("identity = %q, %v; want the REST base URL", id.Source, err)
	}

	// The Corpus and its Secret are gone: the recipe still cleans up.
	later := &Door{Allow: allow, Addresses: mustPolicy(t, "", "", allow), UserAgent: "ragcanary-test"}
	rebuilt, err := later.FromRecipe("ns", "c", c.Recipe())
	if err != nil {
		t.Fatal(err)
	}
	defer rebuilt.Release()
	rebuilt.Source().(driver.Captures).Restore("canary-1", caps.Captured("canary-1"))
	if err := rebuilt.Driver.DeleteDocument(t.Context(), "canary-1"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"POST /api/v1/items ua=ragcanary-test auth=token source-secret-value",
		"DELETE /api/v1/items/41 ua=ragcanary-test auth=token source-secret-value",
	}
	if got := src.seen(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the source saw\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestRESTSourceURLsAreChecked: a base URL or token URL the allowlist
// does not admit stalls naming the field, and a base URL reached at a
// denied address is never dialled.
func TestRESTSourceURLsAreChecked(t *testing.T) {
	src := &restSource{}
	srv := httptest.NewServer(http.HandlerFunc(src.handler))
	defer srv.Close()
	allow := mustAllowlist(t, srv.URL+"/api/")
	door := &Door{Reader: secretsReader(t, sourceSecret(true)), Allow: allow, Addresses: mustPolicy(t, "", "", allow)}

	c := restCorpus(srv.URL)
	c.Spec.Driver.REST.Auth = &v1alpha1.RESTAuth{Type: v1alpha1.RESTAuthOAuth2ClientCredentials, ClientID: "x",
		TokenURL: "http://token.example/token", SecretRef: v1alpha1.SecretKeyReference{Name: "src", Key: "token"}}
	if _, err := door.Corpus(t.Context(), c); err == nil || !strings.Contains(err.Error(), "spec.driver.rest.auth.tokenURL") {
		t.Fatalf("unallowed token URL = %v, want a refusal naming it", err)
	}
	c = restCorpus(srv.URL)
	c.Spec.Driver.REST.URL = "http://elsewhere.example/api/v1"
	if _, err := door.Corpus(t.Context(), c); err == nil || !strings.Contains(err.Error(), "spec.driver.rest.url") {
		t.Fatalf("unallowed base URL = %v, want a refusal naming it", err)
	}

	port := srv.URL[len("http://127.0.0.1:"):]
	byName := "http://localhost:" + port
	named := mustAllowlist(t, byName+"/")
	door = &Door{Reader: secretsReader(t, sourceSecret(true)), Allow: named, Addresses: mustPolicy(t, "", "", named)}
	c = restCorpus(byName)
	c.Spec.Surfaces = nil
	resolved, err := door.Corpus(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	defer resolved.Release()
	err = resolved.Driver.CreateDocument(t.Context(), driver.Document{ID: "x"})
	if !errors.Is(err, ErrAddressDenied) {
		t.Fatalf("a call at a denied address = %v, want the address policy's refusal", err)
	}
	if n := len(src.seen()); n != 0 {
		t.Fatalf("the source got %d requests at a denied address", n)
	}
}
