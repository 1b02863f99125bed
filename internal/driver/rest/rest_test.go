package rest

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/revocation"
)

// hostileSubject holds every character that could move a request.
const hostileSubject = "a/b?c%d..e#f"

// giteaLike declares every operation the way a forge's API wants them.
func giteaLike() *v1alpha1.RESTDriver {
	return &v1alpha1.RESTDriver{
		Values: map[string]v1alpha1.RESTValue{"org": "ragcanary"},
		Operations: v1alpha1.RESTOperations{
			CreateDocument: []v1alpha1.RESTRequest{
				{Method: "POST", Path: "/orgs/{{.Values.org}}/repos", Body: `{"name": {{json .DocumentID}}, "private": true}`,
					Expect: []int32{201}, Capture: map[string]v1alpha1.RESTValue{"repo": "/name"}},
				{Method: "POST", Path: "/repos/{{.Values.org}}/{{.Captured.repo}}/issues",
					Body: `{"title": {{json .Title}}, "body": {{json .Body}}}`, Capture: map[string]v1alpha1.RESTValue{"issue": "/number"}},
			},
			DeleteDocument: []v1alpha1.RESTRequest{req("DELETE", "/repos/{{.Values.org}}/{{.Captured.repo}}")},
			Grant: []v1alpha1.RESTRequest{{Method: "PUT", Path: "/repos/{{.Values.org}}/{{.Captured.repo}}/collaborators/{{.Principal}}",
				Body: `{"permission": "read"}`, Headers: map[string]v1alpha1.RESTValue{"X-Run": "{{.Run}}"}}},
			Revoke:          []v1alpha1.RESTRequest{req("DELETE", "/repos/{{.Values.org}}/{{.Captured.repo}}/collaborators/{{.Principal}}")},
			AddToGroup:      []v1alpha1.RESTRequest{req("PUT", "/teams/{{.Group}}/members/{{.Subject}}")},
			RemoveFromGroup: []v1alpha1.RESTRequest{req("DELETE", "/teams/{{.Group}}/members/{{.Subject}}")},
			UpdateContent: []v1alpha1.RESTRequest{{Method: "PATCH", Path: "/repos/{{.Values.org}}/{{.Captured.repo}}/issues/{{.Captured.issue}}",
				Body: `{"body": {{json .Body}}}`}},
			LookupDocument: []v1alpha1.RESTRequest{
				{Method: "GET", Path: "/repos/{{.Values.org}}/{{.DocumentID}}", Capture: map[string]v1alpha1.RESTValue{"repo": "/name"}},
				{Method: "GET", Path: "/repos/{{.Values.org}}/{{.Captured.repo}}/issues", Query: map[string]v1alpha1.RESTValue{"q": "{{.DocumentID}}", "state": "all"},
					Capture: map[string]v1alpha1.RESTValue{"issue": "/0/number"}},
			},
		},
	}
}

// forgeReplies answers a created repository with the requested name and
// an issue with number 7.
func forgeReplies(r *http.Request, _ int) (int, string) {
	switch {
	case r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/repos"):
		return http.StatusCreated, `{"name": "canary-1", "id": 99}`
	case r.Method == "POST":
		return http.StatusCreated, `{"number": 7}`
	case r.Method == "GET" && strings.HasSuffix(r.URL.Path, "/issues"):
		return http.StatusOK, `[{"number": 7}]`
	case r.Method == "GET":
		return http.StatusOK, `{"name": "canary-1"}`
	}
	return http.StatusNoContent, ""
}

