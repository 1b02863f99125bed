package surface

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// stainless lists the SDK's X-Stainless-* headers a request carried.
func stainless(h http.Header) []string {
	var out []string
	for k := range h {
		if strings.HasPrefix(strings.ToLower(k), "x-stainless-") {
			out = append(out, k+": "+h.Get(k))
		}
	}
	return out
}

// TestChatSendsNoClientHeaders: the SDK tells every server the operator's
// OS, architecture, Go and SDK versions in X-Stainless-* headers. None of
// them reaches a target from an answer, a conversation start or a
// follow-up, plain or streamed.
func TestChatSendsNoClientHeaders(t *testing.T) {
	for _, stream := range modes() {
		t.Run(modeName(stream), func(t *testing.T) {
			rec := newRecorder(t, numbered())
			cfg := chatConfig(rec.URL)
			cfg.Stream = stream
			c := newChat(t, cfg)
			ctx := context.Background()
			if _, err := c.Answer(ctx, persona, "q"); err != nil {
				t.Fatalf("Answer: %v", err)
			}
			id, _, err := c.StartConversation(ctx, persona, "q1")
			if err != nil {
				t.Fatalf("StartConversation: %v", err)
			}
			if _, err := c.FollowUp(ctx, persona, id, "q2"); err != nil {
				t.Fatalf("FollowUp: %v", err)
			}
			reqs := rec.requests()
			if len(reqs) != 3 {
				t.Fatalf("%d requests, want 3", len(reqs))
			}
			for i, r := range reqs {
				if got := stainless(r.header); len(got) != 0 {
					t.Errorf("request %d carried the SDK's client headers: %v", i, got)
				}
			}
		})
	}
}

// TestChatSendsClientHeadersWhenAsked: a corpus that sets
// sendClientHeaders gets the SDK's headers, as the SDK sends them.
func TestChatSendsClientHeadersWhenAsked(t *testing.T) {
	rec := newRecorder(t, numbered())
	cfg := chatConfig(rec.URL)
	cfg.SendClientHeaders = true
	if _, err := newChat(t, cfg).Answer(context.Background(), persona, "q"); err != nil {
		t.Fatalf("Answer: %v", err)
	}
	h := rec.requests()[0].header
	for _, k := range []string{"X-Stainless-Os", "X-Stainless-Arch", "X-Stainless-Runtime-Version"} {
		if h.Get(k) == "" {
			t.Errorf("%s missing with SendClientHeaders: %v", k, stainless(h))
		}
	}
}
