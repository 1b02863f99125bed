package surface

import (
	"maps"
	"slices"
	"sync"

	"github.com/ragcanary/ragcanary/internal/driver"
)

// credentialGuard holds the credentials the caller knows besides the
// calling persona's (other personas', control personas'): a request that
// would carry any of them outside the credential header is never sent.
// A template only ever sees the query and k, so such a credential can only
// have been written into the config by hand, or be carried by a query;
// either way, sent with another persona's probe it would measure the wrong
// persona, or hand one tenant's key to a target as another's.
type credentialGuard struct {
	mu    sync.RWMutex
	known []driver.Token
}

func (g *credentialGuard) add(tok driver.Token) {
	if len(tok.Reveal()) < minLeakCheck {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !slices.Contains(g.known, tok) {
		g.known = append(g.known, tok)
	}
}

// leaks reports whether any known credential appears in any of parts.
func (g *credentialGuard) leaks(parts ...string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	for _, tok := range g.known {
		if leaks(tok, parts...) {
			return true
		}
	}
	return false
}

// Guard adds tok to the credentials no request of this surface may carry
// outside its header, and refuses it, naming the field, when the
// configuration itself writes it in (the URL, a query value or the body as
// rendered for a sample query, a static header). Safe for concurrent use.
func (s *Search) Guard(tok driver.Token) error {
	s.guard.add(tok)
	return s.configHolds(tok)
}

// configHolds names the first configured field that holds tok.
func (s *Search) configHolds(tok driver.Token) error {
	for _, part := range s.staticParts() {
		if leaks(tok, part.text) {
			return configError(part.field, "holds a persona's credential; a credential travels only in CredentialHeader, as the calling persona's own")
		}
	}
	return nil
}

type fieldText struct{ field, text string }

// staticParts are what the configuration alone puts into a request: the URL
// and each template rendered for the sample query, and the static headers.
func (s *Search) staticParts() []fieldText {
	out := []fieldText{{field: "URL", text: s.url.String()}}
	for _, p := range s.query {
		v, _ := render(p.tmpl, sampleData)
		out = append(out, fieldText{field: "Query[" + label(p.name) + "]", text: p.name + "=" + v})
	}
	if s.body != nil {
		b, _ := render(s.body, sampleData)
		out = append(out, fieldText{field: "Body", text: b})
	}
	for _, name := range slices.Sorted(maps.Keys(s.headers)) {
		for _, v := range s.headers[name] {
			out = append(out, fieldText{field: "Headers[" + label(name) + "]", text: name + ": " + v})
		}
	}
	return out
}
