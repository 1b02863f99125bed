package surface

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/driver"
)

const citationsPointer = "/choices/0/message/context/citations"

func chatConfig(url string) ChatConfig {
	return ChatConfig{URL: url + "/v1/", Model: "gpt-test", HTTPClient: followingClient()}
}

func newChat(t *testing.T, cfg ChatConfig) *Chat {
	t.Helper()
	c, err := NewChat(cfg)
	if err != nil {
		t.Fatalf("NewChat: %v", err)
	}
	return c
}

// completion is a non-streamed reply; citations, when not nil, go where
// Azure's "on your data" puts them.
func completion(text string, citations any) map[string]any {
	msg := map[string]any{"role": "assistant", "content": text}
	if citations != nil {
		msg["context"] = map[string]any{"citations": citations}
	}
	return map[string]any{"id": "c", "object": "chat.completion", "created": 1, "model": "gpt-test",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "stop"}}}
}

// chunk is one streamed chunk of choice index.
func chunk(index int, content, finish string, citations any) map[string]any {
	delta := map[string]any{"content": content}
	if citations != nil {
		delta["context"] = map[string]any{"citations": citations}
	}
	choice := map[string]any{"index": index, "delta": delta}
	if finish != "" {
		choice["finish_reason"] = finish
	}
	return map[string]any{"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test", "choices": []any{choice}}
}

// writeStream replies with chunks as server-sent events, flushed one by
// one so the client reads a stream, not one body.
func writeStream(w http.ResponseWriter, done bool, chunks ...map[string]any) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, c := range chunks {
		b, _ := json.Marshal(c)
		_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
		w.(http.Flusher).Flush()
	}
	if done {
		_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
	}
}

// requestBody is what the client sent, decoded.
type requestBody struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
}

func decodeRequest(t *testing.T, r recorded) (requestBody, map[string]any) {
	t.Helper()
	var typed requestBody
	var raw map[string]any
	if err := json.Unmarshal(r.body, &typed); err != nil {
		t.Fatalf("request body is not JSON: %v: %s", err, r.body)
	}
	_ = json.Unmarshal(r.body, &raw)
	return typed, raw
}

func (b requestBody) transcript() string {
	var parts []string
	for _, m := range b.Messages {
		parts = append(parts, m.Role+":"+m.Content)
	}
	return strings.Join(parts, " | ")
}

// numbered answers request n (from 1) with "answer-n", streamed when the
// request asked for a stream.
func numbered() http.HandlerFunc {
	var n atomic.Int32
	return func(w http.ResponseWriter, r *http.Request) {
		text := fmt.Sprintf("answer-%d", n.Add(1))
		var body requestBody
		_ = json.NewDecoder(r.Body).Decode(&body)
		if body.Stream {
			writeStream(w, true, chunk(0, text[:3], "", nil), chunk(0, text[3:], "stop", nil))
			return
		}
		writeJSON(w, 200, completion(text, nil))
	}
}

func modes() []bool { return []bool{false, true} }

func modeName(stream bool) string {
	if stream {
		return "stream"
	}
	return "plain"
}

