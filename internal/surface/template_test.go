package surface

import (
	"runtime"
	"strings"
	"testing"
)

// doublingBody is issue 37's template: a variable doubled n times, then a
// body that reads its length. With 40 doublings (861 bytes) it asks for
// terabytes; 16 keep a build that accepts it at tens of MiB.
func doublingBody(n int) string {
	var b strings.Builder
	b.WriteString(`{{$x := print .Query}}`)
	for range n {
		b.WriteString(`{{$x = print $x $x}}`)
	}
	b.WriteString(`{"q": {{json .Query}}, "n": {{len $x}}}`)
	return b.String()
}

// withChainBody doubles by re-binding dot instead of a variable.
func withChainBody(n int) string {
	var b strings.Builder
	b.WriteString(`{{with print .Query}}`)
	for range n {
		b.WriteString(`{{with print . .}}`)
	}
	b.WriteString(`{"n": {{len .}}}`)
	for range n + 1 {
		b.WriteString(`{{end}}`)
	}
	return b.String()
}

// allocated is the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestNewSearchRefusesGrowingTemplates checks that a template cannot grow a
// value past what it writes: variables, assignments and with are refused at
// parse, naming the field, and refusing them allocates little (building
// the surface renders the template once, on every reconcile and probe).
func TestNewSearchRefusesGrowingTemplates(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
	}{
		{name: "variable doubled 16 times", body: doublingBody(16), want: "Body: variables"},
		{name: "with chain 16 deep", body: withChainBody(16), want: "Body: with is not allowed"},
		{name: "declaration only", body: `{{$q := .Query}}{"q": {{json $q}}}`, want: "Body: variables"},
		{name: "root variable", body: `{"q": {{json $.Query}}}`, want: "Body: variables"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := esConfig("http://127.0.0.1:1/search")
			cfg.Body = tc.body
			var err error
			n := allocated(func() { _, err = NewSearch(cfg) })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewSearch = %v, want an error containing %q", err, tc.want)
			}
			if n > 1<<20 {
				t.Errorf("NewSearch allocated %d bytes, want under 1 MiB", n)
			}
		})
	}
}
