package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragcanary/ragcanary/internal/dev/testutil/forgetest"
)

// personaYAML puts alice in the forge's "readers" team.
const personaYAML = `---
apiVersion: ragcanary.dev/v1alpha1
kind: Persona
metadata:
  name: alice
spec:
  subject: alice
  groups: [readers]
  credentialSecretRef: {name: alice, key: token}
`

// runRESTConformance runs `ragcanary conformance --corpus` against the
// forge with its Corpus edited by edit, the admin token in CONF_SOURCE.
func runRESTConformanceAgainst(t *testing.T, f *forgetest.Forge, edit func(string) string, extra ...string) (int, string, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "corpus.yaml")
	if err := os.WriteFile(path, []byte(edit(forgetest.CorpusYAML(f.URL))+personaYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CONF_SOURCE", forgetest.Token)
	args := append([]string{"conformance", "--corpus", path, "--source-token-env", "CONF_SOURCE",
		"--persona-principal", "alice", "--timeout", "2s", "--poll-interval", "10ms"}, extra...)
	var stdout, stderr bytes.Buffer
	code := dispatch(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestConformanceRESTPassesEveryDeclaredOperation(t *testing.T) {
	f := forgetest.Start(t, "readers")
	code, out, errOut := runRESTConformanceAgainst(t, f, func(s string) string { return s })
	if code != exitOK {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	t.Logf("stdout:\n%s", out)
	for _, line := range []string{
		"PASS capabilities: revocation methods: RemoveGrant, RemoveFromGroup, DeleteDocument, UpdateContent",
		"PASS createDocument: captured issue, repo",
		"PASS lookupDocument: found the document with the values createDocument captured",
		"PASS lookupDocument-unknown", "PASS grant", "PASS revoke", "PASS grantGroup", "PASS revokeGroup",
		"PASS addToGroup", "PASS removeFromGroup", "PASS updateContent", "PASS deleteDocument", "PASS lookupDocument-deleted",
	} {
		if !strings.Contains(out, line+"\n") && !strings.Contains(out, line+":") {
			t.Errorf("report lacks %q", line)
		}
	}
	if strings.Contains(out+errOut, forgetest.Token) {
		t.Error("output leaks the source token")
	}
	if repos, members := f.Repos(), f.Members("readers"); len(repos) != 0 || len(members) != 0 {
		t.Errorf("left behind: repos %v, members %v", repos, members)
	}
}

func TestConformanceRESTBrokenCapturePointer(t *testing.T) {
	f := forgetest.Start(t, "readers")
	code, out, errOut := runRESTConformanceAgainst(t, f, func(s string) string {
		return strings.Replace(s, "capture: {issue: /number}", "capture: {issue: /nmber}", 1)
	})
	t.Logf("stdout:\n%s\nstderr:\n%s", out, errOut)
	if code != exitFailed {
		t.Fatalf("exit %d, want 1", code)
	}
	want := `FAIL createDocument: driver CreateDocument: transient (status 201): operations.createDocument[1].capture["issue"]: pointer "/nmber" names nothing in the reply`
	if !strings.Contains(out, want+"\n") {
		t.Errorf("report lacks %q", want)
	}
	if !strings.Contains(errOut, "failed checks: createDocument\n") {
		t.Errorf("stderr does not name createDocument alone: %q", errOut)
	}
	if !strings.Contains(out, "PASS cleanup: removed what the failed checks left: the test document") {
		t.Error("report lacks the cleanup line")
	}
	if repos := f.Repos(); len(repos) != 0 {
		t.Errorf("the repository the broken create made is left: %v", repos)
	}
}

func TestConformanceRESTRevokeAnswering500(t *testing.T) {
	f := forgetest.Start(t, "readers")
	f.Fail("DELETE /api/v1/repos/{org}/{repo}/collaborators/{user}")
	code, out, errOut := runRESTConformanceAgainst(t, f, func(s string) string { return s })
	if code != exitFailed {
		t.Fatalf("exit %d, want 1\nstdout:\n%s", code, out)
	}
	if !strings.Contains(out, "FAIL revoke: driver Revoke: transient (status 500): request 0 (DELETE)") || !strings.Contains(errOut, "failed checks: revoke, cleanup") {
		t.Errorf("the failure does not name revoke:\nstdout:\n%s\nstderr:\n%s", out, errOut)
	}
	if repos := f.Repos(); len(repos) != 0 {
		t.Errorf("left behind: %v", repos)
	}
}

func TestConformanceRESTBadArguments(t *testing.T) {
	f := forgetest.Start(t)
	for name, c := range map[string]struct {
		edit  func(string) string
		extra []string
		want  string
	}{
		"with --url":          {func(s string) string { return s }, []string{"--url", f.URL}, "--corpus checks a REST source"},
		"not a REST corpus":   {func(s string) string { return strings.Replace(s, "type: REST", "type: HTTP", 1) }, nil, `has driver type "HTTP"`},
		"no credential":       {func(s string) string { return s }, []string{"--source-token-env", "CONF_UNSET"}, "RAGCANARY_SECRET_FORGE_ADMIN_TOKEN nor in a Secret manifest in the given files, and $CONF_UNSET is not set"},
		"URL not allowed":     {func(s string) string { return s }, []string{"--allowed-target-urls", "http://elsewhere.example/"}, "URLNotAllowed"},
		"unknown Values name": {func(s string) string { return strings.Replace(s, "{{.Values.org}}/repos", "{{.Values.orgg}}/repos", 1) }, nil, `reads .Values.orgg`},
	} {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runRESTConformanceAgainst(t, f, c.edit, c.extra...)
			if code != exitInvalid || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q\nstdout:\n%s", code, errOut, c.want, out)
			}
			if len(f.Calls()) != 0 {
				t.Errorf("sent requests: %v", f.Calls())
			}
		})
	}
}

// TestConformanceRESTDocsGiteaCorpusAgainstForge runs the docs' Gitea
// Corpus, pointed at the forge, through every check.
func TestConformanceRESTDocsGiteaCorpusAgainstForge(t *testing.T) {
	f := forgetest.Start(t, "readers")
	docs := giteaDocsCorpus(t, strings.TrimSuffix(f.URL, "/api/v1"))
	code, out, errOut := runRESTConformanceAgainst(t, f, func(string) string { return docs })
	if code != exitOK || strings.Count(out, "PASS ") != 13 {
		t.Fatalf("exit %d, want 0 and 13 passed checks\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if repos := f.Repos(); len(repos) != 0 {
		t.Errorf("left behind: %v", repos)
	}
}
