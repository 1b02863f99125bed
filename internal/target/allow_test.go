package target

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

func TestAllowlistCheck(t *testing.T) {
	allow, err := ParseAllowlist([]string{"https://rag.example/tenant-a/", "http://127.0.0.1:8089", "postgres://db.internal:5432"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		url string
		// reason is "" when the URL must be admitted, else the refusal's reason.
		reason string
		// normalized is what an admitted URL becomes.
		normalized string
	}{
		{"https://rag.example/tenant-a/", "", "https://rag.example/tenant-a/"},
		{"https://RAG.example:443/tenant-a/v1", "", "https://rag.example/tenant-a/v1"},
		{"https://rag.example/tenant-a", "", "https://rag.example/tenant-a"},
		// Dot segments are resolved before the prefix check.
		{"https://rag.example/tenant-a/../tenant-b/", v1alpha1.ReasonURLNotAllowed, ""},
		{"https://rag.example/tenant-a/./x/../y", "", "https://rag.example/tenant-a/y"},
		// Prefixes match whole path segments.
		{"https://rag.example/tenant-ab/", v1alpha1.ReasonURLNotAllowed, ""},
		// Encoded dots or slashes could be decoded by the server after our check.
		{"https://rag.example/tenant-a/%2e%2e/tenant-b/", v1alpha1.ReasonInvalidURL, ""},
		{"https://rag.example/tenant-a/..%2ftenant-b", v1alpha1.ReasonInvalidURL, ""},
		// Host and port compare exactly; a longer host is another host.
		{"https://rag.example.evil/tenant-a/", v1alpha1.ReasonURLNotAllowed, ""},
		{"http://127.0.0.1:8090/", v1alpha1.ReasonURLNotAllowed, ""},
		{"http://127.0.0.1:8089/anything", "", "http://127.0.0.1:8089/anything"},
		// Userinfo and empty hosts are refused outright.
		{"https://user:pw@rag.example/tenant-a/", v1alpha1.ReasonInvalidURL, ""},
		{"http:///x", v1alpha1.ReasonInvalidURL, ""},
		{"https://rag.example/tenant-a/?q=1", v1alpha1.ReasonInvalidURL, ""},
		{"ftp://rag.example/tenant-a/", v1alpha1.ReasonInvalidURL, ""},
		{"postgres://db.internal:5432/rag", "", "postgres://db.internal:5432/rag"},
		{"postgres://db.internal:5433/rag", v1alpha1.ReasonURLNotAllowed, ""},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			u, err := allow.Check("spec.driver.http.url", tc.url)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if u.String() != tc.normalized {
					t.Fatalf("normalized to %q, want %q", u.String(), tc.normalized)
				}
				return
			}
			p, ok := IsUserProblem(err)
			if !ok || p.Reason != tc.reason {
				t.Fatalf("got %v, want a %s problem", err, tc.reason)
			}
			if strings.Contains(p.Message, "pw") {
				t.Fatalf("message reveals userinfo: %s", p.Message)
			}
		})
	}
}

func TestEmptyAllowlistAdmitsNothing(t *testing.T) {
	var a Allowlist
	if !a.Empty() {
		t.Fatal("zero allowlist not empty")
	}
	if _, err := a.Check("url", "https://rag.example/"); err == nil {
		t.Fatal("zero allowlist admitted a URL")
	}
	if _, err := AllowAny().Check("url", "https://rag.example/"); err != nil {
		t.Fatalf("AllowAny refused: %v", err)
	}
}

func TestParseAllowlistRefusesBadEntries(t *testing.T) {
	for _, bad := range []string{"rag.example", "https://u:p@rag.example/", "ftp://x/", "https://rag.example/?a=b"} {
		if _, err := ParseAllowlist([]string{bad}); err == nil {
			t.Errorf("entry %q accepted", bad)
		} else if strings.Contains(err.Error(), "u:p") {
			t.Errorf("error reveals userinfo: %v", err)
		}
	}
}

