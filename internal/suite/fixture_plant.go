package suite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ragcanary/ragcanary/internal/driver"
)

// Scope maps fixture IDs to the run-scoped IDs a run plants them under and
// back, so two runs (or a run and live mode) never share a document, while
// cases and reports speak fixture IDs only.
type Scope struct {
	// Prefix starts every run-scoped ID: deterministic per run, so a
	// retried plant replaces its documents instead of adding more.
	Prefix  string
	fixture *Fixture
	groups  map[string]bool
}

// NewScope scopes a fixture under prefix, which must be a valid ID start
// without '#' (the chunk separator).
func NewScope(f *Fixture, prefix string) *Scope {
	s := &Scope{Prefix: prefix, fixture: f, groups: map[string]bool{}}
	for _, g := range f.Groups {
		s.groups[g.Name] = true
	}
	return s
}

// DocumentID is the target's ID for a fixture document.
func (s *Scope) DocumentID(id string) string { return s.Prefix + "-" + id }

// Group is the target's name for a fixture group.
func (s *Scope) Group(name string) string { return s.Prefix + "-" + name }

// principal maps a document principal: fixture groups to their copies,
// anything else (a subject, a declared group) unchanged.
func (s *Scope) principal(p string) string {
	if s.groups[p] {
		return s.Group(p)
	}
	return p
}

// FixtureID maps a target document ID (or a chunk ID "<doc>#<n>") back to
// its fixture ID. An ID this run did not plant is returned as the target
// sent it: it is evidence outside every allowed set, and hiding it would
// hide a leak.
func (s *Scope) FixtureID(targetID string) string {
	doc, _, _ := strings.Cut(targetID, "#")
	if id, ok := strings.CutPrefix(doc, s.Prefix+"-"); ok && s.fixture.Has(id) {
		return id
	}
	return targetID
}

