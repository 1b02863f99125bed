package conformance_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/conformance"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/forgetest"
	"github.com/ragcanary/ragcanary/internal/driver/rest"
)

const (
	revokeRoute  = "DELETE /api/v1/repos/{org}/{repo}/collaborators/{user}"
	getRepoRoute = "GET /api/v1/repos/{org}/{repo}"
)

// runREST checks the forge Corpus, edited by edit, as alice in team
// "readers".
func runREST(t *testing.T, f *forgetest.Forge, edit func(string) string) conformance.Report {
	t.Helper()
	var corpus v1alpha1.Corpus
	if err := yaml.UnmarshalStrict([]byte(edit(forgetest.CorpusYAML(f.URL))), &corpus); err != nil {
		t.Fatal(err)
	}
	spec := corpus.Spec.Driver.REST
	src, err := rest.New(rest.Config{Spec: spec, BaseURL: spec.URL, Timeout: 2 * time.Second, HTTPClient: &http.Client{},
		Auth: &rest.Auth{Type: v1alpha1.RESTAuthBearer, Scheme: "token", Secret: []byte(forgetest.Token)}})
	if err != nil {
		t.Fatal(err)
	}
	return conformance.RunREST(context.Background(), conformance.RESTConfig{Source: src, Subject: "alice", Group: "readers",
		Timeout: time.Second, PollInterval: 10 * time.Millisecond})
}

func unchanged(s string) string { return s }

func result(t *testing.T, r conformance.Report, name string) conformance.Result {
	t.Helper()
	i := slices.IndexFunc(r.Results, func(res conformance.Result) bool { return res.Name == name })
	if i < 0 {
		t.Fatalf("no %s check in %+v", name, r.Results)
	}
	return r.Results[i]
}

func TestRESTEveryDeclaredOperationPasses(t *testing.T) {
	f := forgetest.Start(t, "readers")
	r := runREST(t, f, unchanged)
	if !r.Passed() {
		t.Fatalf("failed: %v\n%+v", r.Failed(), r.Results)
	}
	for _, name := range append(rest.Operations(), conformance.CheckCapabilities, conformance.CheckLookupUnknown, conformance.CheckLookupDeleted) {
		if res := result(t, r, name); res.Status != conformance.Pass {
			t.Errorf("%s: %s %s, want PASS", name, res.Status, res.Detail)
		}
	}
	if got := result(t, r, conformance.CheckCapabilities).Detail; got != "revocation methods: RemoveGrant, RemoveFromGroup, DeleteDocument, UpdateContent" {
		t.Errorf("capabilities detail %q", got)
	}
	if slices.ContainsFunc(r.Results, func(res conformance.Result) bool { return res.Name == conformance.CheckCleanup }) {
		t.Errorf("a passing run reports a cleanup: %+v", r.Results)
	}
	if repos, members := f.Repos(), f.Members("readers"); len(repos) != 0 || len(members) != 0 {
		t.Errorf("left behind: repos %v, team members %v", repos, members)
	}
	// The update went to the issue createDocument made, not a new one.
	if calls := f.Calls(); !slices.Contains(calls, "PATCH /api/v1/repos/{org}/{repo}/issues/{number}") {
		t.Errorf("updateContent was not sent: %v", calls)
	}
}

func TestRESTBrokenCapturePointerNamesItAndCleansUp(t *testing.T) {
	f := forgetest.Start(t, "readers")
	r := runREST(t, f, func(s string) string {
		return strings.Replace(s, "capture: {issue: /number}", "capture: {issue: /nmber}", 1)
	})
	if r.Passed() {
		t.Fatalf("passed with a broken pointer: %+v", r.Results)
	}
	create := result(t, r, rest.OpCreateDocument)
	if create.Status != conformance.Fail || !strings.Contains(create.Detail, `operations.createDocument[1].capture["issue"]: pointer "/nmber" names nothing in the reply`) {
		t.Errorf("createDocument: %s %q", create.Status, create.Detail)
	}
	if res := result(t, r, rest.OpGrant); res.Status != conformance.Skip {
		t.Errorf("grant ran after a failed create: %+v", res)
	}
	cleanup := result(t, r, conformance.CheckCleanup)
	if cleanup.Status != conformance.Pass || !strings.Contains(cleanup.Detail, "found with lookupDocument") {
		t.Errorf("cleanup: %s %q", cleanup.Status, cleanup.Detail)
	}
	if repos := f.Repos(); len(repos) != 0 {
		t.Errorf("the repository createDocument made is left: %v", repos)
	}
}

func TestRESTLostCaptureWithoutLookupSaysWhatRemains(t *testing.T) {
	f := forgetest.Start(t, "readers")
	r := runREST(t, f, func(s string) string {
		s = strings.Replace(s, "capture: {issue: /number}", "capture: {issue: /nmber}", 1)
		start, end := strings.Index(s, "        lookupDocument:"), strings.Index(s, "        updateContent:")
		return s[:start] + s[end:]
	})
	repos := f.Repos()
	if len(repos) != 1 {
		t.Fatalf("want the one repository the broken create made (nothing can find it), got %v", repos)
	}
	cleanup := result(t, r, conformance.CheckCleanup)
	if cleanup.Status != conformance.Fail || !strings.Contains(cleanup.Detail, "may remain at the source: the test document \""+strings.TrimPrefix(repos[0], "ragcanary/")+"\"") ||
		!strings.Contains(cleanup.Detail, "declare lookupDocument") {
		t.Errorf("cleanup: %s %q", cleanup.Status, cleanup.Detail)
	}
	if res := result(t, r, rest.OpLookupDocument); res.Status != conformance.Skip || res.Detail != "not declared" {
		t.Errorf("lookupDocument: %+v", res)
	}
}

