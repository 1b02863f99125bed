package surface

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/ragcanary/ragcanary/internal/driver"
	httpdriver "github.com/ragcanary/ragcanary/internal/driver/http"
	"github.com/ragcanary/ragcanary/internal/safetext"
)

// ChatConfig configures a Chat over an OpenAI-compatible chat-completions API.
type ChatConfig struct {
	// URL is the API's base URL, e.g. "http://host/v1/"; the client posts to
	// its "chat/completions". It must be an absolute http(s) URL without
	// userinfo, query or fragment; the caller checks it against the door's
	// allowlist.
	URL string
	// Model is the request's model; required.
	Model string
	// Stream asks for a streamed reply; the deltas of the first choice are
	// concatenated into the answer.
	Stream bool
	// SystemPrompt, when set, is the first message of every request.
	SystemPrompt string
	// ExtraBody is merged into every request body at the top level, e.g. a
	// retrieval extension's "data_sources". It must be JSON-encodable and
	// may not set model, messages or stream, which the client owns.
	ExtraBody map[string]any
	// Citations is an optional RFC 6901 pointer into the raw completion
	// JSON, e.g. "/choices/0/message/context/citations", to an array whose
	// items are citation IDs: strings, or objects with an "id". For a stream
	// it applies to each chunk with its first "message" token read as
	// "delta" (/choices/0/delta/context/citations), and the citations of
	// every chunk are gathered; a stream in which no chunk has them is an
	// error, as is a reply without them. Empty: answers cite nothing.
	Citations string
	// Timeout bounds each call, the whole stream included; DefaultTimeout
	// when zero.
	Timeout time.Duration
	// MaxReplyBytes bounds a reply body, a whole stream included;
	// DefaultMaxReplyBytes when zero.
	MaxReplyBytes int64
	// ReplyBudget, when set, bounds the reply bytes held at once by this
	// client's calls and every other client sharing it.
	ReplyBudget httpdriver.ReplyBudget
	// HTTPClient sends the requests; required. The operator passes the
	// door's client; its redirect policy is replaced.
	HTTPClient *http.Client
	// MaxConversations, MaxTurns and MaxHistoryBytes bound the conversations
	// held for follow-ups (least recently used evicted first); the defaults
	// when zero. A follow-up beyond MaxTurns is an error. With a History
	// they bound the tenant's store, shared by its clients, as the first
	// client of the tenant set them.
	MaxConversations int
	MaxTurns         int
	MaxHistoryBytes  int64
	// History, when set, is the operator-wide history the conversations are
	// kept in, under Tenant (the corpus); nil keeps them in a history of
	// this client's own, MaxHistoryBytes large.
	History *History
	Tenant  string
	// SendClientHeaders keeps the SDK's X-Stainless-* headers, which tell
	// the target the operator's OS, architecture, Go and SDK versions.
	// False (the default) strips them from every request.
	SendClientHeaders bool
}

// Chat asks an OpenAI-compatible chat-completions API as a persona, through
// the official SDK. It is safe for concurrent use.
type Chat struct {
	svc    openai.ChatCompletionService
	model  string
	stream bool
	system string
	extra  map[string]any
	// citations is nil when answers cite nothing; chunkCitations is its
	// reading for stream chunks.
	citations, chunkCitations *pointer
	timeout                   time.Duration
	limits                    limits
	convs                     *conversations
	clientHeaders             bool
}

var (
	_ driver.Answerer          = (*Chat)(nil)
	_ driver.Conversations     = (*Chat)(nil)
	_ driver.ConversationEnder = (*Chat)(nil)
)

// Keys of the request body the client owns; ExtraBody may not set them.
var ownedKeys = []string{"model", "messages", "stream"}

// Operations, as driver errors name them.
const (
	opAnswer   = "Answer"
	opStart    = "StartConversation"
	opFollowUp = "FollowUp"
)

