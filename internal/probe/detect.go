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
	return ProbeEvidence(ctx, d, surface, persona, t).Outcome
}

// Evidence is what one probe's reply showed: its outcome and, for a
// sighting, the IDs that carried the canary (see Carriers).
type Evidence struct {
	Outcome measure.Outcome
	// Carriers are target-chosen IDs, unsanitised: the search hits that
	// showed the canary, or the citations of an answer that showed it
	// (the canary document's own first). Empty for an answer that quoted
	// the payload citing nothing.
	Carriers []string
	// Refused is an Error outcome whose cause was the surface refusing the
	// persona's credential (401 or 403): after a credential revocation,
	// the end of access being measured (Plan.RefusalExcludes).
	Refused bool
}

// errorEvidence is a failed probe, Refused when the credential was.
func errorEvidence(err error) Evidence {
	return Evidence{Outcome: measure.Error, Refused: driver.IsUnauthorized(err)}
}

// ProbeEvidence is Probe with the carriers of a sighting, which a sentinel
// needs to name the document that leaked it.
func ProbeEvidence(ctx context.Context, d driver.Driver, surface v1alpha1.Surface, persona driver.Token, t Target) Evidence {
	if surface == v1alpha1.SurfaceSearch {
		hits, err := d.Search(ctx, persona, t.Handle, searchK)
		if err != nil {
			return errorEvidence(err)
		}
		return SearchEvidence(hits, t)
	}
	a, err := answerOn(ctx, d, surface, persona, t)
	if err != nil {
		return errorEvidence(err)
	}
	return AnswerEvidence(a, t)
}

// answerOn asks the handle on an answer-shaped surface.
func answerOn(ctx context.Context, d driver.Driver, surface v1alpha1.Surface, persona driver.Token, t Target) (driver.Answer, error) {
	switch surface {
	case v1alpha1.SurfaceAnswer:
		return d.Answer(ctx, persona, t.Handle)
	case v1alpha1.SurfaceConversation:
		// A conversation that vanished (404) is an error too: the system
		// forgot it, which says nothing about the canary.
		return askInConversation(ctx, d, persona, t)
	case v1alpha1.SurfaceStream:
		s, ok := d.(driver.Streamer)
		if !ok {
			return driver.Answer{}, errNoStream
		}
		// A stream that broke off is an error, never an absence.
		return s.AnswerStream(ctx, persona, t.Handle)
	default:
		return driver.Answer{}, errUnknownSurface
	}
}

var (
	errNoStream       = errors.New("the driver cannot stream answers")
	errUnknownSurface = errors.New("unknown surface")
)

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
	id, a, err := c.StartConversation(ctx, persona, t.Handle)
	if e, ok := d.(driver.ConversationEnder); ok && err == nil {
		// Nothing follows up in it: its history goes at once.
		e.EndConversation(persona, id)
	}
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
	return SearchEvidence(hits, t).Outcome == measure.Present
}

// SearchEvidence classifies hits as SearchShows does and names each hit that
// showed the canary. A hit of another document with no text proves nothing
// (a vector index returns neighbours for any query), so only its text can
// make it a carrier.
func SearchEvidence(hits []driver.Hit, t Target) Evidence {
	ev := Evidence{Outcome: measure.Absent}
	for _, h := range hits {
		own := h.DocumentID == t.DocumentID || documentOf(h.ChunkID) == t.DocumentID
		if own || (h.Text != "" && textQuotes(h.Text, t.Payload)) {
			ev.Outcome = measure.Present
			ev.Carriers = append(ev.Carriers, hitID(h))
		}
	}
	return ev
}

// hitID names a hit by its passage when it has one.
func hitID(h driver.Hit) string {
	if h.ChunkID != "" {
		return h.ChunkID
	}
	return h.DocumentID
}

// AnswerShows reports whether the answer quotes the payload or cites a
// passage of the canary document: either means the canary's content reached
// the persona. The handle echoed back is not a sighting. The quote is looked
// for after normalisation (see Normalize): a model that re-styles the
// payload still shows it.
func AnswerShows(a driver.Answer, t Target) bool {
	return AnswerEvidence(a, t).Outcome == measure.Present
}

// AnswerEvidence classifies an answer as AnswerShows does. A citation of the
// canary document is a carrier by itself; an answer that quotes the payload
// got it from some passage it cites, and which one an answer does not say,
// so every citation is a candidate carrier.
func AnswerEvidence(a driver.Answer, t Target) Evidence {
	var own, other []string
	for _, c := range a.Citations {
		if documentOf(c) == t.DocumentID {
			own = append(own, c)
		} else {
			other = append(other, c)
		}
	}
	switch {
	case len(own) > 0:
		return Evidence{Outcome: measure.Present, Carriers: append(own, other...)}
	case textQuotes(a.Text, t.Payload):
		return Evidence{Outcome: measure.Present, Carriers: other}
	default:
		return Evidence{Outcome: measure.Absent}
	}
}

// documentOf returns the document part of a "<documentID>#<n>" chunk ID.
func documentOf(chunkID string) string {
	doc, _, _ := strings.Cut(chunkID, "#")
	return doc
}
