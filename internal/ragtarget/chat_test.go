package ragtarget_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/respjson"

	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// chatModel is echoed back by the service; any name will do.
const chatModel = "ragtarget-test-model"

// chatClient is the official OpenAI SDK pointed at ragtarget. No retries: a
// refused call must surface as the refusal, not as a retried one.
func chatClient(url, token string) openai.Client {
	return openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey(token), option.WithMaxRetries(0),
		option.WithRequestTimeout(5*time.Second))
}

func chatParams(msgs ...openai.ChatCompletionMessageParamUnion) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: chatModel, Messages: msgs}
}

// chat asks one non-stream completion and fails the test on an error.
func chat(t *testing.T, c openai.Client, msgs ...openai.ChatCompletionMessageParamUnion) *openai.ChatCompletion {
	t.Helper()
	got, err := c.Chat.Completions.New(context.Background(), chatParams(msgs...))
	if err != nil {
		t.Fatalf("chat completion: %v", err)
	}
	if len(got.Choices) != 1 {
		t.Fatalf("chat completion has %d choices, want 1", len(got.Choices))
	}
	return got
}

// citations reads the non-standard context.citations out of a message or
// delta's extra fields; ok is false when there is no context at all.
func citations(t *testing.T, extra map[string]respjson.Field) (ids []string, ok bool) {
	t.Helper()
	f, ok := extra["context"]
	if !ok {
		return nil, false
	}
	var ctx struct {
		Citations []struct {
			ID    string `json:"id"`
			Title string `json:"title"`
		} `json:"citations"`
	}
	if err := json.Unmarshal([]byte(f.Raw()), &ctx); err != nil || ctx.Citations == nil {
		t.Fatalf("context %s is not {citations: [...]}: %v", f.Raw(), err)
	}
	ids = []string{}
	for _, c := range ctx.Citations {
		if c.Title != strings.Split(c.ID, "#")[0] {
			t.Fatalf("citation %+v: title is not the document ID", c)
		}
		ids = append(ids, c.ID)
	}
	return ids, true
}

// chatShows reports whether a reply quotes or cites the zebrafinch passage.
func chatShows(t *testing.T, got *openai.ChatCompletion) bool {
	t.Helper()
	msg := got.Choices[0].Message
	ids, _ := citations(t, msg.JSON.ExtraFields)
	return strings.Contains(msg.Content, "near the river") || slices.Contains(ids, "doc-1#0")
}

// plant puts the zebrafinch passage where alice may read it and waits for
// the content sync to index it.
func (e *env) plant() {
	e.t.Helper()
	e.create("doc-1", "the zebrafinch nests near the river", "user:alice")
	e.advance()
}

// TestChatCompletionAnswersAsThePersona: the chat surface is the contract's
// Answer in OpenAI's envelope: the same text, filled into and served from
// the same per-principal cache, with the citations in context.citations.
func TestChatCompletionAnswersAsThePersona(t *testing.T) {
	e := start(t, ragtarget.Config{AnswerCacheTTL: time.Minute})
	e.plant()
	url := e.url

	got := chat(t, chatClient(url, alice.Reveal()), openai.SystemMessage("be brief"), openai.UserMessage(question))
	if got.Object != "chat.completion" || got.Model != chatModel || !strings.HasPrefix(got.ID, "chatcmpl-") ||
		got.Choices[0].FinishReason != "stop" || got.Choices[0].Message.Role != "assistant" {
		t.Fatalf("envelope = %s, want a chat.completion echoing the model and stopping", got.RawJSON())
	}
	if got.Usage.PromptTokens != 7 || got.Usage.CompletionTokens != 9 || got.Usage.TotalTokens != 16 {
		t.Fatalf("usage = %+v, want words counted: 7 prompt, 9 completion", got.Usage)
	}
	msg := got.Choices[0].Message
	if ids, _ := citations(t, msg.JSON.ExtraFields); !strings.Contains(msg.Content, "near the river") || !slices.Equal(ids, []string{"doc-1#0"}) {
		t.Fatalf("alice's reply = %s, want the passage quoted and doc-1#0 cited", msg.RawJSON())
	}
	// Cached under alice and the bare question before Answer ever ran.
	if _, ok := e.svc.AnswerCacheExpiry("user:alice", question); !ok {
		t.Fatal("the chat answer is not in the answer cache")
	}
	want, err := e.drv.Answer(context.Background(), alice, question)
	must(t, err)
	if msg.Content != want.Text {
		t.Fatalf("chat content %q differs from the contract's answer %q", msg.Content, want.Text)
	}

	other := chat(t, chatClient(url, bob.Reveal()), openai.UserMessage(question)).Choices[0].Message
	ids, ok := citations(t, other.JSON.ExtraFields)
	if strings.Contains(other.Content, "near the river") || !ok || len(ids) != 0 || !strings.Contains(other.Content, `"`+question+`"`) {
		t.Fatalf("bob's reply = %s, want the question echoed and an empty citation list", other.RawJSON())
	}
}

