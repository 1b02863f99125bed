package target

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
	"github.com/ragcanary/ragcanary/internal/driver"
)

// recorder is a server that records the Authorization headers reaching it.
type recorder struct {
	mu    sync.Mutex
	auths []string
}

func (r *recorder) handler(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.auths = append(r.auths, req.Header.Get("Authorization"))
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"hits":[],"answer":"","citations":[]}`))
}

func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.auths...)
}

func corpusFor(url string) *v1alpha1.Corpus {
	return objects.Corpus("ns", "c", url, objects.SourceSecret("src", "token"), objects.CallTimeout(2*time.Second))
}

func secretsReader(t *testing.T, secrets ...*corev1.Secret) client.Reader {
	t.Helper()
	objs := make([]client.Object, len(secrets))
	for i, s := range secrets {
		objs[i] = s
	}
	return fake.NewClientBuilder().WithObjects(objs...).Build()
}

func sourceSecret(labelled bool) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "src"},
		Data: map[string][]byte{"token": []byte("source-secret-value")}}
	if labelled {
		s.Labels = map[string]string{v1alpha1.LabelCredential: v1alpha1.LabelCredentialValue}
	}
	return s
}

// TestRedirectsAreNeverFollowed: a target that answers 307 to another
// server after the revocation must not get the bearer token sent there,
// and its redirect must be an error, never an empty (absent) result.
func TestRedirectsAreNeverFollowed(t *testing.T) {
	elsewhere := &recorder{}
	sink := httptest.NewServer(http.HandlerFunc(elsewhere.handler))
	defer sink.Close()
	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, sink.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer hostile.Close()

	door := &Door{Reader: secretsReader(t, sourceSecret(true)), Allow: AllowAny()}
	c, err := door.Corpus(context.Background(), corpusFor(hostile.URL))
	if err != nil {
		t.Fatal(err)
	}
	hits, err := c.Driver.Search(context.Background(), driver.Token("persona-secret-value"), "handle", 10)
	if err == nil {
		t.Fatalf("redirect read as a reply: %v hits", len(hits))
	}
	if !strings.Contains(err.Error(), "307") || !strings.Contains(err.Error(), "redirect") {
		t.Fatalf("error %q does not name the redirect status", err)
	}
	if err := c.Driver.DeleteDocument(context.Background(), "rc-x"); err == nil {
		t.Fatal("source-side redirect read as success")
	}
	if got := elsewhere.seen(); len(got) != 0 {
		t.Fatalf("the redirect target received %d requests (credentials %q)", len(got), got)
	}
}

func TestUnlabelledSecretIsNeverRead(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(http.HandlerFunc(rec.handler))
	defer srv.Close()
	door := &Door{Reader: secretsReader(t, sourceSecret(false)), Allow: AllowAny()}
	_, err := door.Corpus(context.Background(), corpusFor(srv.URL))
	p, ok := IsUserProblem(err)
	if !ok || p.Reason != v1alpha1.ReasonSecretNotLabeled {
		t.Fatalf("got %v, want SecretNotLabeled", err)
	}
	if !strings.Contains(p.Message, `ragcanary.dev/credential="true"`) || strings.Contains(p.Message, "source-secret-value") {
		t.Fatalf("message %q must name the label and never the value", p.Message)
	}
	if len(rec.seen()) != 0 {
		t.Fatal("something was sent to the target")
	}
}

func TestCorpusOutsideAllowlistSendsNothing(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(http.HandlerFunc(rec.handler))
	defer srv.Close()
	allow, _ := ParseAllowlist([]string{srv.URL + "/tenant-a/"})
	door := &Door{Reader: secretsReader(t, sourceSecret(true)), Allow: allow}
	for _, url := range []string{srv.URL + "/tenant-a/../tenant-b/", srv.URL + "/tenant-b/"} {
		_, err := door.Corpus(context.Background(), corpusFor(url))
		if p, ok := IsUserProblem(err); !ok || p.Reason != v1alpha1.ReasonURLNotAllowed {
			t.Fatalf("%s: got %v, want URLNotAllowed", url, err)
		}
	}
	c, err := door.Corpus(context.Background(), corpusFor(srv.URL+"/tenant-a/"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Driver.Search(context.Background(), "p", "q", 1); err != nil {
		t.Fatal(err)
	}
	if got := rec.seen(); len(got) != 1 {
		t.Fatalf("%d requests reached the target, want exactly the allowed one", len(got))
	}
}

func TestCheckCapabilities(t *testing.T) {
	ok := driver.Capabilities{ContractVersion: "v1", RevocationMethods: []driver.RevocationMethod{v1alpha1.RevokeRemoveGrant}}
	if err := CheckCapabilities(ok); err != nil {
		t.Fatalf("valid capabilities refused: %v", err)
	}
	for name, bad := range map[string]driver.Capabilities{
		"wrong version":  {ContractVersion: "v9"},
		"unknown method": {ContractVersion: "v1", RevocationMethods: []driver.RevocationMethod{"Teleport"}},
		"duplicate":      {ContractVersion: "v1", RevocationMethods: []driver.RevocationMethod{"RemoveGrant", "RemoveGrant"}},
		"huge version":   {ContractVersion: strings.Repeat("x", 5000)},
	} {
		err := CheckCapabilities(bad)
		p, isUser := IsUserProblem(err)
		if !isUser || p.Reason != v1alpha1.ReasonContractMismatch || len(p.Message) > 300 {
			t.Errorf("%s: got %v, want a short ContractMismatch", name, err)
		}
	}
}
