package target

import (
	"context"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/targettest"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

const (
	surfacedSource = "source-secret-value"
	surfacedAlice  = driver.Token("alice-persona-key")
)

// surfacedTarget is ragtarget serving the contract, its chat completions
// and its foreign search, with one document alice may read.
func surfacedTarget(t *testing.T) *targettest.Target {
	t.Helper()
	tg := targettest.Start(t, ragtarget.Config{SourceToken: surfacedSource,
		Tokens: map[string]string{surfacedAlice.Reveal(): "alice@example.com"}})
	tg.Plant(t, driver.Document{ID: "doc-1", Title: "Quarterly plan",
		Body: "The quarterly plan mentions quokkalantern twice.", Principals: []string{"alice@example.com"}})
	return tg
}

func surfacedCorpus(url string) *v1alpha1.Corpus {
	c := corpusFor(url)
	c.Spec.Surfaces = &v1alpha1.CorpusSurfaces{
		Chat: &v1alpha1.ChatSurface{Type: v1alpha1.ChatOpenAI, URL: url + "/v1/", Model: "m", Stream: true,
			Citations: "/choices/0/message/context/citations",
			ExtraBody: &apiextensionsv1.JSON{Raw: []byte(`{"collection":"kb"}`)}},
		Search: &v1alpha1.SearchSurface{Type: v1alpha1.SearchHTTP, URL: url + "/indexes/docs/search", Method: "POST",
			Headers: map[string]string{"Content-Type": "application/json"}, Body: `{"search": {{json .Query}}, "top": {{.K}}}`,
			CredentialHeader: v1alpha1.CredentialHeader{Name: "api-key"}, Hits: "/value", ID: "/id", Text: "/content"},
	}
	return c
}

// A corpus with spec.surfaces plants through its driver and probes Search,
// Answer, Conversation and Stream through ragtarget's own search and chat
// APIs.
func TestSurfacesProbeTheAssistantsOwnAPIs(t *testing.T) {
	srv := surfacedTarget(t)
	door := &Door{Reader: secretsReader(t, sourceSecret(true)), Allow: AllowAny()}
	c, err := door.Corpus(context.Background(), surfacedCorpus(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	ctx := context.Background()
	hits, err := c.Driver.Search(ctx, surfacedAlice, "quarterly", 5)
	if err != nil || len(hits) != 1 || hits[0].DocumentID != "doc-1" || !strings.Contains(hits[0].Text, "quokkalantern") {
		t.Fatalf("search surface: %+v, %v", hits, err)
	}
	a, err := c.Driver.Answer(ctx, surfacedAlice, "quarterly plan")
	if err != nil || !strings.Contains(a.Text, "quokkalantern") || len(a.Citations) != 1 || a.Citations[0] != "doc-1#0" {
		t.Fatalf("chat answer: %+v, %v", a, err)
	}
	streamed, err := c.Driver.(driver.Streamer).AnswerStream(ctx, surfacedAlice, "quarterly plan")
	if err != nil || streamed.Text != a.Text {
		t.Fatalf("stream: %+v, %v (answer %q)", streamed, err, a.Text)
	}
	conv := c.Driver.(driver.Conversations)
	id, _, err := conv.StartConversation(ctx, surfacedAlice, "quarterly plan")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conv.FollowUp(ctx, surfacedAlice, id, "and again?"); err != nil {
		t.Fatalf("follow-up: %v", err)
	}
	// Planting still goes to the driver: the source API.
	if err := c.Driver.Grant(ctx, "doc-1", "bob@example.com"); err != nil {
		t.Fatalf("grant through the driver: %v", err)
	}
}

// Every surface URL passes the allowlist, and a surface the door cannot
// build is a Stalled problem naming the field.
func TestSurfacesAreCheckedAtTheDoor(t *testing.T) {
	srv := surfacedTarget(t)
	allow, _ := ParseAllowlist([]string{srv.URL + "/tenant-a/"})
	door := &Door{Reader: secretsReader(t, sourceSecret(true)), Allow: allow}
	c := surfacedCorpus(srv.URL + "/tenant-a")
	c.Spec.Surfaces.Search.URL = srv.URL + "/indexes/docs/search"
	_, err := door.Corpus(context.Background(), c)
	if p, ok := IsUserProblem(err); !ok || p.Reason != v1alpha1.ReasonURLNotAllowed || !strings.Contains(p.Message, "spec.surfaces.search.url") {
		t.Fatalf("a search surface outside the allowlist: %v", err)
	}
	open := &Door{Reader: secretsReader(t, sourceSecret(true)), Allow: AllowAny()}
	bad := surfacedCorpus(srv.URL)
	bad.Spec.Surfaces.Search.Hits = "value"
	_, err = open.Corpus(context.Background(), bad)
	if p, ok := IsUserProblem(err); !ok || p.Reason != v1alpha1.ReasonInvalidSurface || !strings.Contains(p.Message, "spec.surfaces.search") {
		t.Fatalf("a malformed hits pointer: %v", err)
	}
	bad = surfacedCorpus(srv.URL)
	bad.Spec.Surfaces.Chat.ExtraBody = &apiextensionsv1.JSON{Raw: []byte(`[1]`)}
	_, err = open.Corpus(context.Background(), bad)
	if p, ok := IsUserProblem(err); !ok || p.Reason != v1alpha1.ReasonInvalidSurface || !strings.Contains(p.Message, "extraBody") {
		t.Fatalf("extraBody not an object: %v", err)
	}
}

// A run's kept copy probes the surfaces it began with.
func TestRecipeKeepsTheSurfaces(t *testing.T) {
	srv := surfacedTarget(t)
	door := &Door{Reader: secretsReader(t, sourceSecret(true)), Allow: AllowAny()}
	c, err := door.Corpus(context.Background(), surfacedCorpus(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	r := c.Recipe()
	c.Release()
	kept, err := door.FromRecipe("ns", "c", r)
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Release()
	if _, ok := kept.Driver.(*surfaced); !ok || kept.Object.Spec.Surfaces == nil {
		t.Fatalf("the kept copy lost its surfaces: %T", kept.Driver)
	}
	hits, err := kept.Driver.Search(context.Background(), surfacedAlice, "quarterly", 5)
	if err != nil || len(hits) != 1 || hits[0].Text == "" {
		t.Fatalf("kept copy's search: %+v %v", hits, err)
	}
}

// A conversation started through one resolution of the corpus continues in
// the next: the chat surface's history lives in the door, not the
// resolution.
func TestChatConversationsOutliveAResolution(t *testing.T) {
	srv := surfacedTarget(t)
	door := &Door{Reader: secretsReader(t, sourceSecret(true)), Allow: AllowAny()}
	first, err := door.Corpus(context.Background(), surfacedCorpus(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	id, _, err := first.Driver.(driver.Conversations).StartConversation(context.Background(), surfacedAlice, "quarterly plan")
	first.Release()
	if err != nil {
		t.Fatal(err)
	}
	second, err := door.Corpus(context.Background(), surfacedCorpus(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer second.Release()
	if _, err := second.Driver.(driver.Conversations).FollowUp(context.Background(), surfacedAlice, id, "and again?"); err != nil {
		t.Fatalf("follow-up through a second resolution: %v", err)
	}
	door.Forget("ns", "c")
	if _, err := second.Driver.(driver.Conversations).FollowUp(context.Background(), surfacedAlice, id, "still?"); err != nil {
		t.Fatalf("a resolution keeps its client after Forget: %v", err)
	}
	third, err := door.Corpus(context.Background(), surfacedCorpus(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer third.Release()
	if _, err := third.Driver.(driver.Conversations).FollowUp(context.Background(), surfacedAlice, id, "and now?"); err == nil {
		t.Fatal("a forgotten corpus's conversation continued")
	}
}