// TestOperationsRenderAsDeclared drives every operation and checks what
// the target received: method, path under the base, escaped values,
// query, headers and JSON body, and captures flowing into later requests
// of the same operation and of later operations.
func TestOperationsRenderAsDeclared(t *testing.T) {
	tg := newTarget(t, forgeReplies)
	d := build(t, tg, "/api/v1", giteaLike(), nil)
	ctx := WithRun(context.Background(), "run-1")
	doc := driver.Document{ID: "canary-1", Title: `t "quoted"`, Body: "line1\nline2 </script>"}
	steps := []func() error{
		func() error { return d.CreateDocument(ctx, doc) },
		func() error { return d.Grant(ctx, doc.ID, hostileSubject) },
		func() error { return d.AddMember(ctx, "team 1", hostileSubject) },
		func() error { return d.CreateDocument(ctx, driver.Document{ID: doc.ID, Body: "new"}) }, // UpdateContent
		func() error { return d.RemoveMember(ctx, "team 1", hostileSubject) },
		func() error { return d.Revoke(ctx, doc.ID, hostileSubject) },
		func() error { return d.DeleteDocument(ctx, doc.ID) },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	esc := url.PathEscape(hostileSubject)
	want := []struct{ method, path, body string }{
		{"POST", "/api/v1/orgs/ragcanary/repos", `{"name": "canary-1", "private": true}`},
		{"POST", "/api/v1/repos/ragcanary/canary-1/issues", `{"title": "t \"quoted\"", "body": "line1\nline2 \u003c/script\u003e"}`},
		{"PUT", "/api/v1/repos/ragcanary/canary-1/collaborators/" + esc, `{"permission": "read"}`},
		{"PUT", "/api/v1/teams/team%201/members/" + esc, ""},
		{"PATCH", "/api/v1/repos/ragcanary/canary-1/issues/7", `{"body": "new"}`},
		{"DELETE", "/api/v1/teams/team%201/members/" + esc, ""},
		{"DELETE", "/api/v1/repos/ragcanary/canary-1/collaborators/" + esc, ""},
		{"DELETE", "/api/v1/repos/ragcanary/canary-1", ""},
	}
	got := tg.requests()
	if len(got) != len(want) {
		t.Fatalf("target got %d requests, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Method != w.method || g.Path != w.path || g.Body != w.body {
			t.Errorf("request %d = %s %s %q, want %s %s %q", i, g.Method, g.Path, g.Body, w.method, w.path, w.body)
		}
	}
	if got[2].Header.Get("X-Run") != "run-1" {
		t.Errorf("grant's X-Run header = %q, want the run's name", got[2].Header.Get("X-Run"))
	}
	if ct := got[0].Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	if c := d.Captured(doc.ID); c != nil {
		t.Errorf("captures after DeleteDocument = %v, want forgotten", c)
	}
}

// TestQueryValuesAreEscaped: a query value holding &, = and # stays one
// parameter.
func TestQueryValuesAreEscaped(t *testing.T) {
	tg := newTarget(t, forgeReplies)
	spec := giteaLike()
	d := build(t, tg, "/api/v1", spec, nil)
	d.Restore("x&y=z#w", map[string]string{"repo": "canary-1"})
	if _, err := d.Lookup(context.Background(), "x&y=z#w"); err != nil {
		t.Fatal(err)
	}
	got := tg.requests()
	if len(got) != 2 {
		t.Fatalf("got %d requests, want 2: %+v", len(got), got)
	}
	q, err := url.ParseQuery(got[1].Query)
	if err != nil || q.Get("q") != "x&y=z#w" || q.Get("state") != "all" || len(q) != 2 {
		t.Errorf("query = %q (%v), want q and state only, q intact", got[1].Query, err)
	}
	if got[0].Path != "/api/v1/repos/ragcanary/x&y=z%23w" {
		t.Errorf("lookup path = %q", got[0].Path)
	}
}

// TestPathTraversalValueIsRefused: a value that is exactly ".." would
// walk up; it is refused before anything is sent.
func TestPathTraversalValueIsRefused(t *testing.T) {
	tg := newTarget(t, forgeReplies)
	d := build(t, tg, "/api/v1", giteaLike(), nil)
	d.Restore("canary-1", map[string]string{"repo": "canary-1", createdMark: "true"})
	err := d.Grant(context.Background(), "canary-1", "..")
	if err == nil || !strings.Contains(err.Error(), `".."`) {
		t.Fatalf("Grant as .. = %v, want a refusal naming ..", err)
	}
	// Refused, not rejected by the target: cleanup must not read it as
	// "already gone".
	var refused *Refused
	if !errors.As(err, &refused) || driver.IsPermanent(err) {
		t.Errorf("Grant as .. = %#v, want a Refused that is no Permanent driver error", err)
	}
	if err := d.Revoke(context.Background(), "canary-1", ".."); driver.IsPermanent(err) || err == nil {
		t.Errorf("Revoke as .. = %v, which cleanup's ignorePermanent would take for already gone", err)
	}
	if n := len(tg.requests()); n != 0 {
		t.Errorf("target got %d requests, want none", n)
	}
}

// TestCapturesRestoreAcrossDrivers: what one driver captured and a
// caller persisted lets a rebuilt driver delete the document; without it
// the delete fails naming the missing value and sends nothing.
func TestCapturesRestoreAcrossDrivers(t *testing.T) {
	tg := newTarget(t, forgeReplies)
	first := build(t, tg, "/api/v1", giteaLike(), nil)
	if err := first.CreateDocument(context.Background(), driver.Document{ID: "canary-1"}); err != nil {
		t.Fatal(err)
	}
	kept := first.Captured("canary-1")
	if kept["repo"] != "canary-1" || kept["issue"] != "7" {
		t.Fatalf("captured = %v", kept)
	}
	second := build(t, tg, "/api/v1", giteaLike(), nil)
	before := len(tg.requests())
	err := second.DeleteDocument(context.Background(), "canary-1")
	var missing *MissingCapture
	if !errors.As(err, &missing) || missing.Name != "repo" || missing.Operation != opDelete || !strings.Contains(err.Error(), `"repo"`) {
		t.Fatalf("delete without captures = %v, want MissingCapture naming repo", err)
	}
	if driver.IsPermanent(err) {
		t.Error("a missing capture reads as Permanent, which cleanup would take for already gone")
	}
	if len(tg.requests()) != before {
		t.Error("a request was sent without its captured value")
	}
	second.Restore("canary-1", kept)
	if err := second.DeleteDocument(context.Background(), "canary-1"); err != nil {
		t.Fatal(err)
	}
	if got := tg.requests(); got[len(got)-1].Path != "/api/v1/repos/ragcanary/canary-1" {
		t.Errorf("delete path = %q", got[len(got)-1].Path)
	}
}

// TestCapturePointerMissIsNamed: a pointer naming nothing, an object or
// null is an error naming the operation, the request and the pointer.
func TestCapturePointerMissIsNamed(t *testing.T) {
	for _, tc := range []struct{ reply, want string }{
		{`{"other": 1}`, "names nothing"},
		{`{"name": {"a": 1}}`, "object or an array"},
		{`{"name": null}`, "null"},
		{`not json`, "not JSON"},
	} {
		tg := newTarget(t, func(*http.Request, int) (int, string) { return http.StatusCreated, tc.reply })
		d := build(t, tg, "/api/v1", giteaLike(), nil)
		err := d.CreateDocument(context.Background(), driver.Document{ID: "canary-1"})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("reply %s: err = %v, want %q", tc.reply, err, tc.want)
			continue
		}
		if tc.reply != "not json" && !strings.Contains(err.Error(), `operations.createDocument[0].capture["repo"]: pointer "/name"`) {
			t.Errorf("reply %s: err = %v, want it to name the operation, request and pointer", tc.reply, err)
		}
	}
}

