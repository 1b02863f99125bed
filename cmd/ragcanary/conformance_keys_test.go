package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// TestConformanceNeverSendsThePersonaKeyAsAnother is issue 37 item 5 for
// conformance: a search body that hard-codes the persona's key would go
// out with the unauthorized-persona check's invalid token, and that check
// would then test nothing. The surfaces are refused, naming the field, and
// no request carries the key except as the persona's own credential header.
func TestConformanceNeverSendsThePersonaKeyAsAnother(t *testing.T) {
	upstream, err := url.Parse(serveRagtarget(t, ragtarget.FilterPrefilter))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var foreign int // requests carrying the key other than as their own api-key
	proxy := httputil.NewSingleHostReverseProxy(upstream)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if r.Header.Get("api-key") != "conf-persona" && (bytes.Contains(body, []byte("conf-persona")) || strings.Contains(r.RequestURI, "conf-persona")) {
			mu.Lock()
			foreign++
			mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	defer srv.Close()
	surfaces := `surfaces:
  search:
    type: HTTP
    url: ` + srv.URL + `/indexes/docs/search
    body: '{"search": {{json .Query}}, "top": {{.K}}, "key": "conf-persona"}'
    credentialHeader: {name: api-key}
    hits: /value
    id: /id
    text: /content
`
	path := filepath.Join(t.TempDir(), "surfaces.yaml")
	if err := os.WriteFile(path, []byte(surfaces), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runConformanceAgainst(t, srv.URL, "--surfaces", path)
	if code == exitOK || !strings.Contains(errOut, "Body: holds a persona's credential") {
		t.Errorf("exit %d, want the surfaces refused naming Body\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if strings.Contains(out+errOut, "conf-persona") {
		t.Error("the output carries the persona's key")
	}
	mu.Lock()
	defer mu.Unlock()
	if foreign != 0 {
		t.Errorf("%d requests carried the persona's key outside its own credential header, want 0", foreign)
	}
}