// NewChat validates cfg and returns a Chat. Every error names the field.
func NewChat(cfg ChatConfig) (*Chat, error) {
	u, err := validURL("URL", cfg.URL)
	if err != nil {
		return nil, err
	}
	if err := checkChatConfig(cfg); err != nil {
		return nil, err
	}
	extra, err := copyExtraBody(cfg.ExtraBody)
	if err != nil {
		return nil, err
	}
	c := &Chat{
		model:         cfg.Model,
		stream:        cfg.Stream,
		system:        cfg.SystemPrompt,
		extra:         extra,
		timeout:       orDefault(cfg.Timeout, DefaultTimeout),
		clientHeaders: cfg.SendClientHeaders,
		limits:        limits{maxBytes: orDefault(cfg.MaxReplyBytes, DefaultMaxReplyBytes), budget: cfg.ReplyBudget},
	}
	history, maxBytes := cfg.History, orDefault(cfg.MaxHistoryBytes, DefaultMaxHistoryBytes)
	if history == nil {
		history = NewHistory(maxBytes)
	}
	c.convs = history.store(cfg.Tenant, orDefault(cfg.MaxConversations, DefaultMaxConversations),
		orDefault(cfg.MaxTurns, DefaultMaxTurns), maxBytes)
	if cfg.Citations != "" {
		p, err := parsePointer(cfg.Citations)
		if err != nil {
			return nil, configError("Citations", err.Error())
		}
		chunk := p.withToken("message", "delta")
		if chunk.raw != p.raw {
			// Errors name the pointer as configured, and how chunks read it.
			chunk.raw = p.raw + " (in stream chunks " + chunk.raw + ")"
		}
		c.citations, c.chunkCitations = &p, &chunk
	}
	c.svc = c.service(u.String(), cfg.HTTPClient)
	return c, nil
}

func checkChatConfig(cfg ChatConfig) error {
	switch {
	case cfg.HTTPClient == nil:
		return configError("HTTPClient", "required (the door's client)")
	case cfg.Model == "":
		return configError("Model", "required")
	case cfg.Timeout < 0 || cfg.MaxReplyBytes < 0:
		return configError("Timeout/MaxReplyBytes", "must not be negative")
	case cfg.MaxConversations < 0 || cfg.MaxTurns < 0 || cfg.MaxHistoryBytes < 0:
		return configError("MaxConversations/MaxTurns/MaxHistoryBytes", "must not be negative")
	}
	for _, k := range ownedKeys {
		if _, ok := cfg.ExtraBody[k]; ok {
			return configError("ExtraBody["+k+"]", "is set by the client itself")
		}
	}
	return nil
}

// copyExtraBody encodes each ExtraBody value once, at construction: it is
// then known to encode, a caller changing its map later cannot race a
// request, and a value is sent as encoded (a json.RawMessage is written
// verbatim), so a large integer keeps its digits.
func copyExtraBody(in map[string]any) (map[string]any, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make(map[string]any, len(in))
	for k, v := range in {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, configError("ExtraBody["+label(k)+"]", "not JSON-encodable")
		}
		out[k] = json.RawMessage(b)
	}
	return out, nil
}

// service builds the SDK's chat-completions service without NewClient,
// which reads OPENAI_API_KEY, OPENAI_BASE_URL and OPENAI_CUSTOM_HEADERS
// from the operator's environment: none of those may reach a target. The
// SDK retries 408/409/429/5xx and connection errors by default; probes
// must see each failure, and retry policy is the caller's, so retries are
// off. The door middleware turns every non-2xx into an error before the
// SDK reads its body, and bounds the body of a 2xx.
func (c *Chat) service(baseURL string, hc *http.Client) openai.ChatCompletionService {
	return openai.NewChatCompletionService(
		option.WithBaseURL(baseURL),
		option.WithHTTPClient(withoutRedirects(hc)),
		option.WithMaxRetries(0),
		option.WithRequestTimeout(c.timeout),
		option.WithMiddleware(c.door),
	)
}

