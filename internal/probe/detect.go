package probe

import (
	"context"
	"errors"
	"strings"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/measure"
)

// searchK is how many hits a search probe asks for. The query is the
// canary's handle, a term no other document holds, so the canary ranks
// first whenever the persona may see it; the margin tolerates noisy ranking.
const searchK = 10

// Target is what a probe looks for. Handle and Payload are secret: never
// log them.
type Target struct {
	// DocumentID is the canary document's ID at the source.
	DocumentID string
	// Handle is the query of every probe, a rare term of the canary
	// document. Seeing it in an answer proves nothing: assistants repeat
	// the question ("I found nothing about ...").
	Handle string
	// Payload is another rare term of the canary document that no probe
	// ever sends, so it can reach an answer only from the document itself.
	Payload string
	// Conversation is the persona's conversation about the canary, once
	// started (Conversation surface); zero before.
	Conversation Conversation
	// UpdatedPayload is, for a content-freshness run (UpdateContent), the
	// payload that replaces Payload; empty otherwise. After the update
	// probes look for both (see ProbeContent).
	UpdatedPayload string
}

// Probe runs one probe of surface as persona and classifies the reply. Any
// failure, including an unparseable reply, is measure.Error and never an
// absence.
func Probe(ctx context.Context, d driver.Driver, surface v1alpha1.Surface, persona driver.Token, t Target) measure.Outcome {
	switch surface {
	case v1alpha1.SurfaceSearch:
		hits, err := d.Search(ctx, persona, t.Handle, searchK)
		if err != nil {
			return measure.Error
		}
		return outcome(SearchShows(hits, t))
	case v1alpha1.SurfaceAnswer:
		a, err := d.Answer(ctx, persona, t.Handle)
		if err != nil {
			return measure.Error
		}
		return outcome(AnswerShows(a, t))
	case v1alpha1.SurfaceConversation:
		a, err := askInConversation(ctx, d, persona, t)
		if err != nil {
			// A conversation that vanished (404) is an error too: the
			// system forgot it, which says nothing about the canary.
			return measure.Error
		}
		return outcome(AnswerShows(a, t))
	case v1alpha1.SurfaceStream:
		s, ok := d.(driver.Streamer)
		if !ok {
			return measure.Error
		}
		a, err := s.AnswerStream(ctx, persona, t.Handle)
		if err != nil {
			// A stream that broke off is an error, never an absence.
			return measure.Error
		}
		return outcome(AnswerShows(a, t))
	default:
		return measure.Error
	}
}

// Conversation names a conversation and the persona it belongs to. Only
// that persona's probes follow up in it; a control persona cannot (the
// conversation is not theirs), so it asks in a new one of its own.
type Conversation struct {
	ID    string
	Owner driver.Token
}

// errNoConversations: the corpus's driver has no conversation API.
var errNoConversations = errors.New("the driver has no conversation API")

// askInConversation asks the handle as a follow-up in the persona's
// conversation, or as the first turn of a new conversation when there is
// none for this persona (before the revocation, and for control personas).
// The sighting rule is the answer surface's: the handle echoed back in a
// follow-up is no sighting either.
func askInConversation(ctx context.Context, d driver.Driver, persona driver.Token, t Target) (driver.Answer, error) {
	c, ok := d.(driver.Conversations)
	if !ok {
		return driver.Answer{}, errNoConversations
	}
	if t.Conversation.ID != "" && t.Conversation.Owner == persona {
		return c.FollowUp(ctx, persona, t.Conversation.ID, t.Handle)
	}
	_, a, err := c.StartConversation(ctx, persona, t.Handle)
	return a, err
}

func outcome(present bool) measure.Outcome {
	if present {
		return measure.Present
	}
	return measure.Absent
}

// SearchShows reports whether any hit belongs to the canary document or
// carries its payload. The contract's hits carry IDs only, so the document
// ID is the evidence there; a search surface of the assistant's own (spec.
// surfaces.search) names hits by its own IDs, and the payload in a hit's
// text is the evidence: any document carrying it got it from the canary.
func SearchShows(hits []driver.Hit, t Target) bool {
	for _, h := range hits {
		if h.DocumentID == t.DocumentID || documentOf(h.ChunkID) == t.DocumentID {
			return true
		}
		if h.Text != "" && quotes(Normalize(h.Text), t.Payload) {
			return true
		}
	}
	return false
}

// AnswerShows reports whether the answer quotes the payload or cites a
// passage of the canary document: either means the canary's content reached
// the persona. The handle echoed back is not a sighting. The quote is looked
// for after normalisation (see Normalize): a model that re-styles the
// payload still shows it.
func AnswerShows(a driver.Answer, t Target) bool {
	if quotes(Normalize(a.Text), t.Payload) {
		return true
	}
	for _, c := range a.Citations {
		if documentOf(c) == t.DocumentID {
			return true
		}
	}
	return false
}

// documentOf returns the document part of a "<documentID>#<n>" chunk ID.
func documentOf(chunkID string) string {
	doc, _, _ := strings.Cut(chunkID, "#")
	return doc
}
