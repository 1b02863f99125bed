package target

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
)

// revokingPersona is alice, an OAuth2 client whose revocation goes to url.
func revokingPersona(url string, r *v1alpha1.CredentialRevocation) *v1alpha1.Persona {
	p := oauth2Persona("https://idp.example/token")
	p.Namespace = "ns"
	if r != nil {
		r.URL = url
	}
	p.Spec.OAuth2.Revocation = r
	return p
}

func adminToken() *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "idp-admin",
		Labels: map[string]string{v1alpha1.LabelCredential: v1alpha1.LabelCredentialValue}},
		Data: map[string][]byte{"token": []byte("admin-secret-value")}}
}

// TestCredentialRevokerSendsWhatThePersonaDeclares: revoke and restore
// send their method and body as JSON with the admin token, and a 2xx (or
// a listed status) is success; a persona without a revocation has no
// revoker.
func TestCredentialRevokerSendsWhatThePersonaDeclares(t *testing.T) {
	var got []string
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type")+" "+r.Header.Get("Authorization")+" "+string(b))
		if r.Method == http.MethodDelete {
			w.WriteHeader(http.StatusNotFound) // listed in expect: already gone
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer admin.Close()
	d := &Door{Reader: secretsReader(t, adminToken()), Allow: AllowAny()}
	rev, err := d.CredentialRevoker(context.Background(), revokingPersona(admin.URL+"/admin/clients/alice", &v1alpha1.CredentialRevocation{
		TokenSecretRef: &v1alpha1.SecretKeyReference{Name: "idp-admin", Key: "token"},
		Revoke:         v1alpha1.CredentialRequest{Method: http.MethodPatch, Body: `[{"op":"replace","path":"/grant_types","value":[]}]`},
		Restore:        v1alpha1.CredentialRequest{Method: http.MethodDelete, Expect: []int32{204, 404}},
	}))
	if err != nil || rev == nil {
		t.Fatalf("building the revoker: %v", err)
	}
	if err := rev.Revoke(context.Background()); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	if err := rev.Restore(context.Background()); err != nil {
		t.Fatalf("restore (404, listed): %v", err)
	}
	want := []string{
		`PATCH /admin/clients/alice application/json Bearer admin-secret-value [{"op":"replace","path":"/grant_types","value":[]}]`,
		`DELETE /admin/clients/alice  Bearer admin-secret-value `,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("sent\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if rev, err := d.CredentialRevoker(context.Background(), revokingPersona("", nil)); rev != nil || err != nil {
		t.Fatalf("a persona without a revocation: %v, %v", rev, err)
	}
}

// TestCredentialRevokerAgainstAHostileAdminAPI: a redirect is not followed
// (the admin token would travel on), statuses map to the kinds a driver
// error has, no error quotes the token or the reply, a body that is not
// JSON and a URL outside the allowlist are refused before anything is
// sent.
func TestCredentialRevokerAgainstAHostileAdminAPI(t *testing.T) {
	var elsewhere atomic.Int32
	sink := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { elsewhere.Add(1) }))
	defer sink.Close()
	status := map[string]int{"/forbidden": 403, "/missing": 404, "/broken": 502}
	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, sink.URL, http.StatusTemporaryRedirect)
			return
		}
		w.WriteHeader(status[r.URL.Path])
		_, _ = io.WriteString(w, "admin-secret-value echoed back")
	}))
	defer hostile.Close()
	d := &Door{Reader: secretsReader(t, adminToken()), Allow: AllowAny()}
	spec := func() *v1alpha1.CredentialRevocation {
		return &v1alpha1.CredentialRevocation{TokenSecretRef: &v1alpha1.SecretKeyReference{Name: "idp-admin", Key: "token"},
			Revoke: v1alpha1.CredentialRequest{Method: http.MethodPatch, Body: "[]"}, Restore: v1alpha1.CredentialRequest{Method: http.MethodPatch, Body: "[]"}}
	}
	for path, kind := range map[string]driver.Kind{"/redirect": driver.Transient, "/forbidden": driver.Unauthorized, "/missing": driver.Permanent, "/broken": driver.Transient} {
		rev, err := d.CredentialRevoker(context.Background(), revokingPersona(hostile.URL+path, spec()))
		if err != nil {
			t.Fatal(err)
		}
		err = rev.Revoke(context.Background())
		var de *driver.Error
		if !errors.As(err, &de) || de.Kind != kind {
			t.Errorf("%s: %v, want a %s driver error", path, err, kind)
		}
		if err != nil && strings.Contains(err.Error(), "admin-secret-value") {
			t.Errorf("%s: the error quotes the token or the reply: %v", path, err)
		}
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the redirect was followed %d times", n)
	}
	bad := spec()
	bad.Restore.Body = "{not json"
	if _, err := d.CredentialRevoker(context.Background(), revokingPersona(hostile.URL, bad)); err == nil || !strings.Contains(err.Error(), "restore.body is not JSON") {
		t.Errorf("a body that is not JSON: %v", err)
	}
	allow, err := ParseAllowlist([]string{"https://idp.example/"})
	if err != nil {
		t.Fatal(err)
	}
	strict := &Door{Reader: secretsReader(t, adminToken()), Allow: allow}
	if _, err := strict.CredentialRevoker(context.Background(), revokingPersona(hostile.URL, spec())); err == nil {
		t.Error("a revocation URL outside the allowlist was accepted")
	}
}