// TestChatCompletionReflectsRevocationAtTheACLSync: a revoked grant keeps
// answering until the ACL sync applies it, then never again, cache or not.
func TestChatCompletionReflectsRevocationAtTheACLSync(t *testing.T) {
	e := start(t, ragtarget.Config{ACLSyncInterval: 3 * time.Second, AnswerCacheTTL: time.Minute})
	e.plant() // t=1s
	c := chatClient(e.url, alice.Reveal())
	if !chatShows(t, chat(t, c, openai.UserMessage(question))) {
		t.Fatal("the granted persona does not get the passage")
	}
	must(t, e.drv.Revoke(context.Background(), "doc-1", "user:alice"))
	e.advance() // t=2s: not yet synced
	if !chatShows(t, chat(t, c, openai.UserMessage(question))) {
		t.Fatal("the revocation showed before the ACL sync applied it")
	}
	e.advance() // t=3s: ACL sync
	if got := chat(t, c, openai.UserMessage(question)); chatShows(t, got) {
		t.Fatalf("after the ACL sync the reply still serves the revoked passage: %s", got.RawJSON())
	}
}

// streamed is what one streamed completion delivered.
type streamed struct {
	acc       openai.ChatCompletionAccumulator
	role      string   // the first chunk's role
	pieces    []string // non-empty content deltas, in order
	cited     []string // context.citations, wherever they came
	citedWith int      // how many pieces had arrived with the citations
	finish    string
	finishAt  int // how many pieces had arrived with the finish reason
}

func streamChat(t *testing.T, c openai.Client, msgs ...openai.ChatCompletionMessageParamUnion) streamed {
	t.Helper()
	stream := c.Chat.Completions.NewStreaming(context.Background(), chatParams(msgs...))
	defer func() { _ = stream.Close() }()
	var s streamed
	for i := 0; stream.Next(); i++ {
		ch := stream.Current()
		if !s.acc.AddChunk(ch) || len(ch.Choices) != 1 {
			t.Fatalf("chunk %d was not accepted: %s", i, ch.RawJSON())
		}
		s.record(t, i, ch.Choices[0])
	}
	must(t, stream.Err())
	return s
}

func (s *streamed) record(t *testing.T, i int, c openai.ChatCompletionChunkChoice) {
	if i == 0 {
		s.role = c.Delta.Role
	}
	if c.Delta.Content != "" {
		s.pieces = append(s.pieces, c.Delta.Content)
	}
	if ids, ok := citations(t, c.Delta.JSON.ExtraFields); ok {
		s.cited, s.citedWith = ids, len(s.pieces)
	}
	if c.FinishReason != "" {
		s.finish, s.finishAt = c.FinishReason, len(s.pieces)
	}
}

// TestChatCompletionStreamsTheSameAnswer: the stream carries the non-stream
// text in several pieces, the role first, the citations with the last piece
// and the finish reason after it.
func TestChatCompletionStreamsTheSameAnswer(t *testing.T) {
	e := start(t, ragtarget.Config{})
	e.plant()
	c := chatClient(e.url, alice.Reveal())
	want := chat(t, c, openai.UserMessage(question)).Choices[0].Message.Content

	s := streamChat(t, c, openai.UserMessage(question))
	t.Logf("%d content chunks for %d words", len(s.pieces), len(strings.Fields(want)))
	if got := s.acc.Choices; len(got) != 1 || got[0].Message.Content != want || strings.Join(s.pieces, "") != want {
		t.Fatalf("streamed %q, want the non-stream answer %q", s.pieces, want)
	}
	if len(s.pieces) < 2 || s.role != "assistant" {
		t.Fatalf("%d content chunks, first role %q: want several, the first saying assistant", len(s.pieces), s.role)
	}
	if !slices.Equal(s.cited, []string{"doc-1#0"}) || s.citedWith != len(s.pieces) {
		t.Fatalf("citations %q arrived after %d of %d pieces, want doc-1#0 with the last", s.cited, s.citedWith, len(s.pieces))
	}
	if s.finish != "stop" || s.finishAt != len(s.pieces) {
		t.Fatalf("finish %q after %d pieces, want stop after all %d", s.finish, s.finishAt, len(s.pieces))
	}
}

