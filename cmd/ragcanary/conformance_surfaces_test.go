package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// surfacesFile writes a spec.surfaces block for ragtarget at url: its chat
// completions (streaming) and its Azure-like search, with hits at hitsPtr.
func surfacesFile(t *testing.T, url, hitsPtr string) string {
	t.Helper()
	body := fmt.Sprintf(`surfaces:
  chat:
    type: OpenAI
    url: %[1]s/v1/
    model: ragtarget
    stream: true
    citations: /choices/0/message/context/citations
  search:
    type: HTTP
    url: %[1]s/indexes/docs/search
    headers: {Content-Type: application/json}
    body: '{"search": {{json .Query}}, "top": {{.K}}}'
    credentialHeader: {name: api-key}
    hits: %[2]s
    id: /id
    text: /content
`, url, hitsPtr)
	path := filepath.Join(t.TempDir(), "surfaces.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Declared surfaces are what conformance probes: search through the
// foreign search API, answers, conversations and the stream through the
// chat API.
func TestConformanceChecksTheDeclaredSurfaces(t *testing.T) {
	url := serveRagtarget(t, ragtarget.FilterPrefilter)
	code, out, errOut := runConformanceAgainst(t, url, "--surfaces", surfacesFile(t, url, "/value"))
	if code != exitOK {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, check := range []string{"PASS search-visible", "PASS answer-visible", "PASS stream-visible", "PASS conversation-visible",
		"PASS search-excluded", "PASS answer-excluded", "PASS stream-excluded", "PASS conversation-excluded"} {
		if !strings.Contains(out, check) {
			t.Fatalf("report lacks %q:\n%s", check, out)
		}
	}
	if strings.Contains(out+errOut, "conf-persona") {
		t.Fatal("output leaks the persona's key")
	}
}

// A pointer that does not match the reply fails the check that read it,
// naming the pointer.
func TestConformanceNamesAMisconfiguredPointer(t *testing.T) {
	url := serveRagtarget(t, ragtarget.FilterPrefilter)
	code, out, _ := runConformanceAgainst(t, url, "--timeout", "500ms", "--surfaces", surfacesFile(t, url, "/hits/hits"))
	if code != exitFailed {
		t.Fatalf("exit %d, want 1\nstdout:\n%s", code, out)
	}
	if !strings.Contains(out, "FAIL search-visible") || !strings.Contains(out, "/hits/hits") {
		t.Fatalf("the failure does not name the hits pointer:\n%s", out)
	}
	t.Logf("conformance output:\n%s", out)
}