func TestRESTRevokeFailureNamesRevoke(t *testing.T) {
	f := forgetest.Start(t, "readers")
	f.Fail(revokeRoute)
	r := runREST(t, f, unchanged)
	revoke := result(t, r, rest.OpRevoke)
	if revoke.Status != conformance.Fail || !strings.Contains(revoke.Detail, "driver Revoke: transient (status 500): request 0 (DELETE)") {
		t.Errorf("revoke: %s %q", revoke.Status, revoke.Detail)
	}
	if !slices.Equal(r.Failed(), []string{rest.OpRevoke, conformance.CheckCleanup}) {
		t.Errorf("failed checks %v, want revoke and cleanup", r.Failed())
	}
	// Cleanup tried the revoke again and says the grant may remain; the
	// document itself was deleted.
	if cleanup := result(t, r, conformance.CheckCleanup); !strings.Contains(cleanup.Detail, `may remain at the source: the grant to "alice"`) {
		t.Errorf("cleanup: %q", cleanup.Detail)
	}
	if n := strings.Count(strings.Join(f.Calls(), "\n"), revokeRoute); n != 2 {
		t.Errorf("revoke sent %d times, want the check's and cleanup's", n)
	}
	if repos := f.Repos(); len(repos) != 0 {
		t.Errorf("left behind: %v", repos)
	}
}

func TestRESTLookupErrorIsNeverNotFound(t *testing.T) {
	f := forgetest.Start(t, "readers")
	f.Fail(getRepoRoute)
	r := runREST(t, f, unchanged)
	for _, name := range []string{rest.OpLookupDocument, conformance.CheckLookupUnknown, conformance.CheckLookupDeleted} {
		if res := result(t, r, name); res.Status != conformance.Fail || !strings.Contains(res.Detail, "status 500") {
			t.Errorf("%s: %s %q, want a failure quoting the 500", name, res.Status, res.Detail)
		}
	}
}

func TestRESTUndeclaredOperationsAreListed(t *testing.T) {
	f := forgetest.Start(t, "readers")
	r := runREST(t, f, func(s string) string {
		start, end := strings.Index(s, "        lookupDocument:"), strings.Index(s, "        deleteDocument:")
		s = s[:start] + s[end:]
		start, end = strings.Index(s, "        grantGroup:"), strings.Index(s, "  surfaces:")
		return s[:start] + s[end:]
	})
	if !r.Passed() {
		t.Fatalf("failed: %+v", r.Results)
	}
	for _, name := range []string{rest.OpLookupDocument, rest.OpUpdateContent, rest.OpGrantGroup, rest.OpRevokeGroup, rest.OpAddToGroup, rest.OpRemoveFromGroup} {
		if res := result(t, r, name); res.Status != conformance.Skip || res.Detail != "not declared" {
			t.Errorf("%s: %+v, want SKIP not declared", name, res)
		}
	}
	if got := result(t, r, conformance.CheckCapabilities).Detail; got != "revocation methods: RemoveGrant, DeleteDocument" {
		t.Errorf("capabilities detail %q", got)
	}
}

func TestRESTLookupCapturingOtherValuesFails(t *testing.T) {
	f := forgetest.Start(t, "readers")
	r := runREST(t, f, func(s string) string {
		return strings.Replace(s, "capture: {issue: /0/number}", "capture: {issue: /0/title}", 1)
	})
	lookup := result(t, r, rest.OpLookupDocument)
	if lookup.Status != conformance.Fail || !strings.Contains(lookup.Detail, `captured "issue" differently from createDocument`) {
		t.Errorf("lookupDocument: %s %q", lookup.Status, lookup.Detail)
	}
	// The later operations use what createDocument captured.
	if res := result(t, r, rest.OpUpdateContent); res.Status != conformance.Pass {
		t.Errorf("updateContent: %+v", res)
	}
	if repos := f.Repos(); len(repos) != 0 {
		t.Errorf("left behind: %v", repos)
	}
}

func TestRESTWithoutARevocationMethodFails(t *testing.T) {
	f := forgetest.Start(t)
	r := runREST(t, f, func(s string) string {
		start, end := strings.Index(s, "        lookupDocument:"), strings.Index(s, "        deleteDocument:")
		s = s[:start] + s[end:]
		start, end = strings.Index(s, "        grant:"), strings.Index(s, "  surfaces:")
		return s[:start] + s[end:]
	})
	if res := result(t, r, conformance.CheckCapabilities); res.Status != conformance.Fail || !strings.Contains(res.Detail, "no revocation method") {
		t.Errorf("capabilities: %+v", res)
	}
	if res := result(t, r, rest.OpDeleteDocument); res.Status != conformance.Pass {
		t.Errorf("deleteDocument: %+v", res)
	}
}
