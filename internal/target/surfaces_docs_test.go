package target

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
)

// docSearchSurfaces are the search surfaces of docs/surfaces.md's YAML
// examples, each decoded strictly into the API type (a field the type does
// not have fails the test, as the API server would refuse it).
func docSearchSurfaces(t *testing.T) []v1alpha1.SearchSurface {
	t.Helper()
	doc, err := os.ReadFile("../../docs/surfaces.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []v1alpha1.SearchSurface
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		var tree map[string]any
		if err := yaml.Unmarshal([]byte(m[1]), &tree); err != nil {
			t.Fatalf("a YAML example does not parse: %v\n%s", err, m[1])
		}
		search := findKey(tree, "search")
		if search == nil {
			continue
		}
		raw, err := yaml.Marshal(search)
		if err != nil {
			t.Fatal(err)
		}
		var s v1alpha1.SearchSurface
		if err := yaml.UnmarshalStrict(raw, &s); err != nil {
			t.Fatalf("a search example does not decode into SearchSurface: %v\n%s", err, m[1])
		}
		out = append(out, s)
	}
	return out
}

// findKey finds the object under key at any depth (spec.surfaces.search,
// surfaces.search or search).
func findKey(v any, key string) map[string]any {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	if found, ok := m[key].(map[string]any); ok {
		return found
	}
	for _, child := range m {
		if found := findKey(child, key); found != nil {
			return found
		}
	}
	return nil
}

// TestDocsSearchExamplesBuild builds every search surface the docs show,
// through the door as the operator does, and sends the GET example's
// request to a loopback server: its query parameters arrive, the query
// escaped.
func TestDocsSearchExamplesBuild(t *testing.T) {
	surfaces := docSearchSurfaces(t)
	if len(surfaces) < 4 {
		t.Fatalf("found %d search examples in docs/surfaces.md, want at least 4", len(surfaces))
	}
	door := &Door{Allow: AllowAny()}
	sent := false
	for i, s := range surfaces {
		declared := &v1alpha1.CorpusSurfaces{Search: &s}
		if _, err := door.WithSurfaces(nil, "docs", declared, DefaultTimeout, nil); err != nil {
			t.Errorf("example %d (%s) does not build: %v", i, s.URL, err)
			continue
		}
		if s.Method != "GET" || len(s.Query) == 0 {
			continue
		}
		sent = true
		got := make(chan *url.URL, 1)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got <- r.URL
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"value": [{"id": "doc-1", "content": "x"}]}`))
		}))
		u, _ := url.Parse(s.URL)
		s.URL = srv.URL + u.Path
		drv, err := door.WithSurfaces(nil, "docs", &v1alpha1.CorpusSurfaces{Search: &s}, DefaultTimeout, nil)
		if err != nil {
			t.Fatal(err)
		}
		hits, err := drv.Search(context.Background(), driver.Token("persona-key-1234"), "a&b=c d/é", 3)
		srv.Close()
		if err != nil || len(hits) != 1 || hits[0].DocumentID != "doc-1" {
			t.Fatalf("GET example: %+v, %v", hits, err)
		}
		r := <-got
		for _, want := range []string{"api-version=2025-05-01-preview", "search=a%26b%3Dc+d%2F%C3%A9", "%24top=3"} {
			if !strings.Contains(r.RawQuery, want) {
				t.Errorf("the query string %q lacks %q", r.RawQuery, want)
			}
		}
		if r.Query().Get("search") != "a&b=c d/é" {
			t.Errorf("the search parameter arrived as %q", r.Query().Get("search"))
		}
	}
	if !sent {
		t.Error("no GET example with query parameters in docs/surfaces.md: nothing was sent")
	}
}