// TestChatCompletionStreamWireFormat: what the SDK hides — the media type,
// data-only events and the [DONE] sentinel that ends an OpenAI stream. At
// debug level, so the events pass the access log's status recorder.
func TestChatCompletionStreamWireFormat(t *testing.T) {
	var logs testutil.LockedBuffer
	e := start(t, ragtarget.Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	e.plant()
	resp := postChat(t, e.url, "Bearer "+alice.Reveal(), `{"model":"m","stream":true,"messages":[{"role":"user","content":"`+question+`"}]}`)
	body := readAll(t, resp)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, type %q: want a 200 event stream", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n")
	for _, ev := range events {
		if !strings.HasPrefix(ev, "data: ") || strings.Contains(ev, "\n") {
			t.Fatalf("event %q is not one data line", ev)
		}
	}
	if last := events[len(events)-1]; last != "data: [DONE]" || len(events) < 5 {
		t.Fatalf("%d events ending %q, want role, pieces, stop and [DONE]", len(events), last)
	}
}

// TestChatHistoryIsEvidenceOnlyUnderTheDefect: a revoked passage an earlier
// assistant turn quoted keeps coming back when the conversation-memory
// defect is configured, and never otherwise, while search and a fresh chat
// exclude it either way.
func TestChatHistoryIsEvidenceOnlyUnderTheDefect(t *testing.T) {
	for _, reuses := range []bool{false, true} {
		t.Run(fmt.Sprintf("reuses-history=%v", reuses), func(t *testing.T) {
			e := start(t, ragtarget.Config{ACLSyncInterval: 3 * time.Second, ConversationReusesHistory: reuses})
			e.plant()
			c := chatClient(e.url, alice.Reveal())
			first := chat(t, c, openai.UserMessage(question))
			if !chatShows(t, first) {
				t.Fatal("the first turn does not get the passage")
			}
			must(t, e.drv.Revoke(context.Background(), "doc-1", "user:alice"))
			e.advanceTo(10 * time.Second) // three ACL syncs later
			if e.visible(alice, "zebrafinch", "doc-1") || chatShows(t, chat(t, c, openai.UserMessage(question))) {
				t.Fatal("search or a chat without history still serves the revoked passage")
			}
			history := []openai.ChatCompletionMessageParamUnion{openai.UserMessage(question), openai.AssistantMessage(first.Choices[0].Message.Content)}
			for turn := range 2 {
				got := chat(t, c, append(history, openai.UserMessage("tell me more"))...)
				if chatShows(t, got) != reuses {
					t.Fatalf("turn %d: reply %s; want the revoked passage back only under the defect", turn, got.RawJSON())
				}
				history = append(history, openai.UserMessage("tell me more"), openai.AssistantMessage(got.Choices[0].Message.Content))
			}
		})
	}
}

// TestChatRefusesUnknownKeysAndBadRequests: an unknown persona key, the
// source credential and no key are 401 in OpenAI's error shape; a
// conversation not ending with the user is 400. No credential is logged.
func TestChatRefusesUnknownKeysAndBadRequests(t *testing.T) {
	var logs testutil.LockedBuffer
	e := start(t, ragtarget.Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	url := e.url
	for _, key := range []string{"not-a-persona-token", sourceToken} {
		c := chatClient(url, key)
		_, err := c.Chat.Completions.New(context.Background(), chatParams(openai.UserMessage(question)))
		if status, typ := openAIStatus(err); status != http.StatusUnauthorized || typ != "invalid_request_error" {
			t.Errorf("unknown key: err = %v, want a 401 invalid_request_error", err)
		}
	}
	resp := postChat(t, url, "", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	if body := readAll(t, resp); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, `"type":"invalid_request_error"`) {
		t.Errorf("no key: %d %s, want 401 with an OpenAI error", resp.StatusCode, body)
	}
	c := chatClient(url, alice.Reveal())
	_, err := c.Chat.Completions.New(context.Background(),
		chatParams(openai.UserMessage(question), openai.AssistantMessage("an answer")))
	if status, _ := openAIStatus(err); status != http.StatusBadRequest {
		t.Errorf("assistant last: err = %v, want 400", err)
	}
	if out := logs.String(); !strings.Contains(out, "path=/v1/chat/completions") ||
		strings.Contains(out, alice.Reveal()) || strings.Contains(out, sourceToken) || strings.Contains(out, "not-a-persona-token") {
		t.Fatalf("want the calls logged without any credential:\n%s", out)
	}
}

// openAIStatus unpacks the SDK's API error; 0 when err is not one.
func openAIStatus(err error) (int, string) {
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		return 0, ""
	}
	return apiErr.StatusCode, apiErr.Type
}

// postChat is a raw chat call, for what the SDK does not show.
func postChat(t *testing.T, url, authorization, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	must(t, err)
	req.Header.Set("Content-Type", "application/json")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	must(t, err)
	return resp
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	return string(b)
}
