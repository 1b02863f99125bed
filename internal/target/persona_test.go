package target

import (
	"strings"
	"testing"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

func oauth2Persona(tokenURL string, audiences ...string) *v1alpha1.Persona {
	p := &v1alpha1.Persona{}
	p.Name = "alice"
	p.Spec.OAuth2 = &v1alpha1.PersonaOAuth2{Grant: v1alpha1.OAuth2ClientCredentials, TokenURL: tokenURL, Audiences: audiences}
	return p
}

// An OAuth2 persona's token goes only to its token endpoint's origin or a
// listed audience; a static persona is not restricted here.
func TestCheckTokenAudience(t *testing.T) {
	httpCorpus := &v1alpha1.CorpusSpec{Driver: v1alpha1.Driver{Type: v1alpha1.DriverHTTP,
		HTTP: &v1alpha1.HTTPDriver{URL: "https://rag.example.com/api"}},
		Surfaces: &v1alpha1.CorpusSurfaces{Chat: &v1alpha1.ChatSurface{URL: "https://chat.example.com:443/v1"}}}
	for _, tc := range []struct {
		name     string
		persona  *v1alpha1.Persona
		surfaces []v1alpha1.Surface
		refused  string // "" when allowed
	}{
		{"same origin", oauth2Persona("https://rag.example.com/oauth/token"), []v1alpha1.Surface{v1alpha1.SurfaceSearch}, ""},
		{"default port is the same origin", oauth2Persona("https://chat.example.com/token"), []v1alpha1.Surface{v1alpha1.SurfaceAnswer}, ""},
		{"other origin", oauth2Persona("https://idp.example.com/token"), []v1alpha1.Surface{v1alpha1.SurfaceSearch}, "https://rag.example.com"},
		{"other scheme", oauth2Persona("http://rag.example.com/token"), []v1alpha1.Surface{v1alpha1.SurfaceSearch}, "https://rag.example.com"},
		{"listed audience", oauth2Persona("https://idp.example.com/token", "https://rag.example.com"), []v1alpha1.Surface{v1alpha1.SurfaceSearch}, ""},
		{"audience covers one surface only", oauth2Persona("https://idp.example.com/token", "https://rag.example.com"),
			[]v1alpha1.Surface{v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer}, "https://chat.example.com"},
		{"conversation", oauth2Persona("https://chat.example.com/token"), []v1alpha1.Surface{v1alpha1.SurfaceConversation}, "Conversation surface"},
		{"static key", &v1alpha1.Persona{Spec: v1alpha1.PersonaSpec{CredentialSecretRef: &v1alpha1.SecretKeyReference{Name: "k", Key: "t"}}},
			[]v1alpha1.Surface{v1alpha1.SurfaceConversation, v1alpha1.SurfaceSearch}, ""},
	} {
		err := CheckTokenAudience(httpCorpus, tc.persona, tc.surfaces)
		switch {
		case tc.refused == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
			t.Errorf("%s: %v, want a refusal naming %q", tc.name, err, tc.refused)
		}
	}
}

// A Postgres corpus sends no persona credential: nothing to refuse.
func TestCheckTokenAudienceSendsNothingToPostgres(t *testing.T) {
	pg := &v1alpha1.CorpusSpec{Driver: v1alpha1.Driver{Type: v1alpha1.DriverPostgres}}
	if err := CheckTokenAudience(pg, oauth2Persona("https://idp.example.com/token"), []v1alpha1.Surface{v1alpha1.SurfaceSearch}); err != nil {
		t.Fatal(err)
	}
}
