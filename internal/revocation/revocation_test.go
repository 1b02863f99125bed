package revocation

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
)

// recorder is an in-memory driver that records calls; fail makes the named
// call return err.
type recorder struct {
	driver.Driver // unused methods panic
	calls         []string
	fail          map[string]error
}

func (r *recorder) call(name string, args ...string) error {
	r.calls = append(r.calls, name+"("+strings.Join(args, ",")+")")
	return r.fail[name]
}

func (r *recorder) Grant(_ context.Context, doc, p string) error  { return r.call("Grant", doc, p) }
func (r *recorder) Revoke(_ context.Context, doc, p string) error { return r.call("Revoke", doc, p) }
func (r *recorder) AddMember(_ context.Context, g, p string) error {
	return r.call("AddMember", g, p)
}
func (r *recorder) RemoveMember(_ context.Context, g, p string) error {
	return r.call("RemoveMember", g, p)
}
func (r *recorder) DeleteDocument(_ context.Context, id string) error {
	return r.call("DeleteDocument", id)
}
func (r *recorder) CreateDocument(_ context.Context, d driver.Document) error {
	return r.call("CreateDocument", d.ID, d.Body)
}

// groupRecorder is a backend with typed principals.
type groupRecorder struct{ recorder }

func (r *groupRecorder) GrantGroup(_ context.Context, doc, g string) error {
	return r.call("GrantGroup", doc, g)
}
func (r *groupRecorder) RevokeGroup(_ context.Context, doc, g string) error {
	return r.call("RevokeGroup", doc, g)
}

var canary = Canary{DocumentID: "rc-1", Subject: "alice", Group: "readers",
	Updated:    func() (driver.Document, error) { return driver.Document{ID: "rc-1", Body: "new"}, nil },
	Credential: &issuer{}}

// issuer records a persona's credential being revoked and restored, in
// the same list as the driver's calls.
type issuer struct{ calls *[]string }

func (i *issuer) Revoke(context.Context) error {
	if i.calls != nil {
		*i.calls = append(*i.calls, "RevokeClient()")
	}
	return nil
}

func (i *issuer) Restore(context.Context) error {
	if i.calls != nil {
		*i.calls = append(*i.calls, "RestoreClient()")
	}
	return nil
}

func TestEveryContractMethodHasAStrategy(t *testing.T) {
	for _, m := range Methods() {
		s, err := For(m)
		if err != nil || s.Method() != m {
			t.Errorf("For(%s) = %v, %v", m, s, err)
		}
		// The target is asked only for the contract's methods.
		if !slices.Contains(v1alpha1.RevocationMethods, s.Needs()) {
			t.Errorf("%s needs %s, which is not a contract method", m, s.Needs())
		}
	}
	if s, err := For(""); err != nil || s.Method() != v1alpha1.RevokeRemoveGrant {
		t.Errorf("the default method is %v (%v), want RemoveGrant", s, err)
	}
	if _, err := For("Teleport"); err == nil {
		t.Error("an unknown method has a strategy")
	}
	if len(strategies) != len(Methods()) {
		t.Errorf("%d strategies for %d methods", len(strategies), len(Methods()))
	}
}

// TestStrategyCalls: what each method sends to share, revoke and undo.
func TestStrategyCalls(t *testing.T) {
	for _, tc := range []struct {
		method v1alpha1.RevocationMethod
		// typed uses a backend with typed principals (GrantGroup).
		typed               bool
		share, revoke, undo []string
	}{
		{v1alpha1.RevokeRemoveGrant, false, []string{"Grant(rc-1,alice)"}, []string{"Revoke(rc-1,alice)"}, []string{"Revoke(rc-1,alice)"}},
		{v1alpha1.RevokeDeleteDocument, false, []string{"Grant(rc-1,alice)"}, []string{"DeleteDocument(rc-1)"}, []string{"Revoke(rc-1,alice)"}},
		{v1alpha1.RevokeUpdateContent, false, []string{"Grant(rc-1,alice)"}, []string{"CreateDocument(rc-1,new)"}, []string{"Revoke(rc-1,alice)"}},
		// The client is revoked at its issuer, the grant kept; undo
		// restores the client, then removes the grant.
		{v1alpha1.RevokeCredential, false, []string{"Grant(rc-1,alice)"}, []string{"RevokeClient()"}, []string{"RestoreClient()", "Revoke(rc-1,alice)"}},
		// Without typed principals the group is granted as a principal.
		{v1alpha1.RevokeRemoveFromGroup, false, []string{"AddMember(readers,alice)", "Grant(rc-1,readers)"},
			[]string{"RemoveMember(readers,alice)"}, []string{"RemoveMember(readers,alice)"}},
		// A separate backend keeps the group's grant: undo removes it.
		{v1alpha1.RevokeRemoveFromGroup, true, []string{"AddMember(readers,alice)", "GrantGroup(rc-1,readers)"},
			[]string{"RemoveMember(readers,alice)"}, []string{"RemoveMember(readers,alice)", "RevokeGroup(rc-1,readers)"}},
	} {
		s, _ := For(tc.method)
		for _, step := range []struct {
			name string
			do   func(context.Context, driver.Driver, Canary) error
			want []string
		}{{"share", s.Share, tc.share}, {"revoke", s.Revoke, tc.revoke}, {"undo", s.Undo, tc.undo}} {
			rec := &recorder{}
			var d driver.Driver = rec
			calls := func() []string { return rec.calls }
			if tc.typed {
				g := &groupRecorder{}
				d, calls = g, func() []string { return g.calls }
			}
			c := canary
			c.Credential = &issuer{calls: &rec.calls}
			if err := step.do(context.Background(), d, c); err != nil {
				t.Errorf("%s %s: %v", tc.method, step.name, err)
			}
			if got := calls(); !slices.Equal(got, step.want) {
				t.Errorf("%s (typed %v) %s sent %v, want %v", tc.method, tc.typed, step.name, got, step.want)
			}
		}
	}
}

