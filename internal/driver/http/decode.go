package httpdriver

import (
	"net/http"
	"regexp"
	"strconv"
	"unicode/utf8"

	"github.com/ragcanary/ragcanary/internal/contract"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/safetext"
)

// Bounds on the strings a reply may hand to the rest of ragcanary. IDs are
// compared and end up in status (forbidden IDs, a sentinel's carrier), so
// an ID that is not printable or longer than MaxReplyID bytes makes the
// whole reply malformed: rewriting it could make it match another. The
// contract version and revocation methods are only compared with a fixed
// vocabulary and named in a refusal, so they are quoted and cut instead,
// which keeps "v1\x1b" from passing for "v1".
const (
	MaxReplyID    = 1024
	MaxReplyToken = 64
)

// Answer text is left as the target sent it: scoring looks for a forbidden
// document's exact text in it, which folding its white space would hide.
// It is bounded by the response size limit and never shown raw by the
// driver.

// decodeCapabilities reads a capabilities reply. The contract requires
// contractVersion and revocationMethods; a reply without them (or "null")
// is not a target with no capabilities but one we cannot understand.
func decodeCapabilities(resp *http.Response) (driver.Capabilities, error) {
	const op = "Capabilities"
	parsed, err := contract.ParseGetCapabilitiesResponse(resp)
	if err != nil || parsed.JSON200 == nil || parsed.JSON200.ContractVersion == "" || parsed.JSON200.RevocationMethods == nil {
		return driver.Capabilities{}, malformed(op, resp.StatusCode, err)
	}
	c := parsed.JSON200
	methods := make([]driver.RevocationMethod, 0, len(c.RevocationMethods))
	for _, m := range c.RevocationMethods {
		methods = append(methods, driver.RevocationMethod(replyToken(string(m))))
	}
	// A v1.0 server has no conversation flag: no conversations.
	conversation := c.Conversation != nil && *c.Conversation
	return driver.Capabilities{ContractVersion: replyToken(c.ContractVersion), RevocationMethods: methods,
		Answer: c.Answer, Conversation: conversation}, nil
}

// decodeHits reads a search reply. A reply without a hits array is not
// "nothing found": it is a reply we could not understand, and must never
// be read as an absence.
func decodeHits(resp *http.Response) ([]driver.Hit, error) {
	const op = "Search"
	parsed, err := contract.ParseSearchResponse(resp)
	if err != nil || parsed.JSON200 == nil || parsed.JSON200.Hits == nil {
		return nil, malformed(op, resp.StatusCode, err)
	}
	out := make([]driver.Hit, 0, len(parsed.JSON200.Hits))
	for _, h := range parsed.JSON200.Hits {
		if !replyID(h.ChunkId) || !replyID(h.DocumentId) {
			return nil, malformed(op, resp.StatusCode, nil)
		}
		out = append(out, driver.Hit{ChunkID: h.ChunkId, DocumentID: h.DocumentId, Score: h.Score})
	}
	return out, nil
}

// decodeAnswer reads an answer reply.
func decodeAnswer(resp *http.Response) (driver.Answer, error) {
	const op = "Answer"
	parsed, err := contract.ParseAnswerResponse(resp)
	if err != nil || parsed.JSON200 == nil {
		return driver.Answer{}, malformed(op, resp.StatusCode, err)
	}
	return fromAnswer(op, resp.StatusCode, parsed.JSON200)
}

// decodeConversation reads the reply that starts a conversation: its ID
// goes into later request paths, so one outside the contract's pattern
// makes the reply malformed.
func decodeConversation(resp *http.Response) (string, driver.Answer, error) {
	const op = "StartConversation"
	parsed, err := contract.ParseStartConversationResponse(resp)
	if err != nil || parsed.JSON201 == nil || !validConversationID(parsed.JSON201.ConversationId) {
		return "", driver.Answer{}, malformed(op, resp.StatusCode, err)
	}
	a, err := fromAnswer(op, resp.StatusCode, &parsed.JSON201.Turn)
	if err != nil {
		return "", driver.Answer{}, err
	}
	return parsed.JSON201.ConversationId, a, nil
}

// decodeFollowUp reads a follow-up turn's reply.
func decodeFollowUp(resp *http.Response) (driver.Answer, error) {
	const op = "FollowUp"
	parsed, err := contract.ParseFollowUpResponse(resp)
	if err != nil || parsed.JSON200 == nil {
		return driver.Answer{}, malformed(op, resp.StatusCode, err)
	}
	return fromAnswer(op, resp.StatusCode, parsed.JSON200)
}

// fromAnswer converts a reply. A reply without citations, citing an ID we
// could not show, or declaring a status or reason outside the contract's
// vocabulary, is one we cannot understand: an error, never read as "the
// system said nothing".
func fromAnswer(op string, status int, a *contract.AnswerResult) (driver.Answer, error) {
	if a.Citations == nil {
		return driver.Answer{}, malformed(op, status, nil)
	}
	for _, c := range a.Citations {
		if !replyID(c) {
			return driver.Answer{}, malformed(op, status, nil)
		}
	}
	out := driver.Answer{Text: a.Answer, Citations: a.Citations}
	if a.Status != nil {
		out.Status = driver.AnswerStatus(*a.Status)
	}
	if a.Reason != nil {
		out.Reason = driver.AnswerReason(*a.Reason)
	}
	// A declared empty string is not "not declared" either.
	if !out.Status.Valid() || !out.Reason.Valid() || (a.Status != nil && out.Status == "") || (a.Reason != nil && out.Reason == "") {
		return driver.Answer{}, driver.NewError(driver.Transient, op, status, reasonUnknownStatus, nil)
	}
	return out, nil
}

// replyID reports whether an ID from a reply may be used as it is: not
// empty, at most MaxReplyID bytes, and printable.
func replyID(id string) bool {
	return id != "" && len(id) <= MaxReplyID && safetext.Printable(id)
}

// replyToken returns a short vocabulary word from a reply unchanged when it
// is printable and at most MaxReplyToken runes, and otherwise quoted (so
// neither dropped runes nor trimmed space can make it equal a valid word)
// and cut.
func replyToken(s string) string {
	if safetext.Printable(s) && utf8.RuneCountInString(s) <= MaxReplyToken {
		return s
	}
	return safetext.Clean(strconv.QuoteToGraphic(s), MaxReplyToken)
}

// validConversationID mirrors the contract's ID pattern: the ID goes into a
// request path, so one the target made up otherwise is refused.
func validConversationID(id string) bool {
	return conversationIDPattern.MatchString(id)
}

var conversationIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@-]{0,199}$`)
