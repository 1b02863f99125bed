package suite_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
	"github.com/ragcanary/ragcanary/internal/suite"
)

func doc(id, from, to string, principals ...string) v1alpha1.FixtureDocument {
	return v1alpha1.FixtureDocument{ID: id, Body: "body of " + id, ValidFrom: from, ValidTo: to, Principals: principals}
}

func build(t *testing.T, docs []v1alpha1.FixtureDocument, groups []v1alpha1.FixtureGroup) (*suite.Fixture, error) {
	t.Helper()
	origins := make([]string, len(docs))
	for i := range origins {
		origins[i] = "spec.fixture.documents"
	}
	return suite.BuildFixture(docs, origins, groups, time.Minute)
}

func TestBuildFixtureRejects(t *testing.T) {
	v := func(d v1alpha1.FixtureDocument, of string) v1alpha1.FixtureDocument { d.VersionOf = of; return d }
	for _, tc := range []struct {
		name string
		docs []v1alpha1.FixtureDocument
		// want is a fragment the message must hold: the document and field.
		want string
	}{
		{"duplicate id", []v1alpha1.FixtureDocument{doc("a", "", ""), doc("a", "", "")}, `"a": id is used twice`},
		// ConfigMap fixtures bypass the CRD: its rules hold here too.
		{"empty body", []v1alpha1.FixtureDocument{{ID: "a"}}, `"a": body must not be empty`},
		{"id with a chunk separator", []v1alpha1.FixtureDocument{{ID: "a#1", Body: "x"}}, `"a#1": id must be 1 to 128 characters`},
		{"unparsable validFrom", []v1alpha1.FixtureDocument{doc("a", "2026-13-01", "")}, `"a": validFrom "2026-13-01"`},
		{"unparsable validTo", []v1alpha1.FixtureDocument{doc("a", "", "yesterday")}, `"a": validTo "yesterday"`},
		{"empty interval", []v1alpha1.FixtureDocument{doc("a", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z")}, "validFrom must be before validTo"},
		// v1 still open-ended while v2 starts: both valid after 2026-06.
		{"open older version overlaps", []v1alpha1.FixtureDocument{
			v(doc("p-v1", "", ""), "p"), v(doc("p-v2", "2026-06-01T00:00:00Z", ""), "p")}, `versions "p-v1" and "p-v2" of document "p" have overlapping`},
		{"intervals overlap by a day", []v1alpha1.FixtureDocument{
			v(doc("p-v1", "", "2026-06-02T00:00:00Z"), "p"), v(doc("p-v2", "2026-06-01T00:00:00Z", ""), "p")}, "overlapping validity intervals"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := build(t, tc.docs, nil)
			var p *suite.Problem
			if !errors.As(err, &p) || p.Reason != v1alpha1.ReasonInvalidCases || !strings.Contains(p.Message, tc.want) {
				t.Fatalf("got %v, want an %s problem containing %q", err, v1alpha1.ReasonInvalidCases, tc.want)
			}
		})
	}
	// Half-open intervals: one version ending exactly where the next starts
	// is not an overlap.
	_, err := build(t, []v1alpha1.FixtureDocument{
		v(doc("p-v1", "", "2026-06-01T00:00:00Z"), "p"), v(doc("p-v2", "2026-06-01T00:00:00Z", ""), "p")}, nil)
	if err != nil {
		t.Fatalf("adjacent half-open intervals rejected: %v", err)
	}
}

func TestDeriveFromPolicyAndTime(t *testing.T) {
	v := func(d v1alpha1.FixtureDocument) v1alpha1.FixtureDocument { d.VersionOf = "policy"; return d }
	f, err := build(t, []v1alpha1.FixtureDocument{
		v(doc("policy-v1", "", "2026-01-01T00:00:00Z", "all")),
		v(doc("policy-v2", "2026-01-01T00:00:00Z", "2026-07-01T00:00:00Z", "all")),
		v(doc("policy-v3", "2026-07-01T00:00:00Z", "", "all")),
		doc("exec-memo", "", "", "execs"),
		doc("alice-note", "", "", "user:alice"),
		doc("declared-group-doc", "", "", "staff"),
	}, []v1alpha1.FixtureGroup{
		{Name: "all", Members: []string{"user:alice", "user:bob"}},
		{Name: "execs", Members: []string{"user:alice"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time { tm, _ := time.Parse(time.RFC3339, s); return tm }
	for _, tc := range []struct {
		name   string
		reader suite.Reader
		at     time.Time
		// allowed and superseded are what the policy gives the reader then.
		allowed, superseded []string
		// forbidden are the versions whose text the reader must never get.
		forbidden []string
	}{
		{"alice mid 2026", suite.Reader{Subject: "user:alice"}, at("2026-03-01T00:00:00Z"),
			[]string{"policy-v2", "exec-memo", "alice-note"}, []string{"policy-v1"}, []string{"declared-group-doc"}},
		// At the instant v2 ends, v3 is valid and v2 superseded: [from, to).
		{"alice at the boundary", suite.Reader{Subject: "user:alice"}, at("2026-07-01T00:00:00Z"),
			[]string{"policy-v3", "exec-memo", "alice-note"}, []string{"policy-v1", "policy-v2"}, []string{"declared-group-doc"}},
		// Before v1 ends, v2 and v3 are future versions: in neither set.
		{"bob in 2025 with a declared group", suite.Reader{Subject: "user:bob", Groups: []string{"staff"}}, at("2025-06-01T00:00:00Z"),
			[]string{"policy-v1", "declared-group-doc"}, []string{}, []string{"exec-memo", "alice-note"}},
		// A declared group named like a fixture group does not make the
		// reader a member of the run's copy of that group.
		{"declared group shadowing a fixture group", suite.Reader{Subject: "user:carol", Groups: []string{"execs"}}, at("2026-03-01T00:00:00Z"),
			[]string{}, []string{}, []string{"policy-v1", "policy-v2", "policy-v3", "exec-memo", "alice-note", "declared-group-doc"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := f.Derive(tc.reader, tc.at)
			if !slices.Equal(d.Allowed, tc.allowed) || !slices.Equal(d.Superseded, tc.superseded) {
				t.Errorf("allowed %v superseded %v, want %v and %v", d.Allowed, d.Superseded, tc.allowed, tc.superseded)
			}
			var forbidden []string
			for id := range d.ForbiddenText {
				forbidden = append(forbidden, id)
			}
			slices.Sort(forbidden)
			want := slices.Sorted(slices.Values(tc.forbidden))
			if !slices.Equal(forbidden, want) {
				t.Errorf("forbidden texts %v, want %v", forbidden, want)
			}
		})
	}
}

func TestScopeMapsBothWays(t *testing.T) {
	f, err := build(t, []v1alpha1.FixtureDocument{doc("memo", "", "", "team", "user:bob")},
		[]v1alpha1.FixtureGroup{{Name: "team", Members: []string{"user:alice"}}})
	if err != nil {
		t.Fatal(err)
	}
	s := suite.NewScope(f, "sr-1a2b")
	docs := s.Documents()
	if len(docs) != 1 || docs[0].ID != "sr-1a2b-memo" || !slices.Equal(docs[0].Principals, []string{"sr-1a2b-team", "user:bob"}) {
		t.Fatalf("planted %+v", docs)
	}
	// Chunks of one version count once; a foreign ID is kept as sent.
	got := s.FixtureIDs([]string{"sr-1a2b-memo#1", "other#0", "sr-1a2b-memo#0", "sr-9999-memo#0"})
	if want := []string{"memo", "other#0", "sr-9999-memo#0"}; !slices.Equal(got, want) {
		t.Fatalf("FixtureIDs = %v, want %v", got, want)
	}
}

// recordingDriver counts the source calls that pass through to ragtarget.
type recordingDriver struct {
	suite.PlantTarget
	mu                               sync.Mutex
	created, deleted, added, removed []string
}

func (r *recordingDriver) CreateDocument(ctx context.Context, d driver.Document) error {
	r.mu.Lock()
	r.created = append(r.created, d.ID)
	r.mu.Unlock()
	return r.PlantTarget.CreateDocument(ctx, d)
}

func (r *recordingDriver) DeleteDocument(ctx context.Context, id string) error {
	r.mu.Lock()
	r.deleted = append(r.deleted, id)
	r.mu.Unlock()
	return r.PlantTarget.DeleteDocument(ctx, id)
}

func (r *recordingDriver) AddMember(ctx context.Context, g, p string) error {
	r.mu.Lock()
	r.added = append(r.added, g+"="+p)
	r.mu.Unlock()
	return r.PlantTarget.AddMember(ctx, g, p)
}

func (r *recordingDriver) RemoveMember(ctx context.Context, g, p string) error {
	r.mu.Lock()
	r.removed = append(r.removed, g+"="+p)
	r.mu.Unlock()
	return r.PlantTarget.RemoveMember(ctx, g, p)
}

// TestPlantAwaitRemoveAgainstRagtarget plants a fixture whose one document
// is readable only through a fixture group, waits until the member sees it
// over real HTTP, and removes documents and memberships again.
func TestPlantAwaitRemoveAgainstRagtarget(t *testing.T) {
	lt := startLiveTarget(t, ragtarget.Config{}, nil)
	f, err := build(t, []v1alpha1.FixtureDocument{
		{ID: "falcon", Title: "Project Falcon", Body: "Project Falcon launches the orbital courier in spring.", Principals: []string{"team"}},
		{ID: "lunch", Title: "Lunch", Body: "The canteen serves noodles on Tuesdays.", Principals: []string{bobPrinc}},
		// Longer than a search query may be: checked by its start.
		{ID: "minutes", Title: "Minutes", Body: "Quarterly minutes about heliotrope budgets. " + strings.Repeat("Nothing else was decided. ", 300),
			Principals: []string{bobPrinc}},
	}, []v1alpha1.FixtureGroup{{Name: "team", Members: []string{alicePrinc}}})
	if err != nil {
		t.Fatal(err)
	}
	s := suite.NewScope(f, "sr-test")
	rec := &recordingDriver{PlantTarget: lt.drv}
	ctx := context.Background()
	if err := s.Plant(ctx, rec, nil); err != nil {
		t.Fatal(err)
	}
	checkers := []suite.Checker{{Reader: suite.Reader{Subject: alicePrinc}, Token: aliceToken}, {Reader: suite.Reader{Subject: bobPrinc}, Token: bobToken}}
	// Nothing syncs on its own (hour-long intervals): the first round
	// cannot see the documents, the pause syncs, the second round does.
	rounds := 0
	pause := func(ctx context.Context) error {
		rounds++
		for _, k := range []ragtarget.SyncKind{ragtarget.SyncContent, ragtarget.SyncACL} {
			if err := lt.svc.SyncNow(k); err != nil {
				return err
			}
		}
		return ctx.Err()
	}
	if err := s.AwaitVisible(ctx, lt.drv, nil, checkers, 10*time.Second, pause); err != nil {
		t.Fatalf("AwaitVisible: %v", err)
	}
	if rounds != 1 {
		t.Errorf("visible after %d pauses, want exactly 1 (invisible before the sync)", rounds)
	}
	// The group member reads through the run's group copy; bob does not.
	hits, err := lt.drv.Search(ctx, bobToken, "Project Falcon orbital courier", 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		if s.FixtureID(h.ChunkID) == "falcon" {
			t.Fatalf("bob, outside the fixture group, retrieved %s", h.ChunkID)
		}
	}
	if err := s.Remove(ctx, rec, nil); err != nil {
		t.Fatal(err)
	}
	for id := range lt.svc.SourceDocuments() {
		if strings.HasPrefix(id, "sr-test-") {
			t.Errorf("document %s left at the source", id)
		}
	}
	if !slices.Equal(rec.added, []string{"sr-test-team=" + alicePrinc}) || !slices.Equal(rec.removed, rec.added) {
		t.Errorf("memberships added %v removed %v", rec.added, rec.removed)
	}
	if !slices.Equal(rec.created, rec.deleted) || len(rec.created) != 3 {
		t.Errorf("documents created %v deleted %v", rec.created, rec.deleted)
	}
}

// TestAwaitVisibleTimesOut: a fixture the index never picks up ends in
// ErrFixtureNotVisible naming the document, within the bound.
func TestAwaitVisibleTimesOut(t *testing.T) {
	lt := startLiveTarget(t, ragtarget.Config{}, nil)
	f, err := build(t, []v1alpha1.FixtureDocument{{ID: "never", Body: "unsynced text about zebras", Principals: []string{alicePrinc}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := suite.NewScope(f, "sr-late")
	if err := s.Plant(context.Background(), lt.drv, nil); err != nil {
		t.Fatal(err)
	}
	pause := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	err = s.AwaitVisible(context.Background(), lt.drv, nil,
		[]suite.Checker{{Reader: suite.Reader{Subject: alicePrinc}, Token: aliceToken}}, 100*time.Millisecond, pause)
	if !errors.Is(err, suite.ErrFixtureNotVisible) || !strings.Contains(err.Error(), "never") {
		t.Fatalf("got %v, want ErrFixtureNotVisible naming the document", err)
	}
}