// TestChatSendsCredentialOnlyInItsHeader records every request of an
// answer, a conversation start and a follow-up, plain and streamed, and
// checks the token went only into Authorization, that ExtraBody arrived
// merged at the body's top level (a dotted key as one key), and that each
// call was one request to the configured URL.
func TestChatSendsCredentialOnlyInItsHeader(t *testing.T) {
	for _, stream := range modes() {
		t.Run(modeName(stream), func(t *testing.T) {
			rec := newRecorder(t, numbered())
			cfg := chatConfig(rec.URL)
			cfg.Stream, cfg.SystemPrompt = stream, "be brief"
			dataSources := []any{map[string]any{"type": "azure_search", "parameters": map[string]any{"index_name": "hr"}}}
			cfg.ExtraBody = map[string]any{"data_sources": dataSources, "a.b": 1.0, "seed": uint64(12345678901234567890)}
			c := newChat(t, cfg)
			ctx := context.Background()
			if _, err := c.Answer(ctx, persona, "q0"); err != nil {
				t.Fatalf("Answer: %v", err)
			}
			id, _, err := c.StartConversation(ctx, persona, "q1")
			if err != nil {
				t.Fatalf("StartConversation: %v", err)
			}
			if _, err := c.FollowUp(ctx, persona, id, "q2"); err != nil {
				t.Fatalf("FollowUp: %v", err)
			}
			assertCredentialOnlyIn(t, rec, "Authorization", "Bearer "+persona.Reveal())
			reqs := rec.requests()
			if len(reqs) != 3 {
				t.Fatalf("the server got %d requests, want 3 (one per call)", len(reqs))
			}
			for i, r := range reqs {
				body, raw := decodeRequest(t, r)
				if r.method != "POST" || r.uri != "/v1/chat/completions" || body.Model != "gpt-test" || body.Stream != stream {
					t.Errorf("request %d: %s %s model %q stream %v", i, r.method, r.uri, body.Model, body.Stream)
				}
				if !reflect.DeepEqual(raw["data_sources"], dataSources) || raw["a.b"] != 1.0 || !strings.Contains(string(r.body), `"seed":12345678901234567890`) {
					t.Errorf("request %d: ExtraBody did not arrive: %s", i, r.body)
				}
			}
		})
	}
}

// TestChatStreamConcatenatesDeltasAndCitations streams an answer in pieces,
// with a second choice to ignore and the citations in the last chunk only,
// and checks the answer is the first choice's deltas joined and every
// citation once.
func TestChatStreamConcatenatesDeltasAndCitations(t *testing.T) {
	cites := []any{map[string]any{"id": "doc-1#0", "title": "Payroll"}, "doc-2#3", map[string]any{"id": "doc-1#0"}}
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		writeStream(w, true,
			chunk(0, "", "", nil),
			chunk(0, "Hel", "", nil),
			chunk(1, "IGNORED", "", nil),
			chunk(0, "lo ", "", nil),
			chunk(0, "world", "stop", cites))
	})
	cfg := chatConfig(rec.URL)
	cfg.Stream, cfg.Citations = true, citationsPointer
	a, err := newChat(t, cfg).Answer(context.Background(), persona, "q")
	if err != nil {
		t.Fatalf("Answer: %v", err)
	}
	if a.Text != "Hello world" || !reflect.DeepEqual(a.Citations, []string{"doc-1#0", "doc-2#3"}) {
		t.Errorf("answer = %q cites %q, want %q cites [doc-1#0 doc-2#3]", a.Text, a.Citations, "Hello world")
	}
}

// TestChatStreamFailures checks that a stream which never finishes, carries
// an error event, or has no chunk with the citations is an error, never a
// shorter answer, and that an error event's text (here the echoed token)
// stays out of the error.
func TestChatStreamFailures(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply http.HandlerFunc
		cite  bool
		want  string
	}{
		{name: "no finish reason, no [DONE]", reply: func(w http.ResponseWriter, r *http.Request) {
			writeStream(w, false, chunk(0, "partial", "", nil))
		}, want: reasonUnfinished},
		{name: "no finish reason, [DONE]", reply: func(w http.ResponseWriter, r *http.Request) {
			writeStream(w, true, chunk(0, "partial", "", nil))
		}, want: reasonUnfinished},
		{name: "JSON instead of a stream", reply: func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, completion("not streamed", nil))
		}, want: reasonUnfinished},
		{name: "error event", reply: func(w http.ResponseWriter, r *http.Request) {
			writeStream(w, true, chunk(0, "a", "", nil), map[string]any{"error": map[string]any{"message": r.Header.Get("Authorization")}})
		}, want: reasonStreamError},
		{name: "no citations in any chunk", cite: true, reply: func(w http.ResponseWriter, r *http.Request) {
			writeStream(w, true, chunk(0, "a", "stop", nil))
		}, want: "citations pointer " + citationsPointer + " (in stream chunks /choices/0/delta/context/citations): in no chunk"},
		{name: "citations not an array", cite: true, reply: func(w http.ResponseWriter, r *http.Request) {
			writeStream(w, true, chunk(0, "a", "stop", map[string]any{"id": "x"}))
		}, want: "citations pointer " + citationsPointer + " (in stream chunks /choices/0/delta/context/citations): not an array"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder(t, tc.reply)
			cfg := chatConfig(rec.URL)
			cfg.Stream = true
			if tc.cite {
				cfg.Citations = citationsPointer
			}
			a, err := newChat(t, cfg).Answer(context.Background(), persona, "q")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !driver.IsTransient(err) {
				t.Fatalf("Answer = %+v, %v; want a transient error containing %q", a, err, tc.want)
			}
			if strings.Contains(err.Error(), persona.Reveal()) {
				t.Errorf("the error carries the token: %v", err)
			}
		})
	}
}

