package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// crDeclareSurfaces points the fixture corpus's Answer, Conversation and
// Stream surfaces at ragtarget's OpenAI-compatible chat endpoint and its
// Search surface at ragtarget's Azure-like search API: planting still goes
// through the contract's source API.
func crDeclareSurfaces(t *testing.T, ns string, tg *crTarget) {
	t.Helper()
	crDeclareSurfacesIn(t, k8sClient, ns, tg)
	testutil.Eventually(t, eventuallyTimeout, "the corpus measuring every declared surface", func() error {
		var got v1alpha1.Corpus
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "target"}, &got); err != nil {
			return err
		}
		want := []v1alpha1.Surface{v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer, v1alpha1.SurfaceConversation, v1alpha1.SurfaceStream, v1alpha1.SurfaceInFlight}
		if got.Status.ObservedGeneration != got.Generation || !slices.Equal(got.Status.MeasurableSurfaces, want) {
			return fmt.Errorf("generation %d observed %d, measurable %v", got.Generation, got.Status.ObservedGeneration, got.Status.MeasurableSurfaces)
		}
		return nil
	})
}

// crDeclareSurfacesIn declares the surfaces through kc, for an API server
// of the test's own (whose corpus status no controller writes).
func crDeclareSurfacesIn(t *testing.T, kc client.Client, ns string, tg *crTarget) {
	t.Helper()
	var c v1alpha1.Corpus
	if err := kc.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "target"}, &c); err != nil {
		t.Fatal(err)
	}
	base := c.DeepCopy()
	c.Spec.RateLimit = v1alpha1.RateLimit{RequestsPerSecond: 200, Burst: 200}
	c.Spec.Surfaces = &v1alpha1.CorpusSurfaces{
		Chat: &v1alpha1.ChatSurface{Type: v1alpha1.ChatOpenAI, URL: tg.URL + "/v1/", Model: "ragtarget", Stream: true,
			Citations: "/choices/0/message/context/citations",
			ExtraBody: &apiextensionsv1.JSON{Raw: []byte(`{"collection":"canaries"}`)}},
		Search: &v1alpha1.SearchSurface{Type: v1alpha1.SearchHTTP, URL: tg.URL + "/indexes/docs/search", Method: "POST",
			Headers: map[string]string{"Content-Type": "application/json"}, Body: `{"search": {{json .Query}}, "top": {{.K}}}`,
			CredentialHeader: v1alpha1.CredentialHeader{Name: "api-key"}, Hits: "/value", ID: "/id", Text: "/content"},
	}
	if err := kc.Patch(context.Background(), &c, client.MergeFrom(base)); err != nil {
		t.Fatalf("declaring the surfaces: %v", err)
	}
}

// TestSurfacesRunExcludedWithinACLLag: a canary planted through the
// contract's source API and probed on the assistant's own chat API (Answer,
// Conversation, Stream) and its foreign-shaped search API is excluded on
// every surface, each interval containing the ACL sync that applied the
// revocation, and the control persona got valid replies on each.
func TestSurfacesRunExcludedWithinACLLag(t *testing.T) {
	t.Parallel()
	tg := startCRTarget(t, ragtarget.Config{}, 2*time.Second, false)
	ns := crFixture(t, tg.URL)
	crDeclareSurfaces(t, ns, tg)
	surfaces := []v1alpha1.Surface{v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer, v1alpha1.SurfaceConversation, v1alpha1.SurfaceStream}
	run := crRun(t, ns, 20*time.Second, surfaces...)

	got := crWaitDone(t, run)
	if got.Status.Verdict != v1alpha1.VerdictSLOMet {
		t.Fatalf("verdict %s (%s), want SLOMet", got.Status.Verdict, got.Status.Message)
	}
	s, e := tg.appliedRevocation()
	if s.IsZero() {
		t.Fatal("the revocation was never applied by the test's ACL sync")
	}
	req, ack := got.Status.RevokeRequestedTime.Time, got.Status.RevokeAcknowledgedTime.Time
	for _, surface := range surfaces {
		m := crSurface(t, got, surface)
		if !m.Excluded || m.Bounds == nil || m.Bounds.Lower == nil || m.Bounds.Upper == nil {
			t.Fatalf("%s: not excluded with both bounds: %+v", surface, m)
		}
		lower, upper := m.Bounds.Lower.Duration, m.Bounds.Upper.Duration
		t.Logf("%s: applied [%s, %s] after request; measured [%s, %s]; probes %+v", surface, s.Sub(req), e.Sub(req), lower, upper, m.Probes)
		if ack.Add(lower).After(e) || req.Add(upper).Before(s) {
			t.Errorf("%s: interval [%s, %s] does not contain the ACL sync at [%s, %s]", surface, lower, upper, s.Sub(req), e.Sub(req))
		}
		if m.Probes.Positive == 0 || m.Probes.Errors != 0 {
			t.Errorf("%s: probes %+v, want sightings before the sync and no errors", surface, m.Probes)
		}
		assertControlAnswered(t, got, surface)
	}
	crAssertNoToken(t, got)
}

// TestSurfacesControlSightingOnChatIsAViolation: an assistant whose chat
// ignores access lists shows the canary to the control persona on the chat
// surface: an isolation violation, whatever the timing.
func TestSurfacesControlSightingOnChatIsAViolation(t *testing.T) {
	t.Parallel()
	tg := startCRTarget(t, ragtarget.Config{FilterMode: ragtarget.FilterNone}, 0, false)
	ns := crFixture(t, tg.URL)
	crDeclareSurfaces(t, ns, tg)
	run := crRun(t, ns, 2*time.Second, v1alpha1.SurfaceAnswer)

	got := crWaitDone(t, run)
	if got.Status.Verdict != v1alpha1.VerdictIsolationViolation || got.Status.IsolationViolations == 0 {
		t.Fatalf("verdict %s violations %d (%s), want IsolationViolation", got.Status.Verdict, got.Status.IsolationViolations, got.Status.Message)
	}
	crAssertNoToken(t, got)
}

// TestSurfaceNotMeasurableIsRefused: a run asking for the Stream surface on
// a corpus without a streaming chat surface is refused, naming it.
func TestSurfaceNotMeasurableIsRefused(t *testing.T) {
	t.Parallel()
	tg := startCRTarget(t, ragtarget.Config{}, 0, false)
	ns := crFixture(t, tg.URL)
	run := crRun(t, ns, 2*time.Second, v1alpha1.SurfaceSearch, v1alpha1.SurfaceStream)

	got := crWaitDone(t, run)
	if got.Status.Verdict != v1alpha1.VerdictSetupFailed || !strings.Contains(got.Status.Message, "cannot measure Stream (needs spec.surfaces.chat with stream: true)") {
		t.Fatalf("verdict %s (%s), want SetupFailed naming the Stream surface", got.Status.Verdict, got.Status.Message)
	}
	if got.Status.DocumentID != "" && got.Status.RevokeRequestedTime != nil {
		t.Errorf("the run went on: revokeRequested %v", got.Status.RevokeRequestedTime)
	}
}