// TestHostileCapturesNeverLeaveTheBasePath: whatever a target returns as
// a captured value, every request stays under the base path, and values
// no path or header can carry are refused at capture.
func TestHostileCapturesNeverLeaveTheBasePath(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		refused     bool
	}{
		{"traversal", "../../admin", false},
		{"dot dot", "..", true},
		{"query", "x?y", false},
		{"fragment", "x#y", false},
		{"percent", "%2e%2e", false},
		{"backslash", `..\..\admin`, false},
		{"scheme", "http://evil.example/", false},
		{"10 KB", strings.Repeat("a", 10<<10), true},
		{"newline", "a\nb", true},
		{"escape", "a\x1bb", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := newTarget(t, func(r *http.Request, n int) (int, string) {
				if n == 0 {
					return http.StatusCreated, mustJSON(map[string]string{"name": tc.value})
				}
				return http.StatusCreated, `{"number": 1}`
			})
			d := build(t, tg, "/api/v1", giteaLike(), nil)
			err := d.CreateDocument(context.Background(), driver.Document{ID: "c"})
			if err == nil {
				err = d.DeleteDocument(context.Background(), "c")
			}
			if tc.refused && err == nil {
				t.Fatal("a value no request may carry was accepted")
			}
			if strings.Contains(errText(err), tc.value) && len(tc.value) > 2 {
				t.Errorf("the error quotes the target's value: %v", err)
			}
			for _, g := range tg.requests() {
				if !staysUnder(g.Path, "/api/v1/") {
					t.Errorf("request left the base path: %s %s", g.Method, g.Path)
				}
				if g.Query != "" {
					t.Errorf("a captured value became a query: %q", g.Query)
				}
			}
		})
	}
}

// staysUnder reports whether an escaped path starts with prefix and, even
// decoded (%2F as "/", "\\" as "/"), walks up nowhere.
func staysUnder(path, prefix string) bool {
	if !strings.HasPrefix(path, prefix) {
		return false
	}
	plain, err := url.PathUnescape(path)
	if err != nil {
		return false
	}
	for _, el := range strings.FieldsFunc(plain, func(r rune) bool { return r == '/' || r == '\\' }) {
		if el == ".." || el == "." {
			return false
		}
	}
	return !strings.Contains(plain, "://")
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestRedirectIsNotFollowed: a 302 is an error naming it; the target it
// points to never sees a request.
func TestRedirectIsNotFollowed(t *testing.T) {
	elsewhere := newTarget(t, nil)
	tg := newTarget(t, func(r *http.Request, _ int) (int, string) { return http.StatusFound, "" })
	tg.Config.Handler = redirectTo(elsewhere.URL+"/steal", tg.Config.Handler)
	d := build(t, tg, "/api/v1", minimal(), &Auth{Type: v1alpha1.RESTAuthBearer, Secret: []byte("source-secret-123")})
	err := d.CreateDocument(context.Background(), driver.Document{ID: "c"})
	if err == nil || !strings.Contains(err.Error(), "status 302") {
		t.Fatalf("err = %v, want one naming status 302", err)
	}
	if n := len(elsewhere.requests()); n != 0 {
		t.Errorf("the redirect target got %d requests", n)
	}
}

func redirectTo(to string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", to)
		next.ServeHTTP(w, r)
	})
}

