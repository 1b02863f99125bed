package surface

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/driver"
)

// esReply is an Elasticsearch-shaped reply: hits under /hits/hits, the id
// in _id and the text under _source.
func esReply(hits ...map[string]any) map[string]any {
	items := make([]any, 0, len(hits))
	for _, h := range hits {
		items = append(items, h)
	}
	return map[string]any{"hits": map[string]any{"hits": items}}
}

func esHit(id any, text string) map[string]any {
	return map[string]any{"_id": id, "_source": map[string]any{"content": text}}
}

// esConfig is a POST search with its query in the body.
func esConfig(url string) SearchConfig {
	return SearchConfig{
		URL:        url,
		Body:       `{"query": {"match": {"content": {{json .Query}}}}, "size": {{.K}}}`,
		Hits:       "/hits/hits",
		ID:         "/_id",
		Text:       "/_source/content",
		HTTPClient: followingClient(),
	}
}

func newSearch(t *testing.T, cfg SearchConfig) *Search {
	t.Helper()
	s, err := NewSearch(cfg)
	if err != nil {
		t.Fatalf("NewSearch: %v", err)
	}
	return s
}

// TestSearchSendsCredentialOnlyInItsHeader checks, for GET and POST and for
// each credential header shape, that the token reaches the server only as
// the declared header's value, that the query reaches it where the config
// put it, and that hits decode into IDs, document IDs and text.
func TestSearchSendsCredentialOnlyInItsHeader(t *testing.T) {
	for _, tc := range []struct {
		name, method, header, prefix string
		// wantHeader/wantValue is what must arrive; the defaults when header is empty.
		wantHeader, wantValue string
	}{
		{name: "default bearer", method: "POST", wantHeader: "Authorization", wantValue: "Bearer " + persona.Reveal()},
		{name: "api-key", method: "POST", header: "api-key", wantHeader: "Api-Key", wantValue: persona.Reveal()},
		{name: "ApiKey prefix", method: "POST", header: "Authorization", prefix: "ApiKey ", wantHeader: "Authorization", wantValue: "ApiKey " + persona.Reveal()},
		{name: "GET bearer", method: "GET", header: "Authorization", prefix: "Bearer ", wantHeader: "Authorization", wantValue: "Bearer " + persona.Reveal()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const query = `who may read "payroll"?`
			rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
				writeJSON(w, 200, esReply(esHit("doc-1#0", "first text"), esHit(42, "second text"), esHit("plain", "third")))
			})
			cfg := esConfig(rec.URL + "/search")
			cfg.Method, cfg.CredentialHeader, cfg.CredentialPrefix = tc.method, tc.header, tc.prefix
			cfg.Headers = map[string]string{"X-Tenant": "a"}
			cfg.Query = map[string]string{"api-version": "2024-07-01"}
			if tc.method == "GET" {
				cfg.Body = ""
				cfg.Query["q"] = "{{.Query}}"
				cfg.Query["size"] = "{{.K}}"
			}
			hits, err := newSearch(t, cfg).Search(context.Background(), persona, query, 5)
			if err != nil {
				t.Fatalf("Search: %v", err)
			}
			want := []driver.Hit{
				{ChunkID: "doc-1#0", DocumentID: "doc-1", Text: "first text"},
				{ChunkID: "42", DocumentID: "42", Text: "second text"},
				{ChunkID: "plain", DocumentID: "plain", Text: "third"},
			}
			if fmt.Sprint(hits) != fmt.Sprint(want) {
				t.Errorf("hits = %+v, want %+v", hits, want)
			}
			if gotQuery := queryOf(t, rec.requests()[0]); gotQuery != query {
				t.Errorf("the server read query %q, want %q", gotQuery, query)
			}
			assertCredentialOnlyIn(t, rec, tc.wantHeader, tc.wantValue)
			r := rec.requests()[0]
			if r.method != tc.method || r.header.Get("X-Tenant") != "a" || !strings.Contains(r.uri, "api-version=2024-07-01") {
				t.Errorf("request = %s %s (X-Tenant %q), want %s with the static header and query", r.method, r.uri, r.header.Get("X-Tenant"), tc.method)
			}
			if tc.method == "GET" && len(r.body) != 0 {
				t.Errorf("a GET carried a body: %q", r.body)
			}
		})
	}
}

