package rest

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Bounds on what a target may make the operator hold: captured values
// are the target's text.
const (
	// MaxCaptureBytes bounds one captured value.
	MaxCaptureBytes = 256
	// MaxCapturesPerDocument bounds the names kept for one document.
	MaxCapturesPerDocument = 16
	// maxDocuments bounds the documents a driver keeps captures for; a
	// driver is rebuilt per step, so a handful is normal.
	maxDocuments = 1024
)

// validCapture reports why v cannot be a captured value, or "": it must be
// non-empty, at most MaxCaptureBytes, valid UTF-8 and printable (no
// control characters), so it is safe in a header and in a message.
func validCapture(v string) string {
	switch {
	case v == "":
		return "empty"
	case len(v) > MaxCaptureBytes:
		return fmt.Sprintf("longer than %d bytes", MaxCaptureBytes)
	case !utf8.ValidString(v):
		return "not valid UTF-8"
	}
	for _, r := range v {
		if unicode.IsControl(r) || !unicode.IsPrint(r) && r != ' ' {
			return "holds a control or unprintable character"
		}
	}
	return ""
}

// captureStore keeps captured values per document ID. It is safe for
// concurrent use.
type captureStore struct {
	mu   sync.Mutex
	docs map[string]map[string]string
}

// get returns a copy of the document's captured values (nil when none).
func (s *captureStore) get(doc string) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.docs[doc]) == 0 {
		return nil
	}
	return maps.Clone(s.docs[doc])
}

// merge adds values to the document's captures, within the bounds; values
// are validated by the caller.
func (s *captureStore) merge(doc string, values map[string]string) error {
	if len(values) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.docs[doc]
	if cur == nil {
		if len(s.docs) >= maxDocuments {
			return fmt.Errorf("captured values are kept for at most %d documents", maxDocuments)
		}
		cur = map[string]string{}
	}
	next := maps.Clone(cur)
	maps.Copy(next, values)
	if len(next) > MaxCapturesPerDocument {
		return fmt.Errorf("at most %d captured values are kept per document", MaxCapturesPerDocument)
	}
	if s.docs == nil {
		s.docs = map[string]map[string]string{}
	}
	s.docs[doc] = next
	return nil
}

// forget drops the document's captures.
func (s *captureStore) forget(doc string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.docs, doc)
}

// restore replaces the document's captures with values. Each is
// validated again (values persisted in a status are the target's text
// too); one that fails, or past the bounds, is dropped, so a request
// needing it fails naming it instead of sending it.
func (s *captureStore) restore(doc string, values map[string]string) {
	kept := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(values)) {
		if len(kept) < MaxCapturesPerDocument && (validName(name) || name == createdMark) && validCapture(values[name]) == "" {
			kept[name] = values[name]
		}
	}
	s.forget(doc)
	_ = s.merge(doc, kept)
}