// TestHugeReplyIsCut: a reply past the bound fails as too large, also
// when the reply is captured from.
func TestHugeReplyIsCut(t *testing.T) {
	huge := `{"name": "` + strings.Repeat("x", 2<<20) + `"}`
	tg := newTarget(t, func(*http.Request, int) (int, string) { return http.StatusCreated, huge })
	d := build(t, tg, "/api/v1", giteaLike(), nil)
	err := d.CreateDocument(context.Background(), driver.Document{ID: "c"})
	if err == nil || !strings.Contains(err.Error(), "too large") || !driver.IsTransient(err) {
		t.Fatalf("err = %v, want a transient reply too large", err)
	}
}

// TestUnexpectedStatusIsAnErrorNamingIt: a status outside expect is an
// error naming the status and the request, never a success.
func TestUnexpectedStatusIsAnErrorNamingIt(t *testing.T) {
	tg := newTarget(t, func(*http.Request, int) (int, string) { return http.StatusOK, `{"name": "c"}` })
	d := build(t, tg, "/api/v1", giteaLike(), nil) // createDocument[0] expects 201
	err := d.CreateDocument(context.Background(), driver.Document{ID: "c"})
	if err == nil || !strings.Contains(err.Error(), "status 200") || !strings.Contains(err.Error(), "request 0 (POST)") {
		t.Fatalf("err = %v, want one naming status 200 and request 0", err)
	}
	if d.Captured("c") != nil {
		t.Error("a refused reply was captured from")
	}
}

// TestNotFoundOnRevokeIsPermanent: a 404 on revoke, removeFromGroup or
// delete is Permanent "not found", which cleanup reads as already gone.
func TestNotFoundOnRevokeIsPermanent(t *testing.T) {
	tg := newTarget(t, func(*http.Request, int) (int, string) { return http.StatusNotFound, `{}` })
	d := build(t, tg, "/api/v1", giteaLike(), nil)
	d.Restore("c", map[string]string{"repo": "c"})
	for name, err := range map[string]error{
		"revoke": d.Revoke(context.Background(), "c", "alice"),
		"remove": d.RemoveMember(context.Background(), "g", "alice"),
		"delete": d.DeleteDocument(context.Background(), "c"),
	} {
		if !revocation.IsNotFound(err) {
			t.Errorf("%s on 404 = %v, want Permanent not found", name, err)
		}
	}
}

// TestLookup: found captures what createDocument would; a 404 is not
// found; a 500 is an error, never not found.
func TestLookup(t *testing.T) {
	tg := newTarget(t, forgeReplies)
	d := build(t, tg, "/api/v1", giteaLike(), nil)
	found, err := d.Lookup(context.Background(), "canary-1")
	if err != nil || !found || d.Captured("canary-1")["issue"] != "7" || d.Captured("canary-1")["repo"] != "canary-1" {
		t.Fatalf("Lookup = %v, %v, captured %v", found, err, d.Captured("canary-1"))
	}
	for status, wantErr := range map[int]bool{http.StatusNotFound: false, http.StatusInternalServerError: true} {
		tg := newTarget(t, func(*http.Request, int) (int, string) { return status, `{}` })
		d := build(t, tg, "/api/v1", giteaLike(), nil)
		found, err := d.Lookup(context.Background(), "canary-1")
		if found || (err != nil) != wantErr {
			t.Errorf("status %d: Lookup = %v, %v; want not found and error %v", status, found, err, wantErr)
		}
	}
}

// fullBudget has room for nothing.
type fullBudget struct{}

func (fullBudget) TryAcquire(int64) bool { return false }
func (fullBudget) Release(int64)         {}

// TestReplyBudgetBoundsReplies: a reply finding the corpus's reply budget
// full fails as such, transient, and nothing is captured.
func TestReplyBudgetBoundsReplies(t *testing.T) {
	tg := newTarget(t, forgeReplies)
	spec := giteaLike()
	spec.URL = tg.URL + "/api/v1"
	drv, err := New(Config{Spec: spec, BaseURL: spec.URL, HTTPClient: tg.Client(), ReplyBudget: fullBudget{}})
	if err != nil {
		t.Fatal(err)
	}
	d := Unwrap(drv)
	err = d.CreateDocument(context.Background(), driver.Document{ID: "c"})
	if err == nil || !strings.Contains(err.Error(), "reply budget exhausted") || !driver.IsTransient(err) {
		t.Fatalf("err = %v, want a transient reply budget exhausted", err)
	}
	if d.Captured("c") != nil {
		t.Error("a reply cut by the budget was captured from")
	}
}