// queryOf reads the query the server was sent: the body's match clause for
// a POST, the q parameter for a GET.
func queryOf(t *testing.T, r recorded) string {
	if r.method == http.MethodGet {
		u, err := url.ParseRequestURI(r.uri)
		if err != nil {
			t.Fatalf("request URI %q: %v", r.uri, err)
		}
		return u.Query().Get("q")
	}
	var body struct {
		Query struct {
			Match struct {
				Content string `json:"content"`
			} `json:"match"`
		} `json:"query"`
		Size int `json:"size"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Errorf("the body is not JSON: %v", err)
	}
	return body.Query.Match.Content
}

// TestSearchQueryCannotBreakOutOfJSON sends queries built to end the JSON
// string they sit in and add fields; the server must read each back as one
// string and the size as the caller's k.
func TestSearchQueryCannotBreakOutOfJSON(t *testing.T) {
	for _, query := range []string{
		`"}}, "size": 999, "x": {"y": "`,
		`\"}`,
		"line\nbreak\u2028and</script>",
		"bell\a and nul\x00", // escaped differently by JSON and Go quoting
	} {
		rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, esReply()) })
		cfg := esConfig(rec.URL)
		if _, err := newSearch(t, cfg).Search(context.Background(), persona, query, 3); err != nil {
			t.Fatalf("Search(%q): %v", query, err)
		}
		var got map[string]any
		if err := json.Unmarshal(rec.requests()[0].body, &got); err != nil {
			t.Fatalf("query %q: the body is not JSON: %v", query, err)
		}
		content := got["query"].(map[string]any)["match"].(map[string]any)["content"]
		if content != query || got["size"] != float64(3) || len(got) != 2 {
			t.Errorf("query %q arrived as body %v", query, got)
		}
	}
}

// TestSearchPointerErrorsNameThePointer checks that a reply the pointers do
// not fit is an error naming the pointer and saying what is wrong, never an
// empty result.
func TestSearchPointerErrorsNameThePointer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply any
		want  string
	}{
		{name: "hits missing", reply: map[string]any{"results": []any{}}, want: "hits pointer /hits/hits: not found"},
		{name: "hits not an array", reply: map[string]any{"hits": map[string]any{"hits": map[string]any{"total": 0}}}, want: "hits pointer /hits/hits: not an array"},
		{name: "hits null", reply: map[string]any{"hits": map[string]any{"hits": nil}}, want: "hits pointer /hits/hits: not an array"},
		{name: "id missing", reply: esReply(map[string]any{"id": "x"}), want: "id pointer /_id in hit 0: not found"},
		{name: "id an object", reply: esReply(esHit("ok", "t"), esHit(map[string]any{"v": 1}, "t")), want: "id pointer /_id in hit 1: not a string"},
		{name: "id empty", reply: esReply(esHit("", "t")), want: "id pointer /_id in hit 0: empty, too long or not printable"},
		{name: "id with an escape", reply: esReply(esHit("doc\x1b[2J", "t")), want: "id pointer /_id in hit 0: empty, too long or not printable"},
		{name: "text missing", reply: esReply(map[string]any{"_id": "d"}), want: "text pointer /_source/content in hit 0: not found"},
		{name: "text a number", reply: esReply(map[string]any{"_id": "d", "_source": map[string]any{"content": 7}}), want: "text pointer /_source/content in hit 0: not a string"},
		{name: "not JSON", reply: "<html>", want: "malformed reply: not JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
				if s, ok := tc.reply.(string); ok {
					_, _ = w.Write([]byte(s))
					return
				}
				writeJSON(w, 200, tc.reply)
			})
			hits, err := newSearch(t, esConfig(rec.URL)).Search(context.Background(), persona, "q", 5)
			if err == nil || hits != nil {
				t.Fatalf("Search = %v, %v; want an error and no hits", hits, err)
			}
			if !strings.Contains(err.Error(), tc.want) || !driver.IsTransient(err) {
				t.Errorf("err = %q (%v), want a transient error containing %q", err, kindOf(t, err), tc.want)
			}
		})
	}
}

