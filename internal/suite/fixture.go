package suite

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// DefaultFixtureKey is the ConfigMap key read when a fixture source names
// none, matching the CRD default.
const DefaultFixtureKey = "fixture.yaml"

// DefaultVisibilityTimeout bounds the wait for planted documents when the
// suite sets none, matching the CRD default.
const DefaultVisibilityTimeout = 2 * time.Minute

// FixtureDoc is a fixture document with its validity interval parsed.
type FixtureDoc struct {
	v1alpha1.FixtureDocument `json:",inline"`
	// From and To bound [From, To); zero means unbounded on that side.
	From time.Time `json:"-"`
	To   time.Time `json:"-"`
}

// Fixture is a suite's fixture, loaded and validated: documents in spec
// order (inline first, then each source), and group memberships.
type Fixture struct {
	Documents []FixtureDoc            `json:"documents"`
	Groups    []v1alpha1.FixtureGroup `json:"groups"`
	// VisibilityTimeout bounds the wait for planted documents.
	VisibilityTimeout time.Duration `json:"visibilityTimeout"`
}

// fixtureFile is the shape of a fixture ConfigMap key.
type fixtureFile struct {
	Documents []v1alpha1.FixtureDocument `json:"documents,omitempty"`
	Groups    []v1alpha1.FixtureGroup    `json:"groups,omitempty"`
}

// LoadFixture reads a suite's fixture (inline, then sources in order) and
// validates it; nil when the suite has none. A *Problem names what to fix.
func LoadFixture(ctx context.Context, r client.Reader, s *v1alpha1.EvalSuite) (*Fixture, error) {
	spec := s.Spec.Fixture
	if spec == nil {
		return nil, nil
	}
	docs := slices.Clone(spec.Documents)
	groups := slices.Clone(spec.Groups)
	origins := make([]string, len(docs))
	for i := range origins {
		origins[i] = "spec.fixture.documents"
	}
	for _, src := range spec.Sources {
		f, origin, err := loadFixtureSource(ctx, r, s.Namespace, src)
		if err != nil {
			return nil, err
		}
		docs = append(docs, f.Documents...)
		for range f.Documents {
			origins = append(origins, origin)
		}
		groups = append(groups, f.Groups...)
	}
	timeout := DefaultVisibilityTimeout
	if spec.VisibilityTimeout != nil && spec.VisibilityTimeout.Duration > 0 {
		timeout = spec.VisibilityTimeout.Duration
	}
	return BuildFixture(docs, origins, groups, timeout)
}

func loadFixtureSource(ctx context.Context, r client.Reader, namespace string, src v1alpha1.FixtureSource) (fixtureFile, string, error) {
	key := src.Key
	if key == "" {
		key = DefaultFixtureKey
	}
	origin := fmt.Sprintf("ConfigMap %q key %q", src.ConfigMapRef.Name, key)
	var cm corev1.ConfigMap
	err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: src.ConfigMapRef.Name}, &cm)
	if apierrors.IsNotFound(err) {
		return fixtureFile{}, origin, problem(v1alpha1.ReasonConfigMapNotFound,
			"ConfigMap %q named in spec.fixture.sources does not exist in namespace %q", src.ConfigMapRef.Name, namespace)
	}
	if err != nil {
		return fixtureFile{}, origin, err
	}
	data, ok := cm.Data[key]
	if !ok {
		return fixtureFile{}, origin, problem(v1alpha1.ReasonConfigMapNotFound,
			"ConfigMap %q has no key %q: add it or fix spec.fixture.sources", src.ConfigMapRef.Name, key)
	}
	var f fixtureFile
	if err := yaml.UnmarshalStrict([]byte(data), &f); err != nil {
		return fixtureFile{}, origin, problem(v1alpha1.ReasonInvalidCases,
			"%s is not a JSON or YAML fixture (documents, groups): %v", origin, err)
	}
	return f, origin, nil
}

