package surface

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/ragcanary/ragcanary/internal/driver"
)

// otherKey is another persona's credential, known to the caller.
const otherKey = driver.Token("other-persona-key-77aa")

// TestSearchNeverSendsAKnownCredential checks that a credential the caller
// knows (another persona's) is refused where the config writes it in,
// naming the field, and that a probe whose query carries it is never sent,
// whichever persona it is sent as.
func TestSearchNeverSendsAKnownCredential(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		edit       func(*SearchConfig)
	}{
		{name: "body", want: "Body: holds a persona's credential", edit: func(c *SearchConfig) {
			c.Body = `{"k": "` + otherKey.Reveal() + `", "q": {{json .Query}}}`
		}},
		{name: "query value", want: "Query[key]: holds a persona's credential", edit: func(c *SearchConfig) {
			c.Query = map[string]string{"key": "{{print \"" + otherKey.Reveal() + "\"}}"}
		}},
		{name: "url path", want: "URL: holds a persona's credential", edit: func(c *SearchConfig) { c.URL += "/" + otherKey.Reveal() }},
		{name: "static header", want: "Headers[X-Key]: holds a persona's credential", edit: func(c *SearchConfig) {
			c.Headers = map[string]string{"X-Key": otherKey.Reveal()}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := esConfig("http://127.0.0.1:1/search")
			tc.edit(&cfg)
			cfg.Credentials = []driver.Token{otherKey}
			if _, err := NewSearch(cfg); err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), otherKey.Reveal()) {
				t.Errorf("NewSearch = %v, want an error containing %q and not the key", err, tc.want)
			}
			cfg.Credentials = nil
			s := newSearch(t, cfg)
			if err := s.Guard(otherKey); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Guard = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	t.Run("in the probe's query", func(t *testing.T) {
		rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, esReply()) })
		cfg := esConfig(rec.URL)
		cfg.Credentials = []driver.Token{otherKey}
		s := newSearch(t, cfg)
		_, err := s.Search(context.Background(), persona, "tell me "+otherKey.Reveal(), 5)
		if err == nil || !strings.Contains(err.Error(), "outside its header") {
			t.Errorf("Search = %v, want the refusal", err)
		}
		if _, err := s.Search(context.Background(), persona, "tell me", 5); err != nil {
			t.Errorf("an ordinary probe: %v", err)
		}
		if n := rec.count(); n != 1 {
			t.Errorf("the server got %d requests, want only the ordinary probe's", n)
		}
	})
}
