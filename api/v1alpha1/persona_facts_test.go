package v1alpha1

import (
	"reflect"
	"testing"
)

// Every key a persona's credential is read from is listed, for the Secret
// index, live mode and the reports alike.
func TestPersonaSecretRefs(t *testing.T) {
	oauth := func(g OAuth2Grant) PersonaSpec {
		return PersonaSpec{OAuth2: &PersonaOAuth2{Grant: g, TokenURL: "https://idp/token", SecretRef: LocalObjectReference{Name: "alice-oauth2"}}}
	}
	keys := func(s PersonaSpec) []string {
		var out []string
		for _, r := range s.SecretRefs() {
			out = append(out, r.Ref.Name+"/"+r.Ref.Key)
		}
		return out
	}
	for name, tc := range map[string]struct {
		spec  PersonaSpec
		want  []string
		names []string
	}{
		"static":             {PersonaSpec{CredentialSecretRef: &SecretKeyReference{Name: "alice-cred", Key: "token"}}, []string{"alice-cred/token"}, []string{"alice-cred"}},
		"client credentials": {oauth(OAuth2ClientCredentials), []string{"alice-oauth2/client_id", "alice-oauth2/client_secret"}, []string{"alice-oauth2"}},
		"refresh token":      {oauth(OAuth2RefreshToken), []string{"alice-oauth2/client_id", "alice-oauth2/client_secret", "alice-oauth2/refresh_token"}, []string{"alice-oauth2"}},
		"neither":            {PersonaSpec{}, nil, nil},
		"revocation token": {func() PersonaSpec {
			s := oauth(OAuth2ClientCredentials)
			s.OAuth2.Revocation = &CredentialRevocation{TokenSecretRef: &SecretKeyReference{Name: "idp-admin", Key: "token"}}
			return s
		}(), []string{"alice-oauth2/client_id", "alice-oauth2/client_secret", "idp-admin/token"}, []string{"alice-oauth2", "idp-admin"}},
	} {
		if got := keys(tc.spec); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: SecretRefs %v, want %v", name, got, tc.want)
		}
		if got := tc.spec.SecretNames(); !reflect.DeepEqual(got, tc.names) {
			t.Errorf("%s: SecretNames %v, want %v", name, got, tc.names)
		}
	}
}