// BuildFixture validates documents and groups: unique IDs and group names,
// RFC 3339 validity bounds with validFrom before validTo, and versions of
// one document (same versionOf) with non-overlapping intervals.
// origins[i] says where docs[i] came from, for the message.
func BuildFixture(docs []v1alpha1.FixtureDocument, origins []string, groups []v1alpha1.FixtureGroup, timeout time.Duration) (*Fixture, error) {
	f := &Fixture{Groups: groups, VisibilityTimeout: timeout}
	seen := map[string]bool{}
	for i, d := range docs {
		where := fmt.Sprintf("%s: fixture document %q", origins[i], d.ID)
		if msg := checkFixtureDoc(d); msg != "" {
			return nil, problem(v1alpha1.ReasonInvalidCases, "%s: %s", where, msg)
		}
		if seen[d.ID] {
			return nil, problem(v1alpha1.ReasonInvalidCases, "%s: id is used twice; each document version needs its own id", where)
		}
		seen[d.ID] = true
		fd := FixtureDoc{FixtureDocument: d}
		var err error
		if fd.From, err = parseBound(d.ValidFrom); err != nil {
			return nil, problem(v1alpha1.ReasonInvalidCases, "%s: validFrom %q is not an RFC 3339 time", where, d.ValidFrom)
		}
		if fd.To, err = parseBound(d.ValidTo); err != nil {
			return nil, problem(v1alpha1.ReasonInvalidCases, "%s: validTo %q is not an RFC 3339 time", where, d.ValidTo)
		}
		if !fd.From.IsZero() && !fd.To.IsZero() && !fd.From.Before(fd.To) {
			return nil, problem(v1alpha1.ReasonInvalidCases, "%s: validFrom must be before validTo (the interval is [validFrom, validTo))", where)
		}
		f.Documents = append(f.Documents, fd)
	}
	if err := checkOverlaps(f.Documents, origins); err != nil {
		return nil, err
	}
	if len(docs) > maxFixtureDocuments {
		return nil, problem(v1alpha1.ReasonInvalidCases, "the fixture has %d documents, more than the %d allowed", len(docs), maxFixtureDocuments)
	}
	names := map[string]bool{}
	for _, g := range groups {
		if g.Name == "" || len(g.Members) > maxFixtureGroupMember {
			return nil, problem(v1alpha1.ReasonInvalidCases, "fixture group %q: name must not be empty and members may list at most %d principals",
				g.Name, maxFixtureGroupMember)
		}
		if names[g.Name] {
			return nil, problem(v1alpha1.ReasonInvalidCases, "fixture group %q is declared twice", g.Name)
		}
		names[g.Name] = true
	}
	return f, nil
}

// The CRD's bounds on fixture documents and groups (FixtureDocument and
// FixtureGroup markers); ConfigMap fixtures bypass the API server's schema,
// so they are held to the same numbers here.
const (
	maxFixtureIDLength    = 128
	maxFixtureTitle       = 256
	maxFixtureBody        = 16384
	maxFixturePrincipals  = 64
	maxFixturePrincipal   = 256
	maxFixtureDocuments   = 200 * 9 // inline plus eight sources
	maxFixtureGroupMember = 64
)

var fixtureID = regexp.MustCompile(`^[A-Za-z0-9][-._A-Za-z0-9]*$`)

// checkFixtureDoc returns what is wrong with one document, naming the field.
func checkFixtureDoc(d v1alpha1.FixtureDocument) string {
	switch {
	case utf8.RuneCountInString(d.ID) > maxFixtureIDLength || !fixtureID.MatchString(d.ID):
		return fmt.Sprintf("id must be 1 to %d characters of A-Z, a-z, 0-9, '-', '.' and '_'", maxFixtureIDLength)
	case utf8.RuneCountInString(d.VersionOf) > maxFixtureIDLength:
		return fmt.Sprintf("versionOf is longer than %d characters", maxFixtureIDLength)
	case utf8.RuneCountInString(d.Title) > maxFixtureTitle:
		return fmt.Sprintf("title is longer than %d characters", maxFixtureTitle)
	case strings.TrimSpace(d.Body) == "":
		return "body must not be empty"
	case utf8.RuneCountInString(d.Body) > maxFixtureBody:
		return fmt.Sprintf("body is longer than %d characters", maxFixtureBody)
	case len(d.Principals) > maxFixturePrincipals:
		return fmt.Sprintf("principals lists %d entries, more than %d", len(d.Principals), maxFixturePrincipals)
	}
	for i, p := range d.Principals {
		if p == "" || utf8.RuneCountInString(p) > maxFixturePrincipal {
			return fmt.Sprintf("principals[%d] must be 1 to %d characters", i, maxFixturePrincipal)
		}
	}
	return ""
}

