package ragtarget

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"
)

// chatCompletionsPath is the OpenAI-compatible chat endpoint: the surface a
// real assistant exposes to its own users, outside the driver contract.
const chatCompletionsPath = "/v1/chat/completions"

// streamPieceWords is how many words one streamed chunk carries, so even a
// one-passage answer arrives in several chunks, as a model's tokens would.
const streamPieceWords = 4

// maxQuestionChars mirrors the contract's bound on a question (and on a
// query), so a chat question is accepted exactly when Answer would take it.
const maxQuestionChars = 4000

// chatRequest is the part of a chat.completions request ragtarget reads;
// everything else (temperature, tools, ...) is ignored, as many gateways do.
type chatRequest struct {
	Model    string        `json:"model"`
	Messages []chatMessage `json:"messages"`
	Stream   bool          `json:"stream"`
}

type chatMessage struct {
	Role    string      `json:"role"`
	Content chatContent `json:"content"`
}

// chatContent is a message's text. OpenAI accepts a string, null (an
// assistant turn that only called tools) or an array of parts; only text
// parts carry words ragtarget can use.
type chatContent string

func (c *chatContent) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		*c = ""
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*c = chatContent(s)
		return nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(b, &parts); err != nil {
		return errors.New("content must be a string or an array of parts")
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	*c = chatContent(strings.Join(texts, "\n"))
	return nil
}

// chatRoles are the roles ragtarget accepts; developer is OpenAI's newer
// name for system.
var chatRoles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true}

// chatCitation is one cited passage, where Azure OpenAI "on your data" puts
// it: message.context.citations, a field the OpenAI schema does not have.
// The title is the document ID: cached answers keep only chunk IDs, and a
// title looked up afresh could name a document the persona may not read.
type chatCitation struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

type chatContext struct {
	Citations []chatCitation `json:"citations"`
}

type chatReplyMessage struct {
	Role    string       `json:"role"`
	Content string       `json:"content"`
	Refusal *string      `json:"refusal"`
	Context *chatContext `json:"context,omitempty"`
}

type chatChoice struct {
	Index        int              `json:"index"`
	Message      chatReplyMessage `json:"message"`
	FinishReason string           `json:"finish_reason"`
	Logprobs     *struct{}        `json:"logprobs"`
}

type chatUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type chatCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   chatUsage    `json:"usage"`
}

// serveChat answers the last user message as the persona whose token is the
// bearer credential, exactly as the contract's Answer would.
func (s *Service) serveChat(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeOpenAIError(w, http.StatusMethodNotAllowed, "only POST is supported", "")
		return
	}
	principal, ok := s.bearerPersona(r)
	if !ok {
		writeOpenAIError(w, http.StatusUnauthorized, "the API key was not accepted", "invalid_api_key")
		return
	}
	req, question, err := decodeChat(r)
	if err != nil {
		writeOpenAIError(w, http.StatusBadRequest, err.Error(), "")
		return
	}
	ans, err := s.chatAnswer(r.Context(), principal, question, req.Messages[:len(req.Messages)-1])
	if err != nil {
		s.cfg.Logger.Error("chat completion failed", "error", err)
		writeOpenAIError(w, http.StatusInternalServerError, "the request failed", "")
		return
	}
	reply := s.newCompletion(req, ans)
	if req.Stream {
		s.streamCompletion(w, r, principal, reply, ans)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(reply)
}

// bearerPersona resolves the persona bearer token, as the contract's persona
// operations do; the source token is no persona.
func (s *Service) bearerPersona(r *http.Request) (string, bool) {
	token, ok := bearerToken(r)
	if !ok {
		return "", false
	}
	return s.lookupPersona(r.Context(), token)
}

// decodeChat reads the request and returns the question: the last message,
// which must be the user's. Messages never echo request values.
func decodeChat(r *http.Request) (chatRequest, string, error) {
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return req, "", errors.New("the request body is not a valid chat completions request")
	}
	if len(req.Messages) == 0 {
		return req, "", errors.New("messages must not be empty")
	}
	for _, m := range req.Messages {
		if !chatRoles[m.Role] {
			return req, "", errors.New("a message role must be system, developer, user or assistant")
		}
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role != "user" {
		return req, "", errors.New("the last message must be the user's")
	}
	if n := utf8.RuneCountInString(string(last.Content)); n < 1 || n > maxQuestionChars {
		return req, "", fmt.Errorf("the last user message must have 1 to %d characters", maxQuestionChars)
	}
	return req, string(last.Content), nil
}

// chatAnswer is the contract's answer (same retrieval, ACL filter, sync lag
// and cache) unless the conversation-memory defect is configured and the
// history holds passages earlier assistant turns quoted: those are then
// reused without re-authorising them, as followUp does, so a revoked
// passage an earlier turn returned keeps coming back. That answer depends
// on the history, so it is never cached under the bare question.
func (s *Service) chatAnswer(ctx context.Context, principal, question string, history []chatMessage) (answer, error) {
	if s.cfg.ConversationReusesHistory {
		if evidence := historyEvidence(history); len(evidence) > 0 {
			hits, err := s.search(ctx, principal, question, s.cfg.AnswerPassages)
			if err != nil {
				return answer{}, err
			}
			return composeAnswer(question, withHistory(evidence, hits, s.cfg.AnswerPassages)), nil
		}
	}
	return s.answer(ctx, principal, question)
}

