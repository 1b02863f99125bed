package httpdriver_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/driver"
	httpdriver "github.com/ragcanary/ragcanary/internal/driver/http"
)

const persona = driver.Token("persona-secret")

// scripted serves every request with fn and counts calls.
func scripted(t *testing.T, cfg httpdriver.Config, fn http.HandlerFunc) (*httpdriver.Driver, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		fn(w, r)
	}))
	t.Cleanup(srv.Close)
	cfg.BaseURL = srv.URL
	cfg.SourceToken = "source-secret"
	if cfg.RetryBackoff == 0 {
		cfg.RetryBackoff = time.Millisecond
	}
	d, err := httpdriver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d, &calls
}

func reply(status int, contentType, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}

func TestSearchClassification(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply http.HandlerFunc
		// kind is the expected error kind; 0 means success.
		kind driver.Kind
		// hits is the expected number of hits on success.
		hits int
	}{
		{name: "ok", reply: reply(200, "application/json", `{"hits":[{"chunkId":"d#0","documentId":"d","score":1.5}]}`), hits: 1},
		{name: "ok empty", reply: reply(200, "application/json", `{"hits":[]}`), hits: 0},
		{name: "401", reply: reply(401, "application/json", `{"code":"x","message":"y"}`), kind: driver.Unauthorized},
		{name: "403", reply: reply(403, "", ""), kind: driver.Unauthorized},
		{name: "400", reply: reply(400, "application/json", `{"code":"x","message":"y"}`), kind: driver.Permanent},
		{name: "404", reply: reply(404, "", ""), kind: driver.Permanent},
		{name: "429", reply: reply(429, "", ""), kind: driver.Transient},
		{name: "500", reply: reply(500, "text/plain", "secret-body"), kind: driver.Transient},
		{name: "503", reply: reply(503, "application/json", `{"code":"x","message":"y"}`), kind: driver.Transient},
		{name: "truncated JSON", reply: reply(200, "application/json", `{"hits":[{"chunkId":"`), kind: driver.Transient},
		{name: "missing hits", reply: reply(200, "application/json", `{}`), kind: driver.Transient},
		{name: "not JSON", reply: reply(200, "text/html", `<html>login</html>`), kind: driver.Transient},
		{name: "hit without IDs", reply: reply(200, "application/json", `{"hits":[{"score":1}]}`), kind: driver.Transient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := scripted(t, httpdriver.Config{}, tc.reply)
			hits, err := d.Search(context.Background(), persona, "q", 5)
			if tc.kind == 0 {
				if err != nil || len(hits) != tc.hits {
					t.Fatalf("hits=%v err=%v, want %d hits", hits, err, tc.hits)
				}
				return
			}
			if got, ok := driver.KindOf(err); !ok || got != tc.kind {
				t.Fatalf("err = %v, want kind %v", err, tc.kind)
			}
			if hits != nil {
				t.Fatalf("failure returned hits %v", hits)
			}
			for _, leak := range []string{"persona-secret", "source-secret", "secret-body"} {
				if strings.Contains(err.Error(), leak) {
					t.Fatalf("error %q leaks %q", err, leak)
				}
			}
		})
	}
}

func TestRetriesOnlyTransientErrors(t *testing.T) {
	var n atomic.Int32
	d, calls := scripted(t, httpdriver.Config{Retries: 3}, func(w http.ResponseWriter, _ *http.Request) {
		if n.Add(1) <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	if err := d.Grant(context.Background(), "doc", "user:a"); err != nil {
		t.Fatalf("Grant after two 503s: %v", err)
	}
	if calls.Load() != 3 {
		t.Fatalf("calls = %d, want 3", calls.Load())
	}

	d, calls = scripted(t, httpdriver.Config{Retries: 3}, reply(400, "", ""))
	if err := d.Grant(context.Background(), "doc", "user:a"); !driver.IsPermanent(err) {
		t.Fatalf("err = %v, want permanent", err)
	}
	if calls.Load() != 1 {
		t.Fatalf("permanent error retried: %d calls", calls.Load())
	}

	d, calls = scripted(t, httpdriver.Config{Retries: 2}, reply(503, "", ""))
	if err := d.Grant(context.Background(), "doc", "user:a"); !driver.IsTransient(err) {
		t.Fatalf("err = %v, want transient", err)
	}
	if calls.Load() != 3 {
		t.Fatalf("calls = %d, want 1 + 2 retries", calls.Load())
	}
}

func TestResponseSizeLimit(t *testing.T) {
	big := `{"hits":[` + strings.Repeat(`{"chunkId":"d#0","documentId":"d","score":1},`, 100) + `{"chunkId":"d#0","documentId":"d","score":1}]}`
	d, _ := scripted(t, httpdriver.Config{MaxResponseBytes: 512}, reply(200, "application/json", big))
	_, err := d.Search(context.Background(), persona, "q", 5)
	if !driver.IsTransient(err) || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("err = %v, want transient response too large", err)
	}
}

func TestPerCallTimeout(t *testing.T) {
	d, _ := scripted(t, httpdriver.Config{Timeout: 50 * time.Millisecond}, func(w http.ResponseWriter, r *http.Request) {
		// Consuming the body lets net/http notice the client giving up.
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	})
	_, err := d.Search(context.Background(), persona, "q", 5)
	if !driver.IsTransient(err) || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("err = %v, want transient timeout", err)
	}
}

func TestCredentialsPerCallSide(t *testing.T) {
	var got atomic.Value
	d, _ := scripted(t, httpdriver.Config{}, func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Get("Authorization"))
		if r.URL.Path == "/v1/search" {
			reply(200, "application/json", `{"hits":[]}`)(w, r)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	ctx := context.Background()
	if err := d.CreateDocument(ctx, driver.Document{ID: "doc", Title: "t"}); err != nil || got.Load() != "Bearer source-secret" {
		t.Fatalf("CreateDocument err=%v auth=%v", err, got.Load())
	}
	if _, err := d.Search(ctx, persona, "q", 1); err != nil || got.Load() != "Bearer persona-secret" {
		t.Fatalf("Search err=%v auth=%v", err, got.Load())
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []httpdriver.Config{
		{BaseURL: ""},
		{BaseURL: "ftp://x"},
		{BaseURL: "http://x", Retries: -1},
	} {
		if _, err := httpdriver.New(cfg); err == nil {
			t.Fatalf("New(%+v) accepted", cfg)
		}
	}
}
