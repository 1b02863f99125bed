package httpdriver_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/ragcanary/ragcanary/internal/driver"
	httpdriver "github.com/ragcanary/ragcanary/internal/driver/http"
)

// TestAnswerDeclaredStatus checks the v1.1 status and reason of an answer:
// absent stays empty (a v1.0 server), known values come through, and a value
// outside the contract is an error, never read as "not declared".
func TestAnswerDeclaredStatus(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		// status and reason are the expected declaration on success.
		status driver.AnswerStatus
		reason driver.AnswerReason
		// fails is true when the reply must be a transient driver error.
		fails bool
	}{
		{name: "v1.0 reply, nothing declared", body: `{"answer":"a","citations":[]}`},
		{name: "answer", body: `{"answer":"a","citations":["d#0"],"status":"answer"}`, status: driver.StatusAnswer},
		{name: "not found with reason", body: `{"answer":"","citations":[],"status":"not_found","reason":"NO_EVIDENCE"}`,
			status: driver.StatusNotFound, reason: driver.ReasonNoEvidence},
		{name: "block unauthorized", body: `{"answer":"","citations":[],"status":"block","reason":"UNAUTHORIZED"}`,
			status: driver.StatusBlock, reason: driver.ReasonUnauthorized},
		{name: "unknown status", body: `{"answer":"a","citations":[],"status":"maybe"}`, fails: true},
		{name: "unknown reason", body: `{"answer":"a","citations":[],"status":"block","reason":"BECAUSE"}`, fails: true},
		{name: "empty status", body: `{"answer":"a","citations":[],"status":""}`, fails: true},
		{name: "status of the wrong type", body: `{"answer":"a","citations":[],"status":3}`, fails: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := scripted(t, httpdriver.Config{}, reply(200, "application/json", tc.body))
			a, err := d.Answer(context.Background(), persona, "q")
			if tc.fails {
				if !driver.IsTransient(err) {
					t.Fatalf("err = %v (answer %+v), want a transient driver error", err, a)
				}
				return
			}
			if err != nil || a.Status != tc.status || a.Reason != tc.reason {
				t.Fatalf("answer = %+v, err = %v; want status %q reason %q", a, err, tc.status, tc.reason)
			}
		})
	}
}

func TestCapabilitiesConversationFlag(t *testing.T) {
	for body, want := range map[string]bool{
		`{"contractVersion":"v1","revocationMethods":[],"answer":true}`:                      false, // a v1.0 server
		`{"contractVersion":"v1","revocationMethods":[],"answer":true,"conversation":false}`: false,
		`{"contractVersion":"v1","revocationMethods":[],"answer":true,"conversation":true}`:  true,
	} {
		d, _ := scripted(t, httpdriver.Config{}, reply(200, "application/json", body))
		c, err := d.Capabilities(context.Background())
		if err != nil || c.Conversation != want {
			t.Errorf("%s: conversation = %v, err = %v; want %v", body, c.Conversation, err, want)
		}
	}
}

// TestConversationReplies checks what a hostile or broken server can send
// back on the conversation endpoints: each is an error of the right kind.
func TestConversationReplies(t *testing.T) {
	ctx := context.Background()
	t.Run("start", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			reply http.HandlerFunc
			kind  driver.Kind
		}{
			{name: "ok", reply: reply(201, "application/json", `{"conversationId":"c-1","turn":{"answer":"a","citations":["d#0"],"status":"answer"}}`)},
			{name: "no ID", reply: reply(201, "application/json", `{"turn":{"answer":"a","citations":[]}}`), kind: driver.Transient},
			{name: "ID outside the pattern", reply: reply(201, "application/json", `{"conversationId":"../x","turn":{"answer":"a","citations":[]}}`), kind: driver.Transient},
			{name: "turn without citations", reply: reply(201, "application/json", `{"conversationId":"c-1","turn":{"answer":"a"}}`), kind: driver.Transient},
			{name: "unknown status", reply: reply(201, "application/json", `{"conversationId":"c-1","turn":{"answer":"a","citations":[],"status":"shrug"}}`), kind: driver.Transient},
			{name: "old server 404", reply: reply(404, "", ""), kind: driver.Permanent},
		} {
			d, _ := scripted(t, httpdriver.Config{}, tc.reply)
			id, a, err := d.StartConversation(ctx, persona, "q")
			if tc.kind == 0 {
				if err != nil || id != "c-1" || a.Status != driver.StatusAnswer || len(a.Citations) != 1 {
					t.Errorf("%s: id=%q answer=%+v err=%v", tc.name, id, a, err)
				}
				continue
			}
			if k, _ := driver.KindOf(err); k != tc.kind || id != "" {
				t.Errorf("%s: id=%q err=%v, want kind %v and no ID", tc.name, id, err, tc.kind)
			}
		}
	})
	t.Run("follow-up", func(t *testing.T) {
		var path string
		d, _ := scripted(t, httpdriver.Config{Retries: 2}, func(w http.ResponseWriter, r *http.Request) {
			path = r.URL.Path
			reply(404, "application/json", `{"code":"not_found","message":"no such conversation"}`)(w, r)
		})
		_, err := d.FollowUp(ctx, persona, "c-1", "q")
		if !driver.IsPermanent(err) || !strings.Contains(err.Error(), "404") {
			t.Fatalf("vanished conversation: err = %v, want a permanent 404", err)
		}
		if path != "/v1/conversations/c-1/turns" {
			t.Fatalf("path = %q", path)
		}
		if _, err := d.FollowUp(ctx, persona, "a/b", "q"); !driver.IsPermanent(err) {
			t.Fatalf("an ID outside the pattern was sent: err = %v", err)
		}
	})
}