// FixtureIDs maps target IDs back, keeping the first of repeated documents
// (chunks of one version count once, so a version is never credited twice)
// in rank order.
func (s *Scope) FixtureIDs(targetIDs []string) []string {
	out := make([]string, 0, len(targetIDs))
	for _, t := range targetIDs {
		if id := s.FixtureID(t); !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// Documents are the fixture's documents as the target gets them.
func (s *Scope) Documents() []driver.Document {
	out := make([]driver.Document, 0, len(s.fixture.Documents))
	for _, d := range s.fixture.Documents {
		principals := make([]string, 0, len(d.Principals))
		for _, p := range d.Principals {
			principals = append(principals, s.principal(p))
		}
		title := d.Title
		if title == "" {
			title = d.ID
		}
		out = append(out, driver.Document{ID: s.DocumentID(d.ID), Title: title, Body: d.Body, Principals: principals})
	}
	return out
}

// membership is one planted group membership.
type membership struct{ group, member string }

func (s *Scope) memberships() []membership {
	var out []membership
	for _, g := range s.fixture.Groups {
		for _, m := range g.Members {
			out = append(out, membership{group: s.Group(g.Name), member: m})
		}
	}
	return out
}

// PlantTarget is what planting and removal need from the corpus driver.
type PlantTarget interface {
	driver.Documents
	driver.Permissions
}

// Plant writes every membership, then every document, through the corpus
// driver, waiting for the rate limiter before each call. Memberships first,
// so no document is ever visible to a reader the policy excludes. Every
// step is idempotent: a retried plant replaces what is there.
func (s *Scope) Plant(ctx context.Context, d PlantTarget, wait func(context.Context) error) error {
	for _, m := range s.memberships() {
		if err := limited(ctx, wait, func(ctx context.Context) error { return d.AddMember(ctx, m.group, m.member) }); err != nil {
			return fmt.Errorf("adding %s to fixture group %s: %w", m.member, m.group, err)
		}
	}
	for _, doc := range s.Documents() {
		if err := limited(ctx, wait, func(ctx context.Context) error { return d.CreateDocument(ctx, doc) }); err != nil {
			return fmt.Errorf("planting fixture document %s: %w", doc.ID, err)
		}
	}
	return nil
}

// Remove deletes every document and membership the run planted, trying all
// of them even when some fail, and returns the failures joined. Deleting a
// missing document or membership succeeds, so Remove is safe to repeat and
// safe on a run that planted only part of its fixture.
func (s *Scope) Remove(ctx context.Context, d PlantTarget, wait func(context.Context) error) error {
	var errs []error
	for _, doc := range s.Documents() {
		if err := limited(ctx, wait, func(ctx context.Context) error { return d.DeleteDocument(ctx, doc.ID) }); err != nil {
			errs = append(errs, fmt.Errorf("removing fixture document %s: %w", doc.ID, err))
		}
	}
	for _, m := range s.memberships() {
		if err := limited(ctx, wait, func(ctx context.Context) error { return d.RemoveMember(ctx, m.group, m.member) }); err != nil {
			errs = append(errs, fmt.Errorf("removing %s from fixture group %s: %w", m.member, m.group, err))
		}
	}
	return errors.Join(errs...)
}

func limited(ctx context.Context, wait func(context.Context) error, f func(context.Context) error) error {
	if wait != nil {
		if err := wait(ctx); err != nil {
			return err
		}
	}
	return f(ctx)
}

// visibilityDepth is the search depth of a visibility check: the document
// is searched by its own text, so it ranks near the top when visible.
const visibilityDepth = 50

// ErrFixtureNotVisible is a planted fixture that did not become retrievable
// within the visibility timeout.
var ErrFixtureNotVisible = errors.New("fixture not visible")

// Checker is one reader used to check visibility: its fixture identity and
// its credential.
type Checker struct {
	Reader Reader
	Token  driver.Token
}

// AwaitVisible waits, bounded by timeout, until every fixture document is
// retrievable by some reader the policy lets read it, searching by the
// document's own text. A document no given reader may read cannot be
// checked and is not waited for. Errors are not absences: a failing search
// is retried until the deadline, and the last error is reported with
// ErrFixtureNotVisible. pause waits between rounds and fails when its
// context ends; the caller owns it, so the pace is injected.
func (s *Scope) AwaitVisible(parent context.Context, search driver.Searcher, wait func(context.Context) error,
	checkers []Checker, timeout time.Duration, pause func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	pending := s.checks(checkers)
	var lastErr error
	for {
		for id, c := range pending {
			ok, err := s.visible(ctx, search, wait, id, c)
			if err != nil {
				lastErr = err
				continue
			}
			if ok {
				delete(pending, id)
			}
		}
		if len(pending) == 0 {
			return nil
		}
		if err := pause(ctx); err != nil {
			if parent.Err() != nil {
				return parent.Err()
			}
			return notVisible(pending, lastErr, timeout)
		}
	}
}

// checks picks, for each checkable document, the first reader allowed to read it.
func (s *Scope) checks(checkers []Checker) map[string]Checker {
	out := map[string]Checker{}
	for _, d := range s.fixture.Documents {
		for _, c := range checkers {
			if s.fixture.readable(d, s.fixture.principalsOf(c.Reader)) {
				out[d.ID] = c
				break
			}
		}
	}
	return out
}

func (s *Scope) visible(ctx context.Context, search driver.Searcher, wait func(context.Context) error, id string, c Checker) (bool, error) {
	var body string
	for _, d := range s.fixture.Documents {
		if d.ID == id {
			body = d.Body
		}
	}
	var hits []driver.Hit
	err := limited(ctx, wait, func(ctx context.Context) error {
		var err error
		hits, err = search.Search(ctx, c.Token, visibilityQuery(body), visibilityDepth)
		return err
	})
	if err != nil {
		return false, err
	}
	target := s.DocumentID(id)
	for _, h := range hits {
		if doc, _, _ := strings.Cut(h.ChunkID, "#"); h.DocumentID == target || doc == target {
			return true, nil
		}
	}
	return false, nil
}

// maxVisibilityQuery keeps a visibility query well inside the contract's
// query length (4000 characters).
const maxVisibilityQuery = 1000

// visibilityQuery is the start of the document's text, cut at a word.
func visibilityQuery(body string) string {
	body = strings.Join(strings.Fields(body), " ")
	if len(body) <= maxVisibilityQuery {
		return body
	}
	cut := strings.LastIndexByte(body[:maxVisibilityQuery], ' ')
	if cut <= 0 {
		// One long word: cut at a rune boundary.
		for cut = maxVisibilityQuery; cut > 0 && !utf8.RuneStart(body[cut]); cut-- {
		}
	}
	return body[:cut]
}

func notVisible(pending map[string]Checker, lastErr error, timeout time.Duration) error {
	ids := sortedKeys(pending)
	msg := fmt.Sprintf("%d fixture documents were not retrievable within %s (first: %s)", len(ids), timeout, strings.Join(firstN(ids, 5), ", "))
	if lastErr != nil {
		return fmt.Errorf("%w: %s; last search error: %s", ErrFixtureNotVisible, msg, ErrorText(lastErr))
	}
	return fmt.Errorf("%w: %s", ErrFixtureNotVisible, msg)
}
