package controllers

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/giteatest"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
)

// giteaTokenLife is how long the OAuth2 provider's access tokens live:
// short, so one run outlives several. Gitea's exp is truncated to the
// second, so a token may end a second early; the persona's margin (half
// the life) covers that.
const giteaTokenLife = 4 * time.Second

// giteaOAuth2Namespace is the Gitea fixture's namespace on s, with alice's
// grant to an OAuth2 application on the consent page kept in the Secret
// alice-oauth2 (client_id, client_secret, refresh_token).
func giteaOAuth2Namespace(t *testing.T, s *giteatest.Server) (string, giteatest.OAuth2App, *oauth2.Token, *corev1.Secret) {
	t.Helper()
	s.CreateOrg(t, giteaOrg)
	g := &giteaFixture{srv: s, alice: s.CreateUser(t, "alice"), mallory: s.CreateUser(t, "mallory"),
		team: s.CreateTeam(t, giteaOrg, giteaTeam)}
	ns := g.giteaNamespace(t)
	app := s.CreateOAuth2App(t, g.alice, "ragcanary")
	first := s.AuthorizeOAuth2(t, g.alice, app)
	secret := objects.CredentialSecret(ns, "alice-oauth2", "")
	secret.Data = map[string][]byte{v1alpha1.OAuth2ClientIDKey: []byte(app.ClientID),
		v1alpha1.OAuth2ClientSecretKey: []byte(app.ClientSecret), v1alpha1.OAuth2RefreshTokenKey: []byte(first.RefreshToken)}
	crCreate(t, secret)
	return ns, app, first, secret
}

