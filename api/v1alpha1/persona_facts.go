package v1alpha1

import "slices"

// SecretRefs are every Secret key the persona's credential is read from,
// as CorpusSpec.SecretRefs are the corpus's: the Secret index, live mode's
// manifests and the reports read this one list.
func (s *PersonaSpec) SecretRefs() []CorpusSecretRef {
	if s.CredentialSecretRef != nil {
		return []CorpusSecretRef{{Field: "spec.credentialSecretRef", Use: "persona credential", Ref: *s.CredentialSecretRef}}
	}
	o := s.OAuth2
	if o == nil {
		return nil
	}
	key := func(k, use string) CorpusSecretRef {
		return CorpusSecretRef{Field: "spec.oauth2.secretRef", Use: use, Ref: SecretKeyReference{Name: o.SecretRef.Name, Key: k}}
	}
	out := []CorpusSecretRef{key(OAuth2ClientIDKey, "persona OAuth2 client ID"), key(OAuth2ClientSecretKey, "persona OAuth2 client secret")}
	if o.Grant == OAuth2RefreshToken {
		out = append(out, key(OAuth2RefreshTokenKey, "persona OAuth2 refresh token"))
	}
	if r := o.Revocation; r != nil && r.TokenSecretRef != nil {
		out = append(out, CorpusSecretRef{Field: "spec.oauth2.revocation.tokenSecretRef", Use: "persona OAuth2 revocation API token", Ref: *r.TokenSecretRef})
	}
	return out
}

// SecretNames are the Secrets the persona reads, each once, for the
// Secret index.
func (s *PersonaSpec) SecretNames() []string {
	var names []string
	for _, r := range s.SecretRefs() {
		if !slices.Contains(names, r.Ref.Name) {
			names = append(names, r.Ref.Name)
		}
	}
	return names
}
