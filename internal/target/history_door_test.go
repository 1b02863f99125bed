package target_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/surface"
	"github.com/ragcanary/ragcanary/internal/target"
)

// TestDoorKeepsConversationsInItsHistory: the door's chat clients keep
// their conversations in the History the manager handed it, under the
// corpus's key, whatever client (plain or streaming) a run resolved; a
// run's end frees its conversation, a deleted corpus all of its own.
func TestDoorKeepsConversationsInItsHistory(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "c", "object": "chat.completion", "created": 1, "model": "m",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": "an answer"}}}})
	}))
	t.Cleanup(srv.Close)
	history := surface.NewHistory(1 << 20)
	door := &target.Door{Allow: target.AllowAny(), HTTPClient: srv.Client(), History: history}
	const persona driver.Token = "persona-token"
	ctx := context.Background()
	start := func(ns string, stream bool) string {
		t.Helper()
		declared := &v1alpha1.CorpusSurfaces{Chat: &v1alpha1.ChatSurface{Type: v1alpha1.ChatOpenAI, URL: srv.URL + "/v1/", Model: "m", Stream: stream}}
		d, err := door.WithSurfaces(nil, target.LimiterKey(ns, "corpus"), declared, time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		id, _, err := d.(driver.Conversations).StartConversation(ctx, persona, "q")
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	const turnBytes = int64(len("q") + len("an answer"))
	one := start("a", false)
	start("a", true)
	start("b", false)
	a, b := target.LimiterKey("a", "corpus"), target.LimiterKey("b", "corpus")
	if history.TenantBytes(a) != 2*turnBytes || history.TenantBytes(b) != turnBytes {
		t.Fatalf("corpus a holds %d bytes, b %d; want two conversations' and one's", history.TenantBytes(a), history.TenantBytes(b))
	}
	door.EndConversation("a", "corpus", one)
	if history.TenantBytes(a) != turnBytes {
		t.Errorf("after its run ended corpus a holds %d bytes, want one conversation's", history.TenantBytes(a))
	}
	door.Forget("a", "corpus")
	if history.TenantBytes(a) != 0 || history.Bytes() != history.TenantBytes(b) {
		t.Errorf("after corpus a was deleted: a holds %d, the history %d; want 0 and b's", history.TenantBytes(a), history.Bytes())
	}
}
