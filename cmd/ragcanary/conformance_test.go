package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/dev/testutil/targettest"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// serveRagtarget runs ragtarget with real tickers and short intervals.
func serveRagtarget(t *testing.T, mode ragtarget.FilterMode) string {
	t.Helper()
	return targettest.Start(t, ragtarget.Config{
		SourceToken:         "conf-source",
		Tokens:              map[string]string{"conf-persona": "user:alice"},
		ContentSyncInterval: 50 * time.Millisecond,
		ACLSyncInterval:     100 * time.Millisecond,
		AnswerCacheTTL:      time.Minute,
		FilterMode:          mode,
	}).URL
}

func runConformanceAgainst(t *testing.T, url string, extra ...string) (int, string, string) {
	t.Helper()
	t.Setenv("CONF_SOURCE", "conf-source")
	t.Setenv("CONF_PERSONA", "conf-persona")
	args := append([]string{"conformance", "--url", url, "--source-token-env", "CONF_SOURCE", "--persona-token-env", "CONF_PERSONA",
		"--persona-principal", "user:alice", "--timeout", "3s", "--poll-interval", "20ms"}, extra...)
	var stdout, stderr bytes.Buffer
	code := dispatch(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestConformancePassesAgainstRagtarget(t *testing.T) {
	code, out, errOut := runConformanceAgainst(t, serveRagtarget(t, ragtarget.FilterPrefilter))
	if code != exitOK {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, check := range []string{"PASS search-visible", "PASS answer-visible", "PASS search-excluded", "PASS answer-excluded", "PASS delete-idempotent"} {
		if !strings.Contains(out, check) {
			t.Fatalf("report lacks %q:\n%s", check, out)
		}
	}
	if strings.Contains(out+errOut, "conf-persona") || strings.Contains(out+errOut, "conf-source") {
		t.Fatal("output leaks a token")
	}
}

func TestConformanceFailsNamingTheCheck(t *testing.T) {
	code, out, errOut := runConformanceAgainst(t, serveRagtarget(t, ragtarget.FilterNone), "--timeout", "500ms")
	if code != exitFailed {
		t.Fatalf("exit %d, want 1\nstdout:\n%s", code, out)
	}
	if !strings.Contains(out, "FAIL search-excluded") || !strings.Contains(errOut, "search-excluded") {
		t.Fatalf("failure does not name search-excluded:\nstdout:\n%s\nstderr:\n%s", out, errOut)
	}
}

func TestConformanceBadArguments(t *testing.T) {
	for _, args := range [][]string{
		{"conformance"},
		{"conformance", "--url", "http://127.0.0.1:1", "--persona-principal", "user:a", "--source-token-env", "CONF_UNSET_A", "--persona-token-env", "CONF_UNSET_B"},
		{"conformance", "--bogus"},
	} {
		var stdout, stderr bytes.Buffer
		if code := dispatch(args, &stdout, &stderr); code != exitInvalid {
			t.Fatalf("%v: exit %d, want 2", args, code)
		}
	}
}

// TestConformanceRedirectIsAFailedCheck: a target that redirects every call
// to another server fails its checks naming the redirect, and the other
// server never receives a request (so never a credential).
func TestConformanceRedirectIsAFailedCheck(t *testing.T) {
	var reached atomic.Int64
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reached.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"hits":[]}`))
	}))
	defer sink.Close()
	real := serveRagtarget(t, ragtarget.FilterPrefilter)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/capabilities" {
			resp, err := http.Get(real + r.URL.Path)
			if err != nil {
				http.Error(w, "down", http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.Copy(w, resp.Body)
			return
		}
		http.Redirect(w, r, sink.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer proxy.Close()
	code, out, errOut := runConformanceAgainst(t, proxy.URL)
	if code != exitFailed || !strings.Contains(out, "FAIL") || !strings.Contains(out, "307") {
		t.Fatalf("exit %d, want 1 with a failed check naming status 307\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if n := reached.Load(); n != 0 {
		t.Fatalf("the redirect target received %d requests", n)
	}
}

// TestConformanceRefusesURLOutsideItsAllowlist: the same URL rules as the
// operator; nothing is sent.
func TestConformanceRefusesURLOutsideItsAllowlist(t *testing.T) {
	url := serveRagtarget(t, ragtarget.FilterPrefilter)
	code, _, errOut := runConformanceAgainst(t, url+"/tenant-a/../tenant-b/", "--allowed-target-urls", url+"/tenant-a/")
	if code != exitInvalid || !strings.Contains(errOut, "not in the operator's allowed target URLs") {
		t.Fatalf("exit %d, want 2 with URLNotAllowed; stderr:\n%s", code, errOut)
	}
}