// historyEvidence recovers the passages earlier assistant messages quoted:
// lines ending in a "[chunkID]" citation, the form composeAnswer writes.
// Anything else in the history (questions, echoed not-found replies) is no
// evidence. Deduplicated and bounded like a conversation's memory.
func historyEvidence(history []chatMessage) []scoredChunk {
	var c conversation
	for _, m := range history {
		if m.Role != "assistant" {
			continue
		}
		for line := range strings.SplitSeq(string(m.Content), "\n") {
			if p, ok := citedPassage(line); ok {
				c.remember([]scoredChunk{p})
			}
		}
	}
	return c.history
}

// citedPassage parses one answer line "text [doc#n]".
func citedPassage(line string) (scoredChunk, bool) {
	line = strings.TrimSpace(line)
	open := strings.LastIndex(line, " [")
	if open <= 0 || !strings.HasSuffix(line, "]") {
		return scoredChunk{}, false
	}
	id := line[open+2 : len(line)-1]
	if !strings.Contains(id, "#") || strings.ContainsAny(id, " []") {
		return scoredChunk{}, false
	}
	return scoredChunk{chunkID: id, docID: docIDOf(id), text: line[:open]}, true
}

// newCompletion builds the non-stream reply; the stream is cut from it, so
// both carry the same text and citations.
func (s *Service) newCompletion(req chatRequest, ans answer) chatCompletion {
	prompt := 0
	for _, m := range req.Messages {
		prompt += len(strings.Fields(string(m.Content)))
	}
	// Words stand in for tokens: no tokenizer is worth its weight here.
	completion := len(strings.Fields(ans.text))
	return chatCompletion{
		ID:      "chatcmpl-" + rand.Text(),
		Object:  "chat.completion",
		Created: s.cfg.Clock.Now().Unix(),
		Model:   req.Model,
		Choices: []chatChoice{{
			Message:      chatReplyMessage{Role: "assistant", Content: ans.text, Context: citationsOf(ans)},
			FinishReason: "stop",
		}},
		Usage: chatUsage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion},
	}
}

func citationsOf(ans answer) *chatContext {
	out := &chatContext{Citations: make([]chatCitation, 0, len(ans.citations))}
	for _, id := range ans.citations {
		out.Citations = append(out.Citations, chatCitation{ID: id, Title: docIDOf(id)})
	}
	return out
}

// openAIError is the error body OpenAI's API and SDKs use.
type openAIError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func writeOpenAIError(w http.ResponseWriter, status int, msg, code string) {
	var body openAIError
	body.Error.Message = msg
	body.Error.Type = "invalid_request_error"
	if code != "" {
		body.Error.Code = &code
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// chatDelta is one streamed piece of the assistant message.
type chatDelta struct {
	Role    string       `json:"role,omitempty"`
	Content *string      `json:"content,omitempty"`
	Context *chatContext `json:"context,omitempty"`
}

type chatChunkChoice struct {
	Index        int       `json:"index"`
	Delta        chatDelta `json:"delta"`
	FinishReason *string   `json:"finish_reason"`
	Logprobs     *struct{} `json:"logprobs"`
}

type chatChunk struct {
	ID      string            `json:"id"`
	Object  string            `json:"object"`
	Created int64             `json:"created"`
	Model   string            `json:"model"`
	Choices []chatChunkChoice `json:"choices"`
}

// streamChunks cuts the reply into chunks: the role first (with empty
// content, as OpenAI sends it), the text in pieces of streamPieceWords
// words, the citations with the last piece (where Azure puts them), and a
// last chunk that only says why the message stopped.
func streamChunks(reply chatCompletion) []chatChunk {
	msg := reply.Choices[0].Message
	chunk := func(d chatDelta, finish *string) chatChunk {
		return chatChunk{ID: reply.ID, Object: "chat.completion.chunk", Created: reply.Created, Model: reply.Model,
			Choices: []chatChunkChoice{{Delta: d, FinishReason: finish}}}
	}
	empty, stop := "", "stop"
	out := []chatChunk{chunk(chatDelta{Role: "assistant", Content: &empty}, nil)}
	pieces := splitWords(msg.Content, streamPieceWords)
	for i, p := range pieces {
		d := chatDelta{Content: &p}
		if i == len(pieces)-1 {
			d.Context = msg.Context
		}
		out = append(out, chunk(d, nil))
	}
	return append(out, chunk(chatDelta{}, &stop))
}

// splitWords cuts text into pieces of n words each, whitespace kept with the
// word before it, so the pieces concatenate back to exactly text.
func splitWords(text string, n int) []string {
	var pieces []string
	start, words, inWord := 0, 0, false
	for i, r := range text {
		space := unicode.IsSpace(r)
		if !space && !inWord {
			if words == n {
				pieces = append(pieces, text[start:i])
				start, words = i, 0
			}
			words++
		}
		inWord = !space
	}
	return append(pieces, text[start:])
}