// TestSearchEmptyArrayIsEmptyResult checks the one reply that means
// "nothing found": the configured array, present and empty. It also
// checks that more hits than k are cut to k.
func TestSearchEmptyArrayIsEmptyResult(t *testing.T) {
	var n atomic.Int32 // set by the test, read by the handler
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		hits := make([]map[string]any, n.Load())
		for i := range hits {
			hits[i] = esHit(fmt.Sprintf("d%d", i), "t")
		}
		writeJSON(w, 200, esReply(hits...))
	})
	s := newSearch(t, esConfig(rec.URL))
	hits, err := s.Search(context.Background(), persona, "q", 5)
	if err != nil || hits == nil || len(hits) != 0 {
		t.Errorf("empty array: Search = %#v, %v; want an empty, non-nil slice and no error", hits, err)
	}
	n.Store(7)
	hits, err = s.Search(context.Background(), persona, "q", 3)
	if err != nil || len(hits) != 3 || hits[2].ChunkID != "d2" {
		t.Errorf("7 hits, k=3: Search = %+v, %v; want the first 3", hits, err)
	}
}

// TestSearchStatusIsAnErrorNamingIt checks that every non-2xx is an error
// naming the status, classified as the contract driver classifies it, and
// that a server echoing the credential into its reply cannot put it into
// the error.
func TestSearchStatusIsAnErrorNamingIt(t *testing.T) {
	for _, tc := range []struct {
		status int
		kind   driver.Kind
	}{
		{400, driver.Permanent}, {401, driver.Unauthorized}, {403, driver.Unauthorized}, {404, driver.Permanent},
		{408, driver.Transient}, {429, driver.Transient}, {500, driver.Transient}, {503, driver.Transient},
		{204, driver.Transient}, // a 2xx without a body is not an empty result
	} {
		rec := newRecorder(t, echoToken(tc.status))
		hits, err := newSearch(t, esConfig(rec.URL)).Search(context.Background(), persona, "q", 5)
		if err == nil || hits != nil {
			t.Errorf("status %d: Search = %v, %v; want an error", tc.status, hits, err)
			continue
		}
		if got := kindOf(t, err); got != tc.kind {
			t.Errorf("status %d: kind %v, want %v (%v)", tc.status, got, tc.kind, err)
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("status %d", tc.status)) {
			t.Errorf("status %d: %q does not name the status", tc.status, err)
		}
		if strings.Contains(fmt.Sprintf("%v %+v %#v", err, err, err), persona.Reveal()) {
			t.Errorf("status %d: the error carries the token: %v", tc.status, err)
		}
	}
}

// TestSearchDoesNotFollowRedirects hands the client one that follows
// redirects and checks the search refuses them anyway: the redirect is an
// error naming its status, and the server it points at never hears from us.
func TestSearchDoesNotFollowRedirects(t *testing.T) {
	elsewhere := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, esReply()) })
	for _, status := range []int{301, 302, 307, 308} {
		rec := newRecorder(t, redirectTo(elsewhere.URL+"/search", status, `{"hits":{"hits":[]}}`))
		hits, err := newSearch(t, esConfig(rec.URL)).Search(context.Background(), persona, "q", 5)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("status %d", status)) || !driver.IsPermanent(err) {
			t.Errorf("redirect %d: Search = %v, %v; want a permanent error naming the status", status, hits, err)
		}
		if rec.count() != 1 {
			t.Errorf("redirect %d: the target got %d requests, want 1", status, rec.count())
		}
	}
	if n := elsewhere.count(); n != 0 {
		t.Errorf("the redirect's target got %d requests, want 0", n)
	}
}

