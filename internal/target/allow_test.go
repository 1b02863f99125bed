package target

import (
	"strings"
	"testing"
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
		{"https://rag.example/tenant-a/../tenant-b/", ReasonURLNotAllowed, ""},
		{"https://rag.example/tenant-a/./x/../y", "", "https://rag.example/tenant-a/y"},
		// Prefixes match whole path segments.
		{"https://rag.example/tenant-ab/", ReasonURLNotAllowed, ""},
		// Encoded dots or slashes could be decoded by the server after our check.
		{"https://rag.example/tenant-a/%2e%2e/tenant-b/", ReasonInvalidURL, ""},
		{"https://rag.example/tenant-a/..%2ftenant-b", ReasonInvalidURL, ""},
		// Host and port compare exactly; a longer host is another host.
		{"https://rag.example.evil/tenant-a/", ReasonURLNotAllowed, ""},
		{"http://127.0.0.1:8090/", ReasonURLNotAllowed, ""},
		{"http://127.0.0.1:8089/anything", "", "http://127.0.0.1:8089/anything"},
		// Userinfo and empty hosts are refused outright.
		{"https://user:pw@rag.example/tenant-a/", ReasonInvalidURL, ""},
		{"http:///x", ReasonInvalidURL, ""},
		{"https://rag.example/tenant-a/?q=1", ReasonInvalidURL, ""},
		{"ftp://rag.example/tenant-a/", ReasonInvalidURL, ""},
		{"postgres://db.internal:5432/rag", "", "postgres://db.internal:5432/rag"},
		{"postgres://db.internal:5433/rag", ReasonURLNotAllowed, ""},
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
