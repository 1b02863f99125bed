package controllers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/yaml"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/giteatest"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
)

// The Gitea tests plant canaries in a real application none of us wrote,
// through the Corpus YAML of docs/plant-where-content-lives.md (only its
// address changed), and probe Gitea's own permission-aware issue search as
// the persona. An observer of the test's own, polling the same search as
// the persona far more often than the run probes, sees when the issue
// really disappeared: the run's bounds must contain that instant.

const (
	giteaOrg     = "ragcanary"
	giteaTeam    = "canary-readers"
	giteaDocsURL = "http://gitea.example:3000"
	// giteaWait bounds a whole run: Gitea indexes a new issue within a
	// few seconds, revocations are read at query time.
	giteaWait = 2 * time.Minute
)

// giteaFixture is one Gitea with the organisation, the team and the two
// users every method's run shares.
type giteaFixture struct {
	srv            *giteatest.Server
	alice, mallory giteatest.User
	team           int64
}

func startGitea(t *testing.T) *giteaFixture {
	t.Helper()
	s := giteatest.Start(t)
	s.CreateOrg(t, giteaOrg)
	return &giteaFixture{srv: s, alice: s.CreateUser(t, "alice"), mallory: s.CreateUser(t, "mallory"),
		team: s.CreateTeam(t, giteaOrg, giteaTeam)}
}

// giteaDocsCorpus is the Gitea Corpus of the docs page, addressed at srv.
func giteaDocsCorpus(t *testing.T, baseURL string) *v1alpha1.Corpus {
	t.Helper()
	page, err := os.ReadFile("../docs/plant-where-content-lives.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(page), "\n## Gitea:")
	if !ok {
		t.Fatal("docs/plant-where-content-lives.md has no Gitea section")
	}
	_, block, ok := strings.Cut(section, "```yaml\n")
	if !ok {
		t.Fatal("the Gitea section has no yaml block")
	}
	block, _, _ = strings.Cut(block, "```")
	if strings.Count(block, giteaDocsURL) != 2 {
		t.Fatalf("the Gitea Corpus names %s %d times, want 2 (source and search)", giteaDocsURL, strings.Count(block, giteaDocsURL))
	}
	var c v1alpha1.Corpus
	if err := yaml.UnmarshalStrict([]byte(strings.ReplaceAll(block, giteaDocsURL, baseURL)), &c); err != nil {
		t.Fatalf("decoding the docs' Gitea Corpus: %v", err)
	}
	return &c
}

// giteaNamespace applies the docs' Corpus, the credential Secrets and the
// two personas in a new namespace.
func (g *giteaFixture) giteaNamespace(t *testing.T) string {
	t.Helper()
	ns := newNamespace(t)
	for name, token := range map[string]string{"gitea-admin": g.srv.Admin.Token, "alice-cred": g.alice.Token, "mallory-cred": g.mallory.Token} {
		createSecret(t, ns, name, "token", token)
	}
	c := giteaDocsCorpus(t, g.srv.URL)
	c.Namespace = ns
	crCreate(t, c)
	for _, u := range []giteatest.User{g.alice, g.mallory} {
		crCreate(t, objects.Persona(ns, u.Name, u.Name))
	}
	return ns
}

// giteaRun is a run on the docs' Gitea corpus revoking by method (the
// team's membership for RemoveFromGroup), probing every 300ms.
func giteaRun(ns string, method v1alpha1.RevocationMethod) *v1alpha1.CanaryRun {
	group := ""
	if method == v1alpha1.RevokeRemoveFromGroup {
		group = giteaTeam
	}
	return objects.CanaryRun(ns, "run", objects.OnCorpus("gitea"), objects.Revoke(method, group),
		objects.Every(300*time.Millisecond, 2), objects.Timeouts(60*time.Second, 30*time.Second))
}

// TestGiteaCanaryMethods: for RemoveGrant (collaborator), RemoveFromGroup
// (team membership) and DeleteDocument, a canary planted as an issue in a
// private repository made per run reaches SLOMet on Gitea's issue search;
// the control persona, never granted, saw nothing; the bounds contain the
// instant the observer saw the issue disappear; nothing the run made is
// left in Gitea.
func TestGiteaCanaryMethods(t *testing.T) {
	g := startGitea(t)
	for _, method := range []v1alpha1.RevocationMethod{v1alpha1.RevokeRemoveGrant, v1alpha1.RevokeRemoveFromGroup, v1alpha1.RevokeDeleteDocument, v1alpha1.RevokeUpdateContent} {
		t.Run(string(method), func(t *testing.T) {
			t.Parallel()
			ns := g.giteaNamespace(t)
			run := giteaRun(ns, method)
			crCreate(t, run)
			obs := g.observe(t, run)
			got := giteaWaitDone(t, run)
			seen, gone := obs.stop(t)
			if got.Status.Verdict != v1alpha1.VerdictSLOMet {
				t.Fatalf("verdict %s (%s), want SLOMet", got.Status.Verdict, got.Status.Message)
			}
			m := crSurface(t, got, v1alpha1.SurfaceSearch)
			if !m.Excluded || m.Bounds == nil || m.Bounds.Lower == nil || m.Bounds.Upper == nil {
				t.Fatalf("search not excluded with both bounds: %+v", m)
			}
			req, ack := got.Status.RevokeRequestedTime.Time, got.Status.RevokeAcknowledgedTime.Time
			lower, upper := m.Bounds.Lower.Duration, m.Bounds.Upper.Duration
			t.Logf("%s: observer last saw the issue %s after the request and first missed it by %s; measured [%s, %s]; visible after %s; probes %+v",
				method, seen.Sub(req), gone.Sub(req), lower, upper, got.Status.TimeToVisibility.Duration, m.Probes)
			// A lower bound of 0 is floored: it says exclusion came no later
			// than the acknowledgement, which Gitea sends after the change
			// took effect (a repository is gone before its DELETE returns).
			if (lower > 0 && ack.Add(lower).After(gone)) || req.Add(upper).Before(seen) {
				t.Errorf("measured [%s, %s] does not contain the observed disappearance between %s and %s after the request",
					lower, upper, seen.Sub(req), gone.Sub(req))
			}
			if m.Probes.Errors != 0 {
				t.Errorf("probes %+v, want no errors", m.Probes)
			}
			assertControlAnswered(t, got, v1alpha1.SurfaceSearch)
			if got.Status.IsolationViolations != 0 {
				t.Errorf("control persona saw the canary %d times", got.Status.IsolationViolations)
			}
			g.assertNothingLeft(t, got)
		})
	}
}

// giteaWaitDone waits, longer than envtest's usual bound, for the run to
// finish and release its finalizer.
func giteaWaitDone(t *testing.T, run *v1alpha1.CanaryRun) *v1alpha1.CanaryRun {
	t.Helper()
	var got *v1alpha1.CanaryRun
	testutil.Eventually(t, giteaWait, "gitea run finished", func() error {
		got = crGet(t, run)
		if !isTerminal(got.Status.Phase) || controllerutil.ContainsFinalizer(got, v1alpha1.FinalizerCanaryRun) {
			return fmt.Errorf("phase %q (%s)", got.Status.Phase, got.Status.Message)
		}
		return nil
	})
	return got
}

// assertNothingLeft: no repository of the run, no collaborator, no team
// membership or team repository remains in Gitea.
func (g *giteaFixture) assertNothingLeft(t *testing.T, run *v1alpha1.CanaryRun) {
	t.Helper()
	if run.Status.DocumentID == "" {
		t.Fatal("the run names no document")
	}
	if len(run.Status.SourceCaptures) != 0 {
		t.Errorf("captures %v remain after cleanup", run.Status.SourceCaptures)
	}
	status, _, err := g.srv.API(http.MethodGet, "/repos/"+giteaOrg+"/"+url.PathEscape(run.Status.DocumentID), g.srv.Admin.Token, nil)
	if err != nil || status != http.StatusNotFound {
		t.Errorf("repository %s after cleanup: status %d, err %v; want 404", run.Status.DocumentID, status, err)
	}
	status, _, err = g.srv.API(http.MethodGet, fmt.Sprintf("/teams/%d/members/%s", g.team, g.alice.Name), g.srv.Admin.Token, nil)
	if err != nil || status != http.StatusNotFound {
		t.Errorf("alice's team membership after cleanup: status %d, err %v; want 404", status, err)
	}
}

// observer polls Gitea's issue search as alice for the run's handle, as
// fast as Gitea answers, and keeps the probes after the revocation request.
type observer struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	lastSeen time.Time // start of the last poll that found the issue
	gone     time.Time // end of the first poll after it that did not
	err      error
}

