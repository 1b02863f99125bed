package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ragcanary/ragcanary/internal/dev/testutil/giteatest"
)

// giteaDocsCorpus is the Gitea Corpus of docs/plant-where-content-lives.md,
// its address pointed at url.
func giteaDocsCorpus(t *testing.T, url string) string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/plant-where-content-lives.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Gitea")
	_, block, ok2 := strings.Cut(section, "```yaml\n")
	yaml, _, ok3 := strings.Cut(block, "```\n")
	if !ok || !ok2 || !ok3 || !strings.Contains(yaml, "http://gitea.example:3000") {
		t.Fatal("no Gitea Corpus with http://gitea.example:3000 under the Gitea heading of docs/plant-where-content-lives.md")
	}
	return strings.ReplaceAll(yaml, "http://gitea.example:3000", url)
}

// TestConformanceRESTAgainstRealGitea checks the docs' Gitea Corpus,
// unchanged but for its address, against a real Gitea: every declared
// operation passes, and nothing the check made is left.
func TestConformanceRESTAgainstRealGitea(t *testing.T) {
	s := giteatest.Start(t)
	s.CreateOrg(t, "ragcanary")
	persona := s.CreateUser(t, "persona")
	const team = "rc-conformance-readers"
	teamID := s.CreateTeam(t, "ragcanary", team)
	t.Setenv("CONF_SOURCE", s.Admin.Token)
	run := func(corpus string) (int, string, string) {
		path := filepath.Join(t.TempDir(), "corpus.yaml")
		if err := os.WriteFile(path, []byte(corpus), 0o600); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		code := dispatch([]string{"conformance", "--corpus", path, "--source-token-env", "CONF_SOURCE",
			"--persona-principal", persona.Name, "--group", team, "--timeout", "30s", "--poll-interval", "50ms"}, &stdout, &stderr)
		t.Logf("exit %d, stdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
		return code, stdout.String(), stderr.String()
	}
	docs := giteaDocsCorpus(t, s.URL)
	broken := strings.Replace(docs, "capture: {issue: /number}", "capture: {issue: /nmber}", 1)
	code, out, _ := run(broken)
	if code != exitFailed || !strings.Contains(out, `FAIL createDocument: driver CreateDocument: transient (status 201): operations.createDocument[1].capture["issue"]: pointer "/nmber" names nothing in the reply`) ||
		!strings.Contains(out, "PASS cleanup: removed what the failed checks left: the test document") {
		t.Errorf("a broken pointer: exit %d, want 1 naming createDocument's pointer and a cleanup that removed the repository", code)
	}
	code, out, errOut := run(docs)
	if code != exitOK {
		t.Fatalf("exit %d, want 0\nstderr:\n%s", code, errOut)
	}
	for _, op := range []string{"createDocument", "lookupDocument", "lookupDocument-unknown", "grant", "revoke", "grantGroup",
		"revokeGroup", "addToGroup", "removeFromGroup", "updateContent", "deleteDocument", "lookupDocument-deleted"} {
		if !strings.Contains(out, "PASS "+op+"\n") && !strings.Contains(out, "PASS "+op+":") {
			t.Errorf("%s did not pass", op)
		}
	}
	if strings.Contains(out+errOut, s.Admin.Token) {
		t.Error("output leaks the admin token")
	}
	var repos, members []json.RawMessage
	if err := json.Unmarshal(s.MustAPI(t, http.MethodGet, "/orgs/ragcanary/repos", s.Admin.Token, nil, http.StatusOK), &repos); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(s.MustAPI(t, http.MethodGet, "/teams/"+strconv.FormatInt(teamID, 10)+"/members", s.Admin.Token, nil, http.StatusOK), &members); err != nil {
		t.Fatal(err)
	}
	if len(repos) != 0 || len(members) != 0 {
		t.Errorf("left behind: %d repositories, %d team members", len(repos), len(members))
	}
}
