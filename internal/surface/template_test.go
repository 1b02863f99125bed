package surface

import (
	"strings"
	"testing"

	"github.com/ragcanary/ragcanary/internal/dev/testutil"
)

// TestNewSearchRefusesGrowingTemplates checks that a template cannot grow a
// value past what it writes: variables, assignments and with are refused at
// parse, naming the field, and refusing them allocates little (building
// the surface renders the template once, on every reconcile and probe).
func TestNewSearchRefusesGrowingTemplates(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
	}{
		{name: "variable doubled 16 times", body: testutil.DoublingTemplate(16), want: "Body: variables"},
		{name: "with chain 16 deep", body: testutil.WithChainTemplate(16), want: "Body: with is not allowed"},
		{name: "declaration only", body: `{{$q := .Query}}{"q": {{json $q}}}`, want: "Body: variables"},
		{name: "root variable", body: `{"q": {{json $.Query}}}`, want: "Body: variables"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := esConfig("http://127.0.0.1:1/search")
			cfg.Body = tc.body
			var err error
			n := testutil.Allocated(func() { _, err = NewSearch(cfg) })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewSearch = %v, want an error containing %q", err, tc.want)
			}
			if n > 1<<20 {
				t.Errorf("NewSearch allocated %d bytes, want under 1 MiB", n)
			}
		})
	}
}