func (g *giteaFixture) observe(t *testing.T, run *v1alpha1.CanaryRun) *observer {
	t.Helper()
	var payload, handle string
	testutil.Eventually(t, giteaWait, "the run's canary token", func() error {
		got := crGet(t, run)
		if got.Status.TokenSecretName == "" {
			return errors.New("no token Secret yet")
		}
		tok := crTokenPair(t, got)
		handle, payload = tok.Handle, tok.Payload
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	o := &observer{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(o.done)
		for ctx.Err() == nil {
			start := time.Now()
			seen, err := g.searchAs(ctx, g.alice, handle, payload)
			end := time.Now()
			o.record(start, end, seen, err, ctx.Err() != nil)
		}
	}()
	t.Cleanup(cancel)
	return o
}

func (o *observer) record(start, end time.Time, seen bool, err error, stopping bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case stopping:
	case err != nil:
		// An error is no observation; the first keeps the test honest.
		if o.err == nil {
			o.err = err
		}
	case seen:
		o.lastSeen, o.gone = start, time.Time{}
	case !o.lastSeen.IsZero() && o.gone.IsZero():
		o.gone = end
	}
}

// stop ends the observation and returns when the issue was last seen and
// first missed after that.
func (o *observer) stop(t *testing.T) (seen, gone time.Time) {
	t.Helper()
	o.cancel()
	<-o.done
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		t.Fatalf("observer: %v", o.err)
	}
	if o.lastSeen.IsZero() || o.gone.IsZero() {
		t.Fatalf("observer: never saw the issue appear and disappear (last seen %v, gone %v)", o.lastSeen, o.gone)
	}
	return o.lastSeen, o.gone
}

// searchAs reports whether Gitea's issue search, as u, returns an issue
// whose body holds payload. A reply other than 200 is an error.
func (g *giteaFixture) searchAs(ctx context.Context, u giteatest.User, handle, payload string) (bool, error) {
	q := url.Values{"q": {handle}, "type": {"issues"}, "state": {"all"}, "limit": {"5"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.srv.URL+"/api/v1/repos/issues/search?"+q.Encode(), nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Authorization", "token "+u.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return false, err
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("issue search: status %d", resp.StatusCode)
	}
	var issues []struct {
		Body string `json:"body"`
	}
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&issues); err != nil {
		return false, err
	}
	for _, i := range issues {
		if strings.Contains(i.Body, payload) {
			return true, nil
		}
	}
	return false, nil
}