// TestSearchOversizeReplyErrors checks the reply bound, declared length or
// not, and that a reply of exactly the bound is still read.
func TestSearchOversizeReplyErrors(t *testing.T) {
	reply := `{"hits":{"hits":[{"_id":"a","_source":{"content":"` + strings.Repeat("x", 4000) + `"}}]}}`
	for _, tc := range []struct {
		name    string
		max     int64
		chunked bool
		ok      bool
	}{
		{name: "declared length over", max: int64(len(reply)) - 1},
		{name: "chunked over", max: int64(len(reply)) - 1, chunked: true},
		{name: "exactly the bound", max: int64(len(reply)), chunked: true, ok: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if tc.chunked {
					w.(http.Flusher).Flush() // no Content-Length: the bound must hold while reading
				}
				_, _ = w.Write([]byte(reply))
			})
			cfg := esConfig(rec.URL)
			cfg.MaxReplyBytes = tc.max
			hits, err := newSearch(t, cfg).Search(context.Background(), persona, "q", 5)
			if tc.ok {
				if err != nil || len(hits) != 1 {
					t.Errorf("Search = %v, %v; want the hit", hits, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), reasonTooLarge) || !driver.IsTransient(err) {
				t.Errorf("Search = %v, %v; want a transient %q", hits, err, reasonTooLarge)
			}
		})
	}
}

// TestSearchTimeout checks that a target that never answers costs the
// configured timeout, not the caller's whole context.
func TestSearchTimeout(t *testing.T) {
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	cfg := esConfig(rec.URL)
	cfg.Timeout = 100 * time.Millisecond
	start := time.Now()
	_, err := newSearch(t, cfg).Search(context.Background(), persona, "q", 5)
	if err == nil || !strings.Contains(err.Error(), reasonTimeout) || !driver.IsTransient(err) {
		t.Errorf("err = %v, want a transient timeout", err)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("the call took %s, want about the 100ms timeout", elapsed)
	}
}

// TestSearchRefusesCredentialOutsideItsHeader checks the second lock: a
// token written into the config by hand, or carried by the probe's query,
// stops the request before it is sent.
func TestSearchRefusesCredentialOutsideItsHeader(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*SearchConfig)
		query string
	}{
		{name: "static query", edit: func(c *SearchConfig) { c.Query = map[string]string{"key": persona.Reveal()} }, query: "q"},
		{name: "static header", edit: func(c *SearchConfig) { c.Headers = map[string]string{"X-Key": persona.Reveal()} }, query: "q"},
		{name: "body", edit: func(c *SearchConfig) { c.Body = `{"k": "` + persona.Reveal() + `", "q": {{json .Query}}}` }, query: "q"},
		{name: "in the query text", edit: func(*SearchConfig) {}, query: "tell me " + persona.Reveal()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, esReply()) })
			cfg := esConfig(rec.URL)
			tc.edit(&cfg)
			_, err := newSearch(t, cfg).Search(context.Background(), persona, tc.query, 5)
			if err == nil || !strings.Contains(err.Error(), "outside its header") || !driver.IsPermanent(err) {
				t.Errorf("err = %v, want the permanent refusal", err)
			}
			if n := rec.count(); n != 0 {
				t.Errorf("the server got %d requests, want 0", n)
			}
		})
	}
}