// giteaPersona reads the fixture's Persona name in ns.
func giteaPersona(t *testing.T, ns, name string) *v1alpha1.Persona {
	t.Helper()
	p := &v1alpha1.Persona{}
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGiteaOAuth2PersonaOutlivesItsTokens: alice grants the assistant
// access on Gitea's consent page once; her Persona keeps the refresh
// token. Her canary's probes run for several access-token lifetimes and
// not one of them fails: each round carries a token with time left, taken
// from the source that replaces it before it expires (Gitea answers an
// expired token as it answers no token: 401, a probe error). A wrong
// client secret makes the Persona CredentialRejected, naming no secret.
func TestGiteaOAuth2PersonaOutlivesItsTokens(t *testing.T) {
	t.Parallel() // its own Gitea and namespace
	s := giteatest.Start(t, giteatest.OAuth2AccessTokens(giteaTokenLife))
	ns, app, first, secret := giteaOAuth2Namespace(t, s)
	alice := giteaPersona(t, ns, "alice")
	alice.Spec.CredentialSecretRef = nil
	alice.Spec.OAuth2 = &v1alpha1.PersonaOAuth2{Grant: v1alpha1.OAuth2RefreshToken, TokenURL: s.TokenURL(),
		SecretRef: v1alpha1.LocalObjectReference{Name: "alice-oauth2"}}
	if err := k8sClient.Update(context.Background(), alice); err != nil {
		t.Fatal(err)
	}
	waitPersonaReady(t, alice, metav1.ConditionTrue, v1alpha1.ReasonTokenIssued)

	// Forty confirmations 300ms apart keep the exclusion stage probing for
	// three token lifetimes.
	run := objects.CanaryRun(ns, "run", objects.OnCorpus("gitea"), objects.Revoke(v1alpha1.RevokeRemoveGrant, ""),
		objects.Every(300*time.Millisecond, 40), objects.Timeouts(60*time.Second, 60*time.Second))
	began := time.Now()
	crCreate(t, run)
	got := giteaWaitDone(t, run)
	if got.Status.Verdict != v1alpha1.VerdictSLOMet {
		t.Fatalf("verdict %s (%s), want SLOMet", got.Status.Verdict, got.Status.Message)
	}
	m := crSurface(t, got, v1alpha1.SurfaceSearch)
	lasted := time.Since(began)
	t.Logf("run lasted %s (%.1f token lifetimes); probes %+v; measured [%s, %s]", lasted.Round(time.Millisecond),
		lasted.Seconds()/giteaTokenLife.Seconds(), m.Probes, m.Bounds.Lower.Duration, m.Bounds.Upper.Duration)
	if lasted < 3*giteaTokenLife {
		t.Fatalf("the run lasted %s, under three token lifetimes: nothing was shown", lasted)
	}
	if m.Probes.Errors != 0 {
		t.Errorf("probes %+v, want no errors across the token replacements", m.Probes)
	}
	// An expired token is refused, not answered with an empty search: a
	// probe carrying one would have been an error.
	if status, err := s.BearerStatus("/repos/issues/search?q=x", first.AccessToken); err != nil || status != http.StatusUnauthorized {
		t.Fatalf("issue search with the access token issued before the run: %d %v, want 401", status, err)
	}
	assertControlAnswered(t, got, v1alpha1.SurfaceSearch)

	// A wrong client secret: refused at the token endpoint, never quoted.
	secret.Data[v1alpha1.OAuth2ClientSecretKey] = []byte("not-the-client-secret")
	if err := k8sClient.Update(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	rejected := waitPersonaReady(t, alice, metav1.ConditionFalse, v1alpha1.ReasonCredentialRejected)
	msg := rejected.Status.Conditions[0].Message
	for _, leak := range []string{"not-the-client-secret", app.ClientSecret, first.RefreshToken, first.AccessToken} {
		if strings.Contains(msg, leak) {
			t.Errorf("condition message %q quotes a secret", msg)
		}
	}
}

// TestGiteaDisabledAccountEndsItsTokenAtOnce: a RevokeCredential canary
// whose persona is a Gitea account reading with an OAuth2 token; the
// revocation prohibits the account's sign-in (Gitea's admin API), which
// cleanup lifts again. Gitea checks the account on every API request, so
// the token still valid for seconds is refused (403) on the next probe:
// the run is excluded within a probe interval of the revocation, unlike a
// resource server that validates tokens by their signature alone
// (TestRevokedClientTokenStopsAtItsExpiry).
func TestGiteaDisabledAccountEndsItsTokenAtOnce(t *testing.T) {
	t.Parallel() // its own Gitea and namespace

	const life = 30 * time.Second // no token expires during the run
	s := giteatest.Start(t, giteatest.OAuth2AccessTokens(life))
	ns, _, first, _ := giteaOAuth2Namespace(t, s)
	prohibit := func(on bool) string {
		return fmt.Sprintf(`{"login_name":"alice","source_id":0,"prohibit_login":%t}`, on)
	}
	alice := giteaPersona(t, ns, "alice")
	alice.Spec.CredentialSecretRef = nil
	alice.Spec.OAuth2 = &v1alpha1.PersonaOAuth2{Grant: v1alpha1.OAuth2RefreshToken, TokenURL: s.TokenURL(),
		SecretRef: v1alpha1.LocalObjectReference{Name: "alice-oauth2"},
		Revocation: &v1alpha1.CredentialRevocation{URL: s.URL + "/api/v1/admin/users/alice",
			TokenSecretRef: &v1alpha1.SecretKeyReference{Name: "gitea-admin", Key: "token"},
			Revoke:         v1alpha1.CredentialRequest{Method: http.MethodPatch, Body: prohibit(true)},
			Restore:        v1alpha1.CredentialRequest{Method: http.MethodPatch, Body: prohibit(false)}}}
	if err := k8sClient.Update(context.Background(), alice); err != nil {
		t.Fatal(err)
	}
	waitPersonaReady(t, alice, metav1.ConditionTrue, v1alpha1.ReasonTokenIssued)

	run := objects.CanaryRun(ns, "run", objects.OnCorpus("gitea"), objects.Revoke(v1alpha1.RevokeCredential, ""),
		objects.Every(300*time.Millisecond, 2), objects.Timeouts(60*time.Second, 30*time.Second))
	crCreate(t, run)
	got := giteaWaitDone(t, run)
	if got.Status.Verdict != v1alpha1.VerdictSLOMet {
		t.Fatalf("verdict %s (%s), want SLOMet", got.Status.Verdict, got.Status.Message)
	}
	m := crSurface(t, got, v1alpha1.SurfaceSearch)
	if m.Bounds == nil || m.Bounds.Upper == nil {
		t.Fatalf("search bounds %+v, want an upper bound", m.Bounds)
	}
	t.Logf("measured [%s, %s]; probes %+v", m.Bounds.Lower.Duration, m.Bounds.Upper.Duration, m.Probes)
	// At once: within two probe intervals (and Gitea's answer) of the
	// revocation, far inside the token's remaining life.
	if m.Bounds.Upper.Duration > 3*time.Second {
		t.Errorf("upper bound %s: Gitea kept honouring the disabled account's token", m.Bounds.Upper.Duration)
	}
	assertControlAnswered(t, got, v1alpha1.SurfaceSearch)
	// Cleanup lifted the prohibition: alice reads again with her token.
	if status, err := s.BearerStatus("/user", first.AccessToken); err != nil || status != http.StatusOK {
		t.Errorf("alice's token after cleanup: %d %v, want 200", status, err)
	}
}