func parseBound(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	return time.Parse(time.RFC3339, s)
}

// checkOverlaps rejects two versions of one document valid at the same
// instant: a question's as-of time must select at most one version.
func checkOverlaps(docs []FixtureDoc, origins []string) error {
	byDoc := map[string][]int{}
	for i, d := range docs {
		byDoc[d.logical()] = append(byDoc[d.logical()], i)
	}
	for _, name := range sortedKeys(byDoc) {
		idx := byDoc[name]
		sort.SliceStable(idx, func(a, b int) bool { return before(docs[idx[a]].From, docs[idx[b]].From) })
		for j := 1; j < len(idx); j++ {
			prev, cur := docs[idx[j-1]], docs[idx[j]]
			if prev.To.IsZero() || cur.From.IsZero() || cur.From.Before(prev.To) {
				return problem(v1alpha1.ReasonInvalidCases,
					"%s: fixture document %q: versions %q and %q of document %q have overlapping validity intervals; set validTo of the older to at most validFrom of the newer",
					origins[idx[j]], cur.ID, prev.ID, cur.ID, name)
			}
		}
	}
	return nil
}

// before orders unbounded starts first.
func before(a, b time.Time) bool {
	if a.IsZero() {
		return !b.IsZero()
	}
	return !b.IsZero() && a.Before(b)
}

func (d FixtureDoc) logical() string {
	if d.VersionOf != "" {
		return d.VersionOf
	}
	return d.ID
}

// validAt reports whether t is in [From, To).
func (d FixtureDoc) validAt(t time.Time) bool {
	return (d.From.IsZero() || !t.Before(d.From)) && (d.To.IsZero() || t.Before(d.To))
}

// endedBy reports whether the version's interval ended at or before t.
func (d FixtureDoc) endedBy(t time.Time) bool { return !d.To.IsZero() && !t.Before(d.To) }

// Reader is who reads fixture evidence: a persona's subject and groups.
type Reader struct {
	Subject string   `json:"subject"`
	Groups  []string `json:"groups,omitempty"`
}

// principalsOf is every principal the reader acts as in the fixture: the
// subject, its declared groups, and the fixture groups listing it. A
// fixture group is planted as a run-scoped copy, so only the fixture's own
// membership makes a reader part of it, never a declared group of that name.
func (f *Fixture) principalsOf(r Reader) map[string]bool {
	fixtureGroup := map[string]bool{}
	out := map[string]bool{r.Subject: true}
	for _, g := range f.Groups {
		fixtureGroup[g.Name] = true
		if slices.Contains(g.Members, r.Subject) {
			out[g.Name] = true
		}
	}
	for _, g := range r.Groups {
		if !fixtureGroup[g] {
			out[g] = true
		}
	}
	return out
}

// readable reports whether the reader may read the document at all.
func (f *Fixture) readable(d FixtureDoc, principals map[string]bool) bool {
	for _, p := range d.Principals {
		if principals[p] {
			return true
		}
	}
	return false
}

// Derived is what a fixture's policy says one reader may use at one time.
type Derived struct {
	// Allowed are the versions the reader may read that are valid at the time.
	Allowed []string `json:"allowed"`
	// Superseded are versions the reader may read whose interval ended by then.
	Superseded []string `json:"superseded"`
	// ForbiddenText maps each version the reader may not read to its body,
	// so an answer quoting it is caught as a disclosure.
	ForbiddenText map[string]string `json:"-"`
}

// Derive computes a reader's evidence sets at time at from the fixture's
// principals and validity intervals alone — never from what the target
// returns. Versions readable but not yet valid (a future policy published
// early) are in neither set, so using them is outside allowed.
func (f *Fixture) Derive(r Reader, at time.Time) Derived {
	principals := f.principalsOf(r)
	out := Derived{Allowed: []string{}, Superseded: []string{}, ForbiddenText: map[string]string{}}
	for _, d := range f.Documents {
		switch {
		case !f.readable(d, principals):
			out.ForbiddenText[d.ID] = d.Body
		case d.validAt(at):
			out.Allowed = append(out.Allowed, d.ID)
		case d.endedBy(at):
			out.Superseded = append(out.Superseded, d.ID)
		}
	}
	return out
}

// Has reports whether id is a fixture document.
func (f *Fixture) Has(id string) bool {
	for _, d := range f.Documents {
		if d.ID == id {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