// TestNewSearchRefusesBadConfig checks each refusal names its field.
func TestNewSearchRefusesBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*SearchConfig)
		want string
	}{
		{name: "scheme", edit: func(c *SearchConfig) { c.URL = "ftp://h/x" }, want: "URL: must be an absolute http or https URL"},
		{name: "userinfo", edit: func(c *SearchConfig) { c.URL = "http://u:p@h/x" }, want: "URL: must not embed credentials"},
		{name: "relative", edit: func(c *SearchConfig) { c.URL = "/search" }, want: "URL: must be an absolute http or https URL"},
		{name: "query in URL", edit: func(c *SearchConfig) { c.URL = "http://h/x?api-version=1" }, want: "URL: must not have a query"},
		{name: "no client", edit: func(c *SearchConfig) { c.HTTPClient = nil }, want: "HTTPClient: required"},
		{name: "method", edit: func(c *SearchConfig) { c.Method = "PUT" }, want: "Method: must be GET or POST"},
		{name: "GET with body", edit: func(c *SearchConfig) { c.Method = "GET" }, want: "Body: a GET sends no body"},
		{name: "POST without body", edit: func(c *SearchConfig) { c.Body = "" }, want: "Body: required for POST"},
		{name: "unparseable", edit: func(c *SearchConfig) { c.Body = `{"q": {{json .Query}` }, want: "Body: bad template"},
		{name: "unescaped query", edit: func(c *SearchConfig) { c.Body = `{"q": "{{.Query}}"}` }, want: "Body: does not render JSON"},
		{name: "unknown field", edit: func(c *SearchConfig) { c.Body = `{"q": {{json .Token}}}` }, want: "Body: unknown value .Token (the values are .K, .Query)"},
		{name: "printf", edit: func(c *SearchConfig) { c.Body = `{"q": "{{printf "%09999d" 1}}"}` }, want: "Body: function printf is not allowed"},
		{name: "call", edit: func(c *SearchConfig) { c.Body = `{{call .Query}}` }, want: "Body: function call is not allowed"},
		{name: "range", edit: func(c *SearchConfig) { c.Body = `{{range 1000000000}}{{end}}{}` }, want: "Body: range is not allowed"},
		{name: "define", edit: func(c *SearchConfig) { c.Body = `{{define "a"}}x{{end}}{}` }, want: "Body: define and block are not allowed"},
		{name: "query template", edit: func(c *SearchConfig) { c.Query = map[string]string{"q": "{{.Nope}}"} }, want: "Query[q]: unknown value .Nope"},
		{name: "hits pointer", edit: func(c *SearchConfig) { c.Hits = "hits" }, want: `Hits: a JSON pointer is "" or starts with "/"`},
		{name: "id pointer", edit: func(c *SearchConfig) { c.ID = "/a~2" }, want: `ID: "~" in a JSON pointer`},
		{name: "text pointer", edit: func(c *SearchConfig) { c.Text = "x" }, want: "Text: a JSON pointer"},
		{name: "credential header as static", edit: func(c *SearchConfig) { c.Headers = map[string]string{"authorization": "Bearer fixed"} }, want: "Headers[authorization]: is the CredentialHeader"},
		{name: "custom credential header as static", edit: func(c *SearchConfig) {
			c.CredentialHeader = "api-key"
			c.Headers = map[string]string{"API-KEY": "fixed"}
		}, want: "Headers[API-KEY]: is the CredentialHeader"},
		{name: "host header", edit: func(c *SearchConfig) { c.Headers = map[string]string{"Host": "other"} }, want: "Headers[Host]: is set by the request itself"},
		{name: "header injection", edit: func(c *SearchConfig) { c.Headers = map[string]string{"X-A": "v\r\nX-B: w"} }, want: "Headers[X-A]: not a valid header value"},
		{name: "bad credential header", edit: func(c *SearchConfig) { c.CredentialHeader = "Auth orization" }, want: "CredentialHeader: not a valid header name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := esConfig("http://127.0.0.1:1/search")
			tc.edit(&cfg)
			s, err := NewSearch(cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewSearch = %v, %v; want an error containing %q", s, err, tc.want)
			}
		})
	}
}