// TestChatCitationsFromRawJSON checks the citations pointer on plain
// replies: strings and objects with an id (string or number) are read, and
// a reply the pointer does not fit is an error naming it.
func TestChatCitationsFromRawJSON(t *testing.T) {
	for _, tc := range []struct {
		name      string
		citations any
		want      []string
		err       string
	}{
		{name: "strings and objects", citations: []any{"d#1", map[string]any{"id": "e#2", "url": "u"}, map[string]any{"id": 7}}, want: []string{"d#1", "e#2", "7"}},
		{name: "empty", citations: []any{}, want: []string{}},
		{name: "missing", err: "citations pointer " + citationsPointer + ": not found"},
		{name: "not an array", citations: "d#1", err: "citations pointer " + citationsPointer + ": not an array"},
		{name: "item a number", citations: []any{3}, err: "item 0 is neither a string nor an object with an id"},
		{name: "object without id", citations: []any{"ok", map[string]any{"title": "t"}}, err: "item 1 is neither"},
		{name: "empty id", citations: []any{""}, err: "item 0: " + reasonBadCitation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, completion("text", tc.citations)) })
			cfg := chatConfig(rec.URL)
			cfg.Citations = citationsPointer
			a, err := newChat(t, cfg).Answer(context.Background(), persona, "q")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !driver.IsTransient(err) {
					t.Errorf("Answer = %+v, %v; want a transient error containing %q", a, err, tc.err)
				}
				return
			}
			if err != nil || a.Text != "text" || !reflect.DeepEqual(a.Citations, tc.want) {
				t.Errorf("Answer = %+v, %v; want text with citations %q", a, err, tc.want)
			}
		})
	}
}