// pathEscapes are URLs under an allowed /tenant-a/ prefix that some server
// reads as a path outside it.
var pathEscapes = []string{
	"/tenant-a/..;/tenant-b/",          // a servlet container reads "..;" as ".."
	"/tenant-a/x;/../../tenant-b/",     // a path parameter on any segment
	"/tenant-a/..%5ctenant-b/",         // "\" is "/" to some servers
	"/tenant-a/..%5Ctenant-b/",         // upper-case escape
	`/tenant-a/..\tenant-b/`,           // a literal backslash
	"/tenant-a/%252e%252e/tenant-b/",   // decoded twice, ".."
	"/tenant-a/%2e%2e/tenant-b/",       // decoded once, ".."
	"/tenant-a/%2E./tenant-b/",         // mixed
	"/tenant-a/%25/",                   // any percent-encoding
	"/tenant-a/%41/",                   // even of an unreserved character
	"/tenant-a/.../tenant-b/",          // "..." is ".." plus a dot to some
	"/tenant-a/..x/",                   // a segment that starts with ".."
	"/tenant-a/a:b/",                   // reserved characters are not unreserved
	"/tenant-a/a%20b/",                 // nor is a space
	"/tenant-a/%2e%2e%2ftenant-b/",     // an encoded slash
	"/tenant-a/..%c0%af../tenant-b/",   // an overlong UTF-8 slash
	"/tenant-a/\u2215..\u2215tenant-b", // a division slash
}

func TestAllowlistRefusesPathEscapes(t *testing.T) {
	const base = "http://127.0.0.1:8089"
	allow, err := ParseAllowlist([]string{base + "/tenant-a/"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pathEscapes {
		t.Run(p, func(t *testing.T) {
			u, err := allow.Check("spec.driver.http.url", base+p)
			pr, ok := IsUserProblem(err)
			if !ok || pr.Reason != v1alpha1.ReasonInvalidURL {
				t.Fatalf("got %v (admitted as %v), want an InvalidURL problem", err, u)
			}
			if !strings.Contains(pr.Message, `letters, digits, "-", ".", "_", "~" and "/"`) {
				t.Fatalf("message %q does not say which characters a path may hold", pr.Message)
			}
		})
	}
	for _, ok := range []string{"/tenant-a/", "/tenant-a/v1.2_x~y-z/", "/tenant-a/./x/../y", "/tenant-a/x/..", "/tenant-a/.x/"} {
		if _, err := allow.Check("spec.driver.http.url", base+ok); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
}

// TestDoorNeverCallsARefusedPath builds the HTTP driver through the door,
// from a Corpus and from a kept recipe, for every escape: none reaches the
// server, while the allowed prefix does.
func TestDoorNeverCallsARefusedPath(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(http.HandlerFunc(rec.handler))
	defer srv.Close()
	allow, err := ParseAllowlist([]string{srv.URL + "/tenant-a/"})
	if err != nil {
		t.Fatal(err)
	}
	door := &Door{Reader: secretsReader(t, sourceSecret(true)), Allow: allow}
	ctx := context.Background()
	for _, p := range pathEscapes {
		obj := corpusFor(srv.URL + p)
		c, err := door.Corpus(ctx, obj)
		if err == nil {
			_, _ = c.Driver.Search(ctx, "persona", "q", 1)
			t.Errorf("%s: the door built a driver", p)
		}
		recipe := Recipe{Driver: obj.Spec.Driver, Credential: []byte("source-secret-value")}
		if c, err := door.FromRecipe("ns", "c", recipe); err == nil {
			_ = c.Driver.DeleteDocument(ctx, "rc-x")
			t.Errorf("%s: the door rebuilt a driver from a recipe", p)
		}
	}
	if got := rec.seen(); len(got) != 0 {
		t.Fatalf("%d requests reached the target for refused paths", len(got))
	}
	c, err := door.Corpus(ctx, corpusFor(srv.URL+"/tenant-a/"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Driver.Search(ctx, "persona", "q", 1); err != nil {
		t.Fatal(err)
	}
	if got := rec.seen(); len(got) != 1 {
		t.Fatalf("%d requests reached the target, want exactly the allowed one", len(got))
	}
}
