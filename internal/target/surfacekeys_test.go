package target

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

const (
	aliceKey = "alice-key-0d3f9a71c2"
	bobKey   = "bob-key-5e8b12aa90"
)

// wireLog records every request's URL, headers and body as the target saw
// them, and answers an empty search.
type wireLog struct {
	mu   sync.Mutex
	reqs []string
}

func (l *wireLog) handler(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var b strings.Builder
	b.WriteString(r.RequestURI + "\n")
	_ = r.Header.Write(&b)
	b.Write(body)
	l.mu.Lock()
	l.reqs = append(l.reqs, b.String())
	l.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"value": []}`))
}

// carrying counts the requests in which s appears.
func (l *wireLog) carrying(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.reqs {
		if strings.Contains(r, s) {
			n++
		}
	}
	return n
}

func personaWithKey(name, key string) (*v1alpha1.Persona, *corev1.Secret) {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name + "-key",
		Labels: map[string]string{v1alpha1.LabelCredential: v1alpha1.LabelCredentialValue}}, Data: map[string][]byte{"key": []byte(key)}}
	p := &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	p.Spec.CredentialSecretRef = &v1alpha1.SecretKeyReference{Name: s.Name, Key: "key"}
	return p, s
}

func personaReader(t *testing.T, objs ...client.Object) client.Reader {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
}

// TestSurfaceNeverSendsAnotherPersonasKey is issue 37 item 5: a search
// template that hard-codes persona alice's key must never send it with a
// control persona's probe. Resolving alice for the corpus is refused,
// naming the field, and no request of any persona carries her key.
func TestSurfaceNeverSendsAnotherPersonasKey(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*v1alpha1.SearchSurface)
		field string
	}{
		{name: "body", field: "Body", edit: func(s *v1alpha1.SearchSurface) {
			s.Body = `{"search": {{json .Query}}, "key": "` + aliceKey + `"}`
		}},
		{name: "url path", field: "URL", edit: func(s *v1alpha1.SearchSurface) { s.URL += "/" + aliceKey }},
		{name: "query value", field: "Query[key]", edit: func(s *v1alpha1.SearchSurface) {
			s.Query = map[string]v1alpha1.SearchQueryValue{"key": aliceKey}
		}},
		{name: "static header", field: "Headers[X-Key]", edit: func(s *v1alpha1.SearchSurface) {
			s.Headers = map[string]string{"X-Key": "k=" + aliceKey}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wire := &wireLog{}
			srv := httptest.NewServer(http.HandlerFunc(wire.handler))
			defer srv.Close()
			alice, aliceSecret := personaWithKey("alice", aliceKey)
			bob, bobSecret := personaWithKey("bob", bobKey)
			door := &Door{Reader: personaReader(t, sourceSecret(true), aliceSecret, bobSecret, alice, bob), Allow: AllowAny()}
			obj := corpusFor(srv.URL)
			search := &v1alpha1.SearchSurface{Type: v1alpha1.SearchHTTP, URL: srv.URL + "/indexes/kb/docs/search", Method: "POST",
				Body:             `{"search": {{json .Query}}, "top": {{.K}}}`,
				CredentialHeader: v1alpha1.CredentialHeader{Name: "api-key"}, Hits: "/value", ID: "/id"}
			tc.edit(search)
			obj.Spec.Surfaces = &v1alpha1.CorpusSurfaces{Search: search}
			c, err := door.Corpus(context.Background(), obj)
			if err != nil {
				t.Fatalf("Corpus: %v", err)
			}
			defer c.Release()
			// The run resolves its control persona, then its persona.
			control, err := door.PersonaFor(context.Background(), c, bob)
			if err != nil {
				t.Fatalf("PersonaFor(bob): %v", err)
			}
			_, err = door.PersonaFor(context.Background(), c, alice)
			p, user := IsUserProblem(err)
			if !user || p.Reason != v1alpha1.ReasonInvalidSurface || !strings.Contains(p.Message, "spec.surfaces.search") ||
				!strings.Contains(p.Message, tc.field+": ") || !strings.Contains(p.Message, `Persona "alice"`) {
				t.Errorf("PersonaFor(alice) = %v, want InvalidSurface naming spec.surfaces.search %s and the Persona", err, tc.field)
			}
			if err != nil && strings.Contains(err.Error(), aliceKey) {
				t.Errorf("the refusal carries the key: %v", err)
			}
			// Even so, a probe as the control persona must not carry it.
			_, _ = c.Driver.Search(context.Background(), control.Token, "quarterly plan", 5)
			if n := wire.carrying(aliceKey); n != 0 {
				t.Errorf("%d requests carried alice's key, want 0", n)
			}
			if n := wire.carrying(bobKey); n > 1 {
				t.Errorf("bob's key was sent %d times", n)
			}
		})
	}
}