// door runs around every request the SDK sends. A 3xx would otherwise reach
// the SDK as a success whose body it decodes (a redirect's body could read
// as an answer), and a 4xx/5xx body would be read whole, unbounded, into an
// error that keeps the request and its Authorization header. The SDK's
// X-Stainless-* headers describe the operator's host to whoever answers:
// they go unless the corpus asked for them.
func (c *Chat) door(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	if !c.clientHeaders {
		stripClientHeaders(req.Header)
	}
	resp, err := next(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		_ = resp.Body.Close()
		return nil, statusErr{code: resp.StatusCode}
	}
	if err := c.limits.wrap(resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// clientHeaderPrefix starts the SDK's headers about itself and its host
// (canonical form, as the SDK sets them).
const clientHeaderPrefix = "X-Stainless-"

func stripClientHeaders(h http.Header) {
	for k := range h {
		if strings.HasPrefix(http.CanonicalHeaderKey(k), clientHeaderPrefix) {
			delete(h, k)
		}
	}
}

// Answer implements driver.Answerer: one user message, after the system
// prompt when there is one.
func (c *Chat) Answer(ctx context.Context, persona driver.Token, question string) (driver.Answer, error) {
	a, err := c.ask(ctx, opAnswer, persona, nil, question)
	return a, redact(err, persona)
}

// StartConversation implements driver.Conversations. The conversation is
// held here, not at the target: its ID is local and random.
func (c *Chat) StartConversation(ctx context.Context, persona driver.Token, question string) (string, driver.Answer, error) {
	a, err := c.ask(ctx, opStart, persona, nil, question)
	if err != nil {
		return "", driver.Answer{}, redact(err, persona)
	}
	return c.convs.start(persona, turn{question: question, answer: a.Text}), a, nil
}

// FollowUp implements driver.Conversations: the whole history is sent with
// the new question, which is how chat-completions APIs hold a conversation.
// An unknown, evicted or another persona's conversation is an error, never
// an empty answer.
func (c *Chat) FollowUp(ctx context.Context, persona driver.Token, id, question string) (driver.Answer, error) {
	history, refused := c.convs.checkout(persona, id)
	if refused != "" {
		return driver.Answer{}, driver.NewError(driver.Permanent, opFollowUp, 0, refused, nil)
	}
	a, err := c.ask(ctx, opFollowUp, persona, history, question)
	c.convs.release(id, turn{question: question, answer: a.Text}, err == nil)
	return a, redact(err, persona)
}

// EndConversation drops persona's conversation id and its history; one
// that is gone, or another persona's, is left as it is. Nothing is sent:
// the conversation lives only here.
func (c *Chat) EndConversation(persona driver.Token, id string) {
	c.convs.end(persona, id)
}

// MaxTurns is how many turns a conversation holds, its first included: a
// follow-up beyond it is an error.
func (c *Chat) MaxTurns() int { return c.convs.maxTurns }

// ask sends one request: system prompt, history, question.
func (c *Chat) ask(ctx context.Context, op string, persona driver.Token, history []turn, question string) (driver.Answer, error) {
	if !validHeaderValue(persona.Reveal()) {
		return driver.Answer{}, driver.NewError(driver.Permanent, op, 0, reasonCredential, nil)
	}
	// The SDK's request timeout bounds each attempt and its stream; this
	// bounds the whole call whatever the SDK does with it.
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	params := c.params(history, question)
	// The key is per request: one client serves every persona. It goes only
	// into the Authorization header ("Bearer " + key); an empty one sends none.
	key := option.WithAPIKey(persona.Reveal())
	if c.stream {
		return c.askStream(ctx, op, params, key)
	}
	comp, err := c.svc.New(ctx, params, key)
	if err != nil {
		return driver.Answer{}, classifySDK(op, err)
	}
	return c.fromCompletion(op, comp)
}

func (c *Chat) params(history []turn, question string) openai.ChatCompletionNewParams {
	msgs := make([]openai.ChatCompletionMessageParamUnion, 0, 2+2*len(history))
	if c.system != "" {
		msgs = append(msgs, openai.SystemMessage(c.system))
	}
	for _, t := range history {
		msgs = append(msgs, openai.UserMessage(t.question), openai.AssistantMessage(t.answer))
	}
	msgs = append(msgs, openai.UserMessage(question))
	p := openai.ChatCompletionNewParams{Model: c.model, Messages: msgs}
	if c.extra != nil {
		// SetExtraFields escapes the keys, so "a.b" is one key, not a path.
		p.SetExtraFields(c.extra)
	}
	return p
}

// fromCompletion reads a non-streamed reply: the first choice's content
// (its refusal when the content is empty), and the citations the pointer
// names in the raw JSON, which the SDK keeps as RawJSON.
func (c *Chat) fromCompletion(op string, comp *openai.ChatCompletion) (driver.Answer, error) {
	if comp == nil || len(comp.Choices) == 0 {
		return driver.Answer{}, malformed(op, 0, reasonNoChoices)
	}
	msg := comp.Choices[0].Message
	a := driver.Answer{Text: orDefault(msg.Content, msg.Refusal)}
	if c.citations == nil {
		return a, nil
	}
	ids, found, err := citationsIn(op, comp.RawJSON(), *c.citations)
	if err != nil {
		return driver.Answer{}, err
	}
	if !found {
		return driver.Answer{}, malformed(op, 0, "citations pointer "+label(c.citations.raw)+": not found")
	}
	a.Citations = ids
	return a, nil
}

// askStream reads a streamed reply: the deltas of the first choice,
// concatenated, and the citations of every chunk. A stream with no finish
// reason was cut short, and its answer may lack what the rest would have
// said: an error, never a shorter answer.
func (c *Chat) askStream(ctx context.Context, op string, params openai.ChatCompletionNewParams, key option.RequestOption) (driver.Answer, error) {
	stream := c.svc.NewStreaming(ctx, params, key)
	defer func() { _ = stream.Close() }()
	var acc streamAnswer
	for stream.Next() {
		if err := acc.add(op, stream.Current(), c.chunkCitations); err != nil {
			return driver.Answer{}, err
		}
	}
	if err := stream.Err(); err != nil {
		return driver.Answer{}, classifySDK(op, err)
	}
	return acc.answer(op, c.chunkCitations)
}

// streamAnswer accumulates a stream's chunks.
type streamAnswer struct {
	text, refusal strings.Builder
	citations     []string
	seen          map[string]bool
	cited         bool
	finished      bool
}

func (s *streamAnswer) add(op string, chunk openai.ChatCompletionChunk, cites *pointer) error {
	for _, ch := range chunk.Choices {
		if ch.Index != 0 {
			continue
		}
		s.text.WriteString(ch.Delta.Content)
		s.refusal.WriteString(ch.Delta.Refusal)
		s.finished = s.finished || ch.FinishReason != ""
	}
	if cites == nil {
		return nil
	}
	ids, found, err := citationsIn(op, chunk.RawJSON(), *cites)
	if err != nil || !found {
		return err
	}
	s.cited = true
	for _, id := range ids {
		if !s.seen[id] {
			if s.seen == nil {
				s.seen = map[string]bool{}
			}
			s.seen[id] = true
			s.citations = append(s.citations, id)
		}
	}
	return nil
}

func (s *streamAnswer) answer(op string, cites *pointer) (driver.Answer, error) {
	if !s.finished {
		return driver.Answer{}, driver.NewError(driver.Transient, op, 0, reasonUnfinished, nil)
	}
	if cites != nil && !s.cited {
		return driver.Answer{}, malformed(op, 0, "citations pointer "+label(cites.raw)+": in no chunk")
	}
	return driver.Answer{Text: orDefault(s.text.String(), s.refusal.String()), Citations: s.citations}, nil
}

// citationsIn reads the citation IDs p names in raw; found is false when p
// names nothing, which only the caller can judge.
func citationsIn(op, raw string, p pointer) (ids []string, found bool, err error) {
	doc, err := decodeJSON([]byte(raw))
	if err != nil {
		return nil, false, malformed(op, 0, "not JSON")
	}
	v, err := p.get(doc)
	if err != nil {
		return nil, false, nil
	}
	items, ok := v.([]any)
	if !ok {
		return nil, false, malformed(op, 0, "citations pointer "+label(p.raw)+": not an array")
	}
	ids = make([]string, 0, len(items))
	for i, item := range items {
		id, ok := citationID(item)
		if !ok {
			return nil, false, malformed(op, 0, fmt.Sprintf("citations pointer %s: item %d is neither a string nor an object with an id", label(p.raw), i))
		}
		if id == "" || len(id) > httpdriver.MaxReplyID || !safetext.Printable(id) {
			return nil, false, malformed(op, 0, fmt.Sprintf("citations pointer %s: item %d: %s", label(p.raw), i, reasonBadCitation))
		}
		ids = append(ids, id)
	}
	return ids, true, nil
}

// citationID reads a citation: a string, or an object's "id" (a string or
// a number).
func citationID(item any) (string, bool) {
	switch v := item.(type) {
	case string:
		return v, true
	case map[string]any:
		switch id := v["id"].(type) {
		case string:
			return id, true
		case json.Number:
			return id.String(), true
		}
	}
	return "", false
}

// classifySDK classifies an error from the SDK. An *openai.Error would hold
// the request, Authorization header included, so it is never kept as a
// cause; the door middleware should have stopped every status before one
// is built. A stream's error event carries target text: only its kind is kept.
func classifySDK(op string, err error) error {
	var (
		apiErr    *openai.Error
		streamErr *ssestream.StreamError
		syntaxErr *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &apiErr):
		return statusError(op, apiErr.StatusCode)
	case errors.As(err, &streamErr):
		return driver.NewError(driver.Transient, op, 0, reasonStreamError, nil)
	case errors.As(err, &syntaxErr), errors.As(err, &typeErr):
		return driver.NewError(driver.Transient, op, 0, reasonMalformed, err)
	}
	return classify(op, err)
}