// TestChatMalformedReplies checks replies that are not completions.
func TestChatMalformedReplies(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply http.HandlerFunc
		want  string
	}{
		{name: "no choices", reply: func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, map[string]any{"id": "c", "choices": []any{}})
		}, want: reasonNoChoices},
		{name: "html", reply: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<html>login</html>"))
		}, want: reasonMalformed},
		{name: "broken JSON", reply: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"choices": [`))
		}, want: reasonMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder(t, tc.reply)
			a, err := newChat(t, chatConfig(rec.URL)).Answer(context.Background(), persona, "q")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !driver.IsTransient(err) {
				t.Errorf("Answer = %+v, %v; want a transient error containing %q", a, err, tc.want)
			}
		})
	}
}

// TestChatFollowUpSendsTheHistory checks each follow-up carries the system
// prompt, every earlier question and the answer the surface gave it (the
// streamed answer as joined), then the new question; and that a failed
// turn is left out of the history.
func TestChatFollowUpSendsTheHistory(t *testing.T) {
	for _, stream := range modes() {
		t.Run(modeName(stream), func(t *testing.T) {
			answer := numbered()
			var fail atomic.Bool
			rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
				if fail.Load() {
					w.WriteHeader(503)
					return
				}
				answer(w, r)
			})
			cfg := chatConfig(rec.URL)
			cfg.Stream, cfg.SystemPrompt = stream, "sys"
			c := newChat(t, cfg)
			ctx := context.Background()
			id, a, err := c.StartConversation(ctx, persona, "q1")
			if err != nil || a.Text != "answer-1" {
				t.Fatalf("StartConversation = %q, %+v, %v", id, a, err)
			}
			if a, err := c.FollowUp(ctx, persona, id, "q2"); err != nil || a.Text != "answer-2" {
				t.Fatalf("FollowUp q2 = %+v, %v", a, err)
			}
			fail.Store(true)
			if _, err := c.FollowUp(ctx, persona, id, "lost"); err == nil {
				t.Fatal("FollowUp against a 503 succeeded")
			}
			fail.Store(false)
			if a, err := c.FollowUp(ctx, persona, id, "q3"); err != nil || a.Text != "answer-3" {
				t.Fatalf("FollowUp q3 = %+v, %v", a, err)
			}
			reqs := rec.requests()
			want := []string{
				"system:sys | user:q1",
				"system:sys | user:q1 | assistant:answer-1 | user:q2",
				"system:sys | user:q1 | assistant:answer-1 | user:q2 | assistant:answer-2 | user:lost",
				"system:sys | user:q1 | assistant:answer-1 | user:q2 | assistant:answer-2 | user:q3",
			}
			if len(reqs) != len(want) {
				t.Fatalf("the server got %d requests, want %d", len(reqs), len(want))
			}
			for i, r := range reqs {
				body, _ := decodeRequest(t, r)
				if got := body.transcript(); got != want[i] {
					t.Errorf("request %d messages:\n got %s\nwant %s", i, got, want[i])
				}
			}
		})
	}
}

// TestChatFollowUpRefusals checks a follow-up in a conversation that is
// unknown, another persona's, or evicted is an error and sends nothing.
func TestChatFollowUpRefusals(t *testing.T) {
	rec := newRecorder(t, numbered())
	cfg := chatConfig(rec.URL)
	cfg.MaxConversations = 1
	c := newChat(t, cfg)
	ctx := context.Background()
	first, _, err := c.StartConversation(ctx, persona, "q")
	if err != nil {
		t.Fatal(err)
	}
	second, _, err := c.StartConversation(ctx, persona, "q")
	if err != nil {
		t.Fatal(err)
	}
	sent := rec.count()
	for _, tc := range []struct {
		name string
		who  driver.Token
		id   string
	}{
		{name: "unknown", who: persona, id: "conv-nope"},
		{name: "another persona's", who: "other-persona-token", id: second},
		{name: "evicted", who: persona, id: first},
	} {
		a, err := c.FollowUp(ctx, tc.who, tc.id, "again")
		if err == nil || !strings.Contains(err.Error(), reasonConvNotFound) || !driver.IsPermanent(err) {
			t.Errorf("%s: FollowUp = %+v, %v; want a permanent %q", tc.name, a, err, reasonConvNotFound)
		}
	}
	if n := rec.count(); n != sent {
		t.Errorf("refused follow-ups sent %d requests, want 0", n-sent)
	}
	if _, err := c.FollowUp(ctx, persona, second, "again"); err != nil {
		t.Errorf("the held conversation's follow-up failed: %v", err)
	}
}

// TestChatStatusIsClassifiedWithoutRetries checks each status maps to the
// contract driver's kinds, is named in the error, is asked exactly once
// (the SDK would retry 408/409/429/5xx), and that a server echoing the
// credential into its error reply cannot put it into the error.
func TestChatStatusIsClassifiedWithoutRetries(t *testing.T) {
	for _, stream := range modes() {
		for _, tc := range []struct {
			status int
			kind   driver.Kind
		}{
			{400, driver.Permanent}, {401, driver.Unauthorized}, {403, driver.Unauthorized}, {404, driver.Permanent},
			{408, driver.Transient}, {409, driver.Permanent}, {429, driver.Transient}, {500, driver.Transient}, {503, driver.Transient},
		} {
			rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "0")
				echoToken(tc.status)(w, r)
			})
			cfg := chatConfig(rec.URL)
			cfg.Stream = stream
			a, err := newChat(t, cfg).Answer(context.Background(), persona, "q")
			name := fmt.Sprintf("%s %d", modeName(stream), tc.status)
			if err == nil {
				t.Errorf("%s: Answer = %+v, want an error", name, a)
				continue
			}
			if got := kindOf(t, err); got != tc.kind || !strings.Contains(err.Error(), fmt.Sprintf("status %d", tc.status)) {
				t.Errorf("%s: err = %v (%v), want %v naming the status", name, err, got, tc.kind)
			}
			if n := rec.count(); n != 1 {
				t.Errorf("%s: the server got %d requests, want 1 (no retries)", name, n)
			}
			if strings.Contains(fmt.Sprintf("%v %+v %#v", err, err, err), persona.Reveal()) {
				t.Errorf("%s: the error carries the token: %v", name, err)
			}
		}
	}
}

// TestChatDoesNotFollowRedirects hands the client one that follows
// redirects; a redirect whose body reads as a completion must still be an
// error naming its status, and its target must hear nothing.
func TestChatDoesNotFollowRedirects(t *testing.T) {
	elsewhere := newRecorder(t, numbered())
	body, _ := json.Marshal(completion("read me as the answer", nil))
	for _, stream := range modes() {
		for _, status := range []int{302, 307, 308} {
			rec := newRecorder(t, redirectTo(elsewhere.URL+"/v1/chat/completions", status, string(body)))
			cfg := chatConfig(rec.URL)
			cfg.Stream = stream
			a, err := newChat(t, cfg).Answer(context.Background(), persona, "q")
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("status %d", status)) || !driver.IsPermanent(err) {
				t.Errorf("%s %d: Answer = %+v, %v; want a permanent error naming the status", modeName(stream), status, a, err)
			}
		}
	}
	if n := elsewhere.count(); n != 0 {
		t.Errorf("the redirect's target got %d requests, want 0", n)
	}
}

// TestChatOversizeReplyErrors checks MaxReplyBytes bounds a plain reply and
// a whole stream, each made of chunks that are small on their own.
func TestChatOversizeReplyErrors(t *testing.T) {
	for _, stream := range modes() {
		t.Run(modeName(stream), func(t *testing.T) {
			rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
				if stream {
					chunks := make([]map[string]any, 100)
					for i := range chunks {
						chunks[i] = chunk(0, strings.Repeat("x", 100), "", nil)
					}
					writeStream(w, true, append(chunks, chunk(0, "", "stop", nil))...)
					return
				}
				writeJSON(w, 200, completion(strings.Repeat("x", 10000), nil))
			})
			cfg := chatConfig(rec.URL)
			cfg.Stream, cfg.MaxReplyBytes = stream, 4096
			a, err := newChat(t, cfg).Answer(context.Background(), persona, "q")
			if err == nil || !strings.Contains(err.Error(), reasonTooLarge) || !driver.IsTransient(err) {
				t.Errorf("Answer = %d bytes, %v; want a transient %q", len(a.Text), err, reasonTooLarge)
			}
		})
	}
}

// TestChatTimeout checks a target that never answers costs the configured
// timeout, once.
func TestChatTimeout(t *testing.T) {
	for _, stream := range modes() {
		rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
		cfg := chatConfig(rec.URL)
		cfg.Stream, cfg.Timeout = stream, 100*time.Millisecond
		start := time.Now()
		_, err := newChat(t, cfg).Answer(context.Background(), persona, "q")
		if err == nil || !strings.Contains(err.Error(), reasonTimeout) || !driver.IsTransient(err) {
			t.Errorf("%s: err = %v, want a transient timeout", modeName(stream), err)
		}
		if elapsed := time.Since(start); elapsed > 5*time.Second || rec.count() != 1 {
			t.Errorf("%s: %d requests in %s, want 1 in about 100ms", modeName(stream), rec.count(), elapsed)
		}
	}
}

// TestChatIgnoresTheEnvironment sets the variables the SDK's NewClient
// reads and checks none of them reaches the request: not the base URL, not
// the key, not the custom headers.
func TestChatIgnoresTheEnvironment(t *testing.T) {
	elsewhere := newRecorder(t, numbered())
	const envKey = "env-key-should-never-travel"
	t.Setenv("OPENAI_BASE_URL", elsewhere.URL+"/v1/")
	t.Setenv("OPENAI_API_KEY", envKey)
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-From-Env: leaked")
	rec := newRecorder(t, numbered())
	if _, err := newChat(t, chatConfig(rec.URL)).Answer(context.Background(), persona, "q"); err != nil {
		t.Fatalf("Answer: %v", err)
	}
	assertCredentialOnlyIn(t, rec, "Authorization", "Bearer "+persona.Reveal())
	r := rec.requests()[0]
	if r.header.Get("X-From-Env") != "" || strings.Contains(fmt.Sprint(r.header), envKey) || strings.Contains(string(r.body), envKey) {
		t.Errorf("the environment reached the request: %v", r.header)
	}
	if n := elsewhere.count(); n != 0 {
		t.Errorf("OPENAI_BASE_URL got %d requests, want 0", n)
	}
}

// TestNewChatRefusesBadConfig checks each refusal names its field.
func TestNewChatRefusesBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*ChatConfig)
		want string
	}{
		{name: "scheme", edit: func(c *ChatConfig) { c.URL = "file:///etc/passwd" }, want: "URL: must be an absolute http or https URL"},
		{name: "userinfo", edit: func(c *ChatConfig) { c.URL = "https://key@h/v1/" }, want: "URL: must not embed credentials"},
		{name: "no client", edit: func(c *ChatConfig) { c.HTTPClient = nil }, want: "HTTPClient: required"},
		{name: "no model", edit: func(c *ChatConfig) { c.Model = "" }, want: "Model: required"},
		{name: "extra messages", edit: func(c *ChatConfig) { c.ExtraBody = map[string]any{"messages": []any{}} }, want: "ExtraBody[messages]: is set by the client"},
		{name: "extra stream", edit: func(c *ChatConfig) { c.ExtraBody = map[string]any{"stream": false} }, want: "ExtraBody[stream]: is set by the client"},
		{name: "extra not JSON", edit: func(c *ChatConfig) { c.ExtraBody = map[string]any{"f": func() {}} }, want: "ExtraBody[f]: not JSON-encodable"},
		{name: "citations pointer", edit: func(c *ChatConfig) { c.Citations = "choices/0" }, want: "Citations: a JSON pointer"},
		{name: "negative bound", edit: func(c *ChatConfig) { c.MaxTurns = -1 }, want: "MaxConversations/MaxTurns/MaxHistoryBytes: must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := chatConfig("http://127.0.0.1:1")
			tc.edit(&cfg)
			c, err := NewChat(cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewChat = %v, %v; want an error containing %q", c, err, tc.want)
			}
		})
	}
}

// TestChatConversationsConcurrently runs conversations of several personas
// at once and checks each follow-up carried its own conversation's first
// turn, never another's.
func TestChatConversationsConcurrently(t *testing.T) {
	rec := newRecorder(t, numbered())
	c := newChat(t, chatConfig(rec.URL))
	const n = 8
	errs := make(chan error, n)
	for i := range n {
		go func() {
			who := driver.Token(fmt.Sprintf("persona-%d-token", i))
			id, _, err := c.StartConversation(context.Background(), who, fmt.Sprintf("start-%d", i))
			if err == nil {
				_, err = c.FollowUp(context.Background(), who, id, fmt.Sprintf("follow-%d", i))
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	followUps := 0
	for _, r := range rec.requests() {
		body, _ := decodeRequest(t, r)
		if len(body.Messages) != 3 {
			continue
		}
		followUps++
		first, last := body.Messages[0].Content, body.Messages[2].Content
		if strings.TrimPrefix(first, "start-") != strings.TrimPrefix(last, "follow-") {
			t.Errorf("a follow-up mixed conversations: %s", body.transcript())
		}
	}
	if followUps != n {
		t.Errorf("%d follow-ups carried a history, want %d", followUps, n)
	}
}
