package ragtarget_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// foreignHit is one hit of the Azure AI Search–shaped endpoint.
type foreignHit struct {
	Score      float64 `json:"@search.score"`
	ID         string  `json:"id"`
	DocumentID string  `json:"documentId"`
	Content    string  `json:"content"`
}

// postForeign calls the foreign search with the credential in header.
func postForeign(t *testing.T, url, header, value, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/indexes/docs/search", strings.NewReader(body))
	must(t, err)
	req.Header.Set("Content-Type", "application/json")
	if header != "" {
		req.Header.Set(header, value)
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	must(t, err)
	return resp.StatusCode, readAll(t, resp)
}

// foreignSearch is a successful search as the persona with key.
func foreignSearch(t *testing.T, url, key, body string) []foreignHit {
	t.Helper()
	status, reply := postForeign(t, url, "api-key", key, body)
	var out struct {
		Value []foreignHit `json:"value"`
	}
	if err := json.Unmarshal([]byte(reply), &out); status != http.StatusOK || err != nil || out.Value == nil {
		t.Fatalf("foreign search: %d %s, want 200 with a value list", status, reply)
	}
	return out.Value
}

// TestForeignSearchFiltersByPersona: the foreign shape carries the
// contract's retrieval: the granted persona gets the passage with the same
// chunk and score Search reports, the other persona an empty list.
func TestForeignSearchFiltersByPersona(t *testing.T) {
	e := start(t, ragtarget.Config{})
	e.plant()
	url := e.url

	got := foreignSearch(t, url, alice.Reveal(), `{"search":"zebrafinch","top":5}`)
	if len(got) != 1 || got[0].ID != "doc-1#0" || got[0].DocumentID != "doc-1" || !strings.Contains(got[0].Content, "near the river") {
		t.Fatalf("alice's hits = %+v, want doc-1#0 with its passage", got)
	}
	want, err := e.drv.Search(context.Background(), alice, "zebrafinch", 5)
	must(t, err)
	if len(want) != 1 || want[0].ChunkID != got[0].ID || want[0].Score != got[0].Score || got[0].Score <= 0 {
		t.Fatalf("foreign hit %+v differs from the contract's %+v", got[0], want)
	}
	if other := foreignSearch(t, url, bob.Reveal(), `{"search":"zebrafinch","top":5}`); len(other) != 0 {
		t.Fatalf("bob's hits = %+v, want none", other)
	}
}

// TestForeignSearchReflectsRevocationAtTheACLSync: the same lag as Search.
func TestForeignSearchReflectsRevocationAtTheACLSync(t *testing.T) {
	e := start(t, ragtarget.Config{ACLSyncInterval: 3 * time.Second})
	e.plant() // t=1s
	url := e.url
	must(t, e.drv.Revoke(context.Background(), "doc-1", "user:alice"))
	e.advance() // t=2s
	if got := foreignSearch(t, url, alice.Reveal(), `{"search":"zebrafinch"}`); len(got) != 1 {
		t.Fatalf("before the ACL sync: hits = %+v, want the passage still served", got)
	}
	e.advance() // t=3s: ACL sync
	if got := foreignSearch(t, url, alice.Reveal(), `{"search":"zebrafinch"}`); len(got) != 0 {
		t.Fatalf("after the ACL sync: hits = %+v, want none", got)
	}
}

// TestForeignSearchHonoursTop: top bounds the hits like the contract's k.
func TestForeignSearchHonoursTop(t *testing.T) {
	e := start(t, ragtarget.Config{})
	for _, id := range []string{"doc-1", "doc-2", "doc-3"} {
		e.create(id, "the zebrafinch nests near the river", "user:alice")
	}
	e.advance()
	url := e.url
	for top, want := range map[string]int{`,"top":2`: 2, ``: 3} {
		if got := foreignSearch(t, url, alice.Reveal(), `{"search":"zebrafinch"`+top+`}`); len(got) != want {
			t.Errorf("top %q: %d hits, want %d", top, len(got), want)
		}
	}
}

// TestForeignSearchTakesTheKeyOnlyFromAPIKey: no key, an unknown key, the
// source credential and a persona token sent as a bearer token are all 403
// in Azure's error shape; the same token in api-key is accepted.
func TestForeignSearchTakesTheKeyOnlyFromAPIKey(t *testing.T) {
	e := start(t, ragtarget.Config{})
	url := e.url
	const body = `{"search":"zebrafinch"}`
	for name, cred := range map[string][2]string{
		"no key":       {"", ""},
		"unknown key":  {"api-key", "not-a-persona-token"},
		"source token": {"api-key", sourceToken},
		"bearer token": {"Authorization", "Bearer " + alice.Reveal()},
	} {
		status, reply := postForeign(t, url, cred[0], cred[1], body)
		if status != http.StatusForbidden || !strings.Contains(reply, `"code":"Forbidden"`) {
			t.Errorf("%s: %d %s, want 403 Forbidden", name, status, reply)
		}
	}
	foreignSearch(t, url, alice.Reveal(), body)
}

// TestForeignSearchRejectsBadBodies: a body that is not a search request is
// 400, never an empty result ragcanary could take for an exclusion.
func TestForeignSearchRejectsBadBodies(t *testing.T) {
	e := start(t, ragtarget.Config{})
	url := e.url
	for _, body := range []string{`not json`, `{}`, `{"search":""}`, `{"search":"x","top":0}`, `{"search":"x","top":101}`, `{"search":1}`} {
		status, reply := postForeign(t, url, "api-key", alice.Reveal(), body)
		if status != http.StatusBadRequest || !strings.Contains(reply, `"code":"InvalidRequestParameter"`) {
			t.Errorf("body %s: %d %s, want 400 InvalidRequestParameter", body, status, reply)
		}
	}
	if got := foreignSearch(t, url, alice.Reveal(), `{"search":"x","top":100}`); !slices.Equal(got, []foreignHit{}) {
		t.Fatalf("a valid search of an empty index = %+v, want no hits", got)
	}
}
