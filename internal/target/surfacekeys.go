package target

import (
	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
)

// credentialGuard is a surface that refuses to carry a known credential
// outside its header (surface.Search).
type credentialGuard interface {
	Guard(driver.Token) error
}

// GuardCredential makes tok, the credential of Persona persona, one that no
// request of the corpus's search surface may carry outside its credential
// header — whichever persona the request is sent as — and refuses it,
// naming the field, when the surface's configuration writes it in: a key
// hard-coded into a template would otherwise go out with a control
// persona's probes. Every persona a run or suite resolves for the corpus
// (PersonaFor) passes here before any probe, and the corpus controller
// passes every Persona of the namespace. A nil corpus guards nothing.
func (c *Corpus) GuardCredential(persona string, tok driver.Token) error {
	if c == nil {
		return nil
	}
	s, ok := c.Driver.(*surfaced)
	if !ok || s.search == nil {
		return nil
	}
	g, ok := s.search.(credentialGuard)
	if !ok {
		return nil
	}
	if err := g.Guard(tok); err != nil {
		return Stall(v1alpha1.ReasonInvalidSurface, "spec.surfaces.search: %v (the credential of Persona %q)", err, persona)
	}
	return nil
}
