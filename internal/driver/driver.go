// Package driver defines the narrow interfaces through which ragcanary talks to
// a permission-aware RAG system under test: writing documents and their access
// lists into the system's source, changing permissions, and reading back as a
// persona through the system's own retrieval and answer surfaces.
//
// Every operation is idempotent from the caller's view: creating an existing
// document ID replaces it, deleting a missing document succeeds, granting an
// existing grant succeeds, and so on. Controllers retry steps after restarts,
// so a driver must never fail because a step already happened.
package driver

import (
	"context"
	"slices"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// ContractVersion is the version of the driver contract this package speaks.
// Implementations report the version they serve in Capabilities.
const ContractVersion = "v1"

// RevocationMethod names a way access to a document can be taken away.
// The vocabulary is the driver contract's (api/contract/driver.v1.yaml),
// defined once in Go as v1alpha1.RevocationMethods; a test holds the two,
// the generated contract client and the CRD enum equal.
type RevocationMethod = v1alpha1.RevocationMethod

// Token is a persona's bearer credential. Its String and GoString methods
// redact the value so a token passed to a logger or formatted into an error by
// mistake never leaks; use Reveal only where the credential goes on the wire.
type Token string

// Reveal returns the raw credential.
func (t Token) Reveal() string { return string(t) }

// String redacts the credential.
func (t Token) String() string { return redacted(t) }

// GoString redacts the credential for %#v.
func (t Token) GoString() string { return redacted(t) }

// MarshalText redacts the credential in JSON, YAML and text encodings.
func (t Token) MarshalText() ([]byte, error) { return []byte(redacted(t)), nil }

func redacted(t Token) string {
	if t == "" {
		return ""
	}
	return "[redacted]"
}

// Document is a document written into the system's source together with its
// access list.
type Document struct {
	// ID is chosen by the caller and stable across retries. It must not contain '#',
	// which separates a document ID from a chunk number in chunk IDs.
	ID    string
	Title string
	Body  string
	// Principals initially allowed to read the document (users or groups).
	Principals []string
}

// Hit is one ranked retrieval result.
type Hit struct {
	// ChunkID identifies the passage, conventionally "<documentID>#<n>".
	ChunkID    string
	DocumentID string
	Score      float64
	// Text is the hit's text when the surface returns it, empty otherwise.
	// Payload detection reads it when a surface's IDs are its own and do not
	// match the planted document's.
	Text string
}

// Answer is what the answer surface returned for a question.
type Answer struct {
	Text string
	// Citations are the chunk IDs the answer cites.
	Citations []string
	// Status is what the system declared it did; empty when it did not say.
	Status AnswerStatus
	// Reason is why, when the system gave one; empty when it did not say.
	Reason AnswerReason
}

// AnswerStatus is the action a system declares for an answer (contract v1.1).
type AnswerStatus string

// Declared answer statuses, the contract's vocabulary.
const (
	StatusAnswer        AnswerStatus = "answer"
	StatusBlock         AnswerStatus = "block"
	StatusNotFound      AnswerStatus = "not_found"
	StatusNotApplicable AnswerStatus = "not_applicable"
	StatusClarify       AnswerStatus = "clarify"
	StatusConflict      AnswerStatus = "conflict"
)

// Valid reports whether s is empty (not declared) or one of the statuses.
func (s AnswerStatus) Valid() bool {
	switch s {
	case "", StatusAnswer, StatusBlock, StatusNotFound, StatusNotApplicable, StatusClarify, StatusConflict:
		return true
	}
	return false
}

// AnswerReason is why a system declared a status other than answer.
type AnswerReason string

// Declared reasons, the contract's vocabulary.
const (
	ReasonNoEvidence             AnswerReason = "NO_EVIDENCE"
	ReasonOutOfScope             AnswerReason = "OUT_OF_SCOPE"
	ReasonUnauthorized           AnswerReason = "UNAUTHORIZED"
	ReasonStaleOnly              AnswerReason = "STALE_ONLY"
	ReasonConflictingEvidence    AnswerReason = "CONFLICTING_EVIDENCE"
	ReasonInsufficientConfidence AnswerReason = "INSUFFICIENT_CONFIDENCE"
)

// Valid reports whether r is empty (not declared) or one of the reasons.
func (r AnswerReason) Valid() bool {
	switch r {
	case "", ReasonNoEvidence, ReasonOutOfScope, ReasonUnauthorized, ReasonStaleOnly,
		ReasonConflictingEvidence, ReasonInsufficientConfidence:
		return true
	}
	return false
}

// Capabilities describes what an implementation supports.
type Capabilities struct {
	ContractVersion   string
	RevocationMethods []RevocationMethod
	// Answer reports whether an answer surface exists.
	Answer bool
	// Conversation reports whether the conversation API exists (contract
	// v1.1); a driver reporting it implements Conversations.
	Conversation bool
}

// Supports reports whether the revocation method m is supported.
func (c Capabilities) Supports(m RevocationMethod) bool {
	return slices.Contains(c.RevocationMethods, m)
}

// Documents writes and removes documents at the source.
type Documents interface {
	// CreateDocument creates the document, or replaces it if the ID exists.
	CreateDocument(ctx context.Context, doc Document) error
	// DeleteDocument deletes the document; a missing document is not an error.
	DeleteDocument(ctx context.Context, id string) error
}

// Permissions changes access at the source.
type Permissions interface {
	// Grant allows principal to read the document; granting twice is not an error.
	Grant(ctx context.Context, documentID, principal string) error
	// Revoke removes the grant; revoking a missing grant is not an error.
	Revoke(ctx context.Context, documentID, principal string) error
	// AddMember adds principal to group, creating the group if needed.
	AddMember(ctx context.Context, group, principal string) error
	// RemoveMember removes principal from group; a missing member is not an error.
	RemoveMember(ctx context.Context, group, principal string) error
}

// GroupGranter grants a group (its members) access to a document. Backends
// whose principals are typed (an authorization engine distinguishes a user
// from a group's members) implement it; for others a group is a principal
// like any other and Grant serves.
type GroupGranter interface {
	GrantGroup(ctx context.Context, documentID, group string) error
	RevokeGroup(ctx context.Context, documentID, group string) error
}

// Captures is implemented by a driver that captures values from the
// target's replies (the REST source: a created item's ID, a permission's
// ID) which later operations on the same document need. Captures are held
// in memory per document ID; a caller that rebuilds the driver between
// steps persists Captured after a step and Restores it before the next.
// Restore drops values that are not valid captures; an operation needing
// a value not held fails naming it. A successful DeleteDocument forgets
// the document's captures.
type Captures interface {
	Captured(documentID string) map[string]string
	Restore(documentID string, values map[string]string)
}

// DocumentFinder is implemented by a driver that can find a created
// document again by its run-derived ID (the REST source's lookupDocument),
// for a run restarted after CreateDocument was sent but before what it
// captured was persisted. An error is never "not found".
type DocumentFinder interface {
	Lookup(ctx context.Context, documentID string) (found bool, err error)
}

// Searcher retrieves as a persona, through the system's own auth path.
type Searcher interface {
	// Search returns at most k hits, best first. An empty slice with a nil error
	// means the system answered and found nothing; any failure is an error.
	Search(ctx context.Context, persona Token, query string, k int) ([]Hit, error)
}

// Answerer asks the answer surface as a persona.
type Answerer interface {
	Answer(ctx context.Context, persona Token, question string) (Answer, error)
}

// Conversations starts conversations as a persona and asks follow-ups in
// them. It is optional: check Capabilities.Conversation and assert the
// interface. A conversation belongs to the persona that started it; a
// follow-up in one that is gone or not the persona's is an error, never an
// empty answer.
type Conversations interface {
	// StartConversation asks question as the first turn of a new
	// conversation and returns its ID with the answer. Not idempotent.
	StartConversation(ctx context.Context, persona Token, question string) (string, Answer, error)
	// FollowUp asks question as the next turn of conversation id.
	FollowUp(ctx context.Context, persona Token, id, question string) (Answer, error)
}

// ConversationEnder is a conversation API whose conversations are held on
// the operator's side (a chat surface): ending one frees its history at
// once instead of when it is evicted. Ending a conversation that is gone,
// or another persona's, does nothing.
type ConversationEnder interface {
	EndConversation(persona Token, id string)
}

// Streamer reads the answer as a stream of deltas (a chat surface with
// stream: true); the answer is their concatenation. A stream that breaks off
// is an error, never a shorter answer.
type Streamer interface {
	AnswerStream(ctx context.Context, persona Token, question string) (Answer, error)
}

// StreamChunk is one content delta of a watched stream, stamped on arrival
// with the monotonic clock.
type StreamChunk struct {
	At      time.Time
	Content string
}

// StreamEnd is how a watched stream ended without failing: Finished when it
// ran to its finish, else Declared names the declared access end it was cut
// with (an error event of that type or code).
type StreamEnd struct {
	Finished bool
	Declared string
}

// StreamWatcher reads a streamed answer chunk by chunk as it arrives (the
// InFlight surface). onChunk is called in order from the calling
// goroutine. A stream that fails or ends without a finish or a declared
// cut is an error, never a cut.
type StreamWatcher interface {
	WatchStream(ctx context.Context, persona Token, question string, onChunk func(StreamChunk)) (StreamEnd, error)
}

// CapabilityReporter reports what an implementation supports.
type CapabilityReporter interface {
	Capabilities(ctx context.Context) (Capabilities, error)
}

// Driver is the full set of operations a canary or suite needs.
type Driver interface {
	Documents
	Permissions
	Searcher
	Answerer
	CapabilityReporter
}
