package rest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// seen is one request the target received, as it arrived.
type seen struct {
	Method, Path, Query string
	Header              http.Header
	Body                string
}

// target is a loopback source that records every request and answers
// with reply (status 200 and "{}" when reply is nil).
type target struct {
	*httptest.Server
	mu    sync.Mutex
	got   []seen
	reply func(r *http.Request, n int) (int, string)
}

func newTarget(t *testing.T, reply func(r *http.Request, n int) (int, string)) *target {
	tg := &target{reply: reply}
	tg.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		tg.mu.Lock()
		n := len(tg.got)
		tg.got = append(tg.got, seen{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: string(body)})
		tg.mu.Unlock()
		status, out := http.StatusOK, "{}"
		if tg.reply != nil {
			status, out = tg.reply(r, n)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, out)
	}))
	t.Cleanup(tg.Close)
	return tg
}

func (tg *target) requests() []seen {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return append([]seen(nil), tg.got...)
}

// build is a driver for spec against tg's URL plus basePath.
func build(t *testing.T, tg *target, basePath string, spec *v1alpha1.RESTDriver, auth *Auth) *Driver {
	t.Helper()
	spec.URL = tg.URL + basePath
	d, err := New(Config{Spec: spec, BaseURL: spec.URL, Auth: auth, HTTPClient: tg.Client()})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return Unwrap(d)
}

func req(method, path string) v1alpha1.RESTRequest {
	return v1alpha1.RESTRequest{Method: v1alpha1.RESTMethod(method), Path: path}
}

// minimal declares only the required operations.
func minimal() *v1alpha1.RESTDriver {
	return &v1alpha1.RESTDriver{Operations: v1alpha1.RESTOperations{
		CreateDocument: []v1alpha1.RESTRequest{req("POST", "/docs")},
		DeleteDocument: []v1alpha1.RESTRequest{req("DELETE", "/docs/{{.DocumentID}}")},
	}}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
