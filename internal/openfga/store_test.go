package openfga_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/openfga"
)

// hostileStores is an OpenFGA stand-in whose store list never ends: every
// page carries a fresh continuation token and stores entries (none named
// "canary"), each with a name of nameLen bytes. It counts the pages it
// was asked for.
type hostileStores struct {
	*httptest.Server
	pages atomic.Int64
}

func newHostileStores(t *testing.T, entries, nameLen int) *hostileStores {
	t.Helper()
	h := &hostileStores{}
	name := strings.Repeat("n", nameLen)
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page := h.pages.Add(1)
		w.Header().Set("Content-Type", "application/json")
		// No Content-Length: the body streams, so only what the client
		// reads bounds it.
		_, _ = io.WriteString(w, `{"stores":[`)
		for i := range entries {
			sep := ","
			if i == 0 {
				sep = ""
			}
			_, err := fmt.Fprintf(w, `%s{"id":"01J%023d","name":%q,"created_at":"2024-05-01T12:00:00Z","updated_at":"2024-05-01T12:00:00Z"}`,
				sep, int(page)*entries+i, name)
			if err != nil {
				return
			}
		}
		_, _ = fmt.Fprintf(w, `],"continuation_token":"page-%d"}`, page)
	}))
	t.Cleanup(h.Close)
	return h
}

// countingTransport counts the reply body bytes its client read.
type countingTransport struct {
	base http.RoundTripper
	read atomic.Int64
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &countingBody{ReadCloser: resp.Body, read: &c.read}
	return resp, nil
}

type countingBody struct {
	io.ReadCloser
	read *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read.Add(int64(n))
	return n, err
}

// Bounds of one store lookup the tests hold the client to: the bytes read
// over all pages (with one read's slack), the pages asked for, the bytes
// allocated meanwhile.
const (
	lookupBytes = 1<<20 + 64<<10
	lookupPages = 100
	lookupAlloc = 48 << 20
)

// lookupAgainst resolves "canary" at h through a counting client and
// returns the error, the bytes read and the bytes allocated.
func lookupAgainst(t *testing.T, h *hostileStores) (err error, read int64, alloc uint64) {
	t.Helper()
	counter := &countingTransport{base: http.DefaultTransport.(*http.Transport).Clone()}
	c, dialErr := openfga.Dial(openfga.Config{APIURL: h.URL, StoreName: "canary", Token: fakeToken,
		HTTPClient: &http.Client{Transport: counter}, Timeout: 60 * time.Second})
	if dialErr != nil {
		t.Fatal(dialErr)
	}
	alloc = testutil.Allocated(func() { _, err = c.ResolveStore(context.Background()) })
	return err, counter.read.Load(), alloc
}

// checkStopped asserts a lookup stopped with an error naming the bound,
// never a "not found", within the bounds.
func checkStopped(t *testing.T, h *hostileStores, err error, read int64, alloc uint64) {
	t.Helper()
	t.Logf("%d pages, %d bytes read, %d bytes allocated: %v", h.pages.Load(), read, alloc, err)
	if err == nil {
		t.Fatal("the lookup of a store in an endless list succeeded")
	}
	if strings.Contains(err.Error(), "no OpenFGA store is named") {
		t.Errorf("the lookup reports the store absent, but it read only part of the list: %v", err)
	}
	if !strings.Contains(err.Error(), "set the store ID") {
		t.Errorf("the error does not tell the user what to do: %v", err)
	}
	if n := h.pages.Load(); n > lookupPages {
		t.Errorf("the server was asked for %d pages, want at most %d", n, lookupPages)
	}
	if read > lookupBytes {
		t.Errorf("the client read %d bytes of store lists, want at most %d", read, lookupBytes)
	}
	if alloc > lookupAlloc {
		t.Errorf("the lookup allocated %d bytes, want at most %d", alloc, lookupAlloc)
	}
}

// TestStoreLookupOfHugePagesIsBounded: a server answering every page with
// about 64k stores (close to 8 MiB) and a fresh token is read no further
// than the lookup's byte bound, and the lookup fails saying so.
func TestStoreLookupOfHugePagesIsBounded(t *testing.T) {
	h := newHostileStores(t, 64_000, 8)
	err, read, alloc := lookupAgainst(t, h)
	checkStopped(t, h, err, read, alloc)
}

// TestStoreLookupOfEndlessPagesIsBounded: a server answering with pages of
// the size asked for, with long names, and a token that always advances,
// is read no further than the bounds.
func TestStoreLookupOfEndlessPagesIsBounded(t *testing.T) {
	h := newHostileStores(t, 100, 64)
	err, read, alloc := lookupAgainst(t, h)
	checkStopped(t, h, err, read, alloc)
}

// TestStoreLookupOfAnOversizedPageFails: a page holding more stores than
// were asked for is a malformed reply, not a list to search.
func TestStoreLookupOfAnOversizedPageFails(t *testing.T) {
	h := newHostileStores(t, 1000, 1)
	err, _, _ := lookupAgainst(t, h)
	if err == nil || strings.Contains(err.Error(), "no OpenFGA store is named") {
		t.Fatalf("got %v, want an error about the page", err)
	}
	if n := h.pages.Load(); n != 1 {
		t.Errorf("%d pages asked for, want 1", n)
	}
}

// TestStoreLookupDrawsOnTheReplyBudget: a lookup's pages hold their bytes
// from the corpus's reply budget until it ends, and give them back then; a
// budget too small for the list fails the lookup as a transient error, not
// as an absent store.
func TestStoreLookupDrawsOnTheReplyBudget(t *testing.T) {
	const canary = "01J000000000000000000000C2"
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("continuation_token") == "" {
			reply(w, 200, `{"stores":[{"id":"01J000000000000000000000C1","name":"`+strings.Repeat("o", 60)+`"}],"continuation_token":"page2"}`)
			return
		}
		reply(w, 200, `{"stores":[{"id":"`+canary+`","name":"canary"}],"continuation_token":""}`)
	})
	roomy := &testutil.CountingBudget{Size: 1 << 20}
	c, err := openfga.Dial(openfga.Config{APIURL: f.URL, StoreName: "canary", ReplyBudget: roomy})
	if err != nil {
		t.Fatal(err)
	}
	if id, err := c.ResolveStore(t.Context()); err != nil || id != canary {
		t.Fatalf("ResolveStore = %q, %v; want %s", id, err, canary)
	}
	if used, peak := roomy.Held(); used != 0 || peak < 150 {
		t.Errorf("the budget holds %d bytes after the lookup (want 0) and held at most %d (want both pages, over 150)", used, peak)
	}

	tight := &testutil.CountingBudget{Size: 100}
	c, err = openfga.Dial(openfga.Config{APIURL: f.URL, StoreName: "canary", ReplyBudget: tight})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ResolveStore(t.Context())
	if !driver.IsTransient(err) || !strings.Contains(err.Error(), "budget") {
		t.Fatalf("got %v, want a transient error naming the reply budget", err)
	}
	if used, _ := tight.Held(); used != 0 {
		t.Errorf("the budget holds %d bytes after the failed lookup, want 0", used)
	}
}