// TestUndoToleratesWhatIsGone: a permanent rejection at undo (already
// revoked, document gone) is no error; a transient one is, and the subject
// unknown sends nothing for the persona.
func TestUndoToleratesWhatIsGone(t *testing.T) {
	gone := driver.NewError(driver.Permanent, "Revoke", 404, "not found", nil)
	down := driver.NewError(driver.Transient, "Revoke", 503, "server error", nil)
	s, _ := For(v1alpha1.RevokeRemoveGrant)
	if err := s.Undo(context.Background(), &recorder{fail: map[string]error{"Revoke": gone}}, canary); err != nil {
		t.Errorf("undo of a grant already gone: %v", err)
	}
	if err := s.Undo(context.Background(), &recorder{fail: map[string]error{"Revoke": down}}, canary); !errors.Is(err, down) {
		t.Errorf("undo against a failing target: %v, want the transient error", err)
	}
	r := &recorder{}
	unknown := canary
	unknown.Subject = ""
	if err := s.Undo(context.Background(), r, unknown); err != nil || len(r.calls) != 0 {
		t.Errorf("undo without a subject sent %v (%v)", r.calls, err)
	}
	cr, _ := For(v1alpha1.RevokeCredential)
	noRevoker := canary
	noRevoker.Credential = nil
	if err := cr.Revoke(context.Background(), &recorder{}, noRevoker); err == nil {
		t.Error("a credential revocation without a revoker succeeded")
	}
	if p := cr.Problem(noRevoker, Control{Name: "alice", Subject: "alice"}, nil); !strings.Contains(p, "spec.oauth2.revocation") {
		t.Errorf("a persona without a revocation: problem %q", p)
	}
	u, _ := For(v1alpha1.RevokeUpdateContent)
	noUpdate := canary
	noUpdate.Updated = nil
	if err := u.Revoke(context.Background(), &recorder{}, noUpdate); err == nil {
		t.Error("a content update without the updated document succeeded")
	}
}

func TestProblems(t *testing.T) {
	persona := Control{Name: "alice", Subject: "alice"}
	for _, tc := range []struct {
		method   v1alpha1.RevocationMethod
		controls []Control
		// want is a substring of the problem, "" for none.
		want string
	}{
		{v1alpha1.RevokeRemoveGrant, []Control{{Name: "bob", Subject: "bob", Groups: []string{"readers"}}}, ""},
		{v1alpha1.RevokeRemoveGrant, []Control{{Name: "twin", Subject: "alice"}}, "same subject"},
		{v1alpha1.RevokeRemoveFromGroup, []Control{{Name: "bob", Subject: "bob", Groups: []string{"readers"}}}, "revocation group"},
		{v1alpha1.RevokeRemoveFromGroup, []Control{{Name: "bob", Subject: "bob", Groups: []string{"other"}}}, ""},
		{v1alpha1.RevokeRemoveFromGroup, []Control{{Name: "twin", Subject: "alice"}}, "same subject"},
		{v1alpha1.RevokeCredential, []Control{{Name: "bob", Subject: "bob"}}, ""},
		{v1alpha1.RevokeCredential, []Control{{Name: "twin", Subject: "alice"}}, "same subject"},
	} {
		s, _ := For(tc.method)
		got := s.Problem(canary, persona, tc.controls)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s with %+v: problem %q, want %q", tc.method, tc.controls, got, tc.want)
		}
	}
}
