package controllers

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/targettest"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

func searchSurface(url, body string) *v1alpha1.CorpusSurfaces {
	return &v1alpha1.CorpusSurfaces{Search: &v1alpha1.SearchSurface{Type: v1alpha1.SearchHTTP, URL: url + "/indexes/docs/search",
		Method: "POST", Body: body, CredentialHeader: v1alpha1.CredentialHeader{Name: "api-key"}, Hits: "/value", ID: "/id"}}
}

// TestCorpusRefusesHostileSearchTemplates is issue 37 items 1 and 5 in the
// cluster: a Corpus with the 861-byte doubling template, and one whose body
// hard-codes a Persona's key, are each Ready=False (InvalidSurface) naming
// the field, while the manager lives on and a sound corpus beside them
// becomes Ready.
func TestCorpusRefusesHostileSearchTemplates(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	url := targettest.Start(t, fixtureConfig(ragtarget.Config{AnswerCacheTTL: 1e9})).URL
	const aliceKey = "alice-key-4c1e0b97d2"
	createSecret(t, ns, "alice-cred", "token", aliceKey)
	if err := k8sClient.Create(context.Background(), objects.Persona(ns, "alice", "alice")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"growing", "leaky", "sound"} {
		createSecret(t, ns, name+"-source", "token", testSourceToken)
	}
	growing := newCorpus(ns, "growing", url)
	growing.Spec.Surfaces = searchSurface(url, testutil.DoublingTemplate(40))
	leaky := newCorpus(ns, "leaky", url)
	leaky.Spec.Surfaces = searchSurface(url, `{"search": {{json .Query}}, "key": "`+aliceKey+`"}`)
	sound := newCorpus(ns, "sound", url)
	sound.Spec.Surfaces = searchSurface(url, `{"search": {{json .Query}}, "top": {{.K}}}`)
	for _, c := range []*v1alpha1.Corpus{growing, leaky, sound} {
		if err := k8sClient.Create(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		corpus *v1alpha1.Corpus
		want   []string
	}{
		{corpus: growing, want: []string{"spec.surfaces.search", "Body: variables ($x) are not allowed"}},
		{corpus: leaky, want: []string{"spec.surfaces.search", "Body: holds a persona's credential", `Persona "alice"`}},
	} {
		got := waitCorpusReady(t, tc.corpus, metav1.ConditionFalse, "InvalidSurface")
		msg := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady).Message
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("corpus %s: Ready message %q lacks %q", tc.corpus.Name, msg, w)
			}
		}
		if strings.Contains(msg, aliceKey) {
			t.Errorf("corpus %s: the condition carries the key: %q", tc.corpus.Name, msg)
		}
	}
	waitCorpusReady(t, sound, metav1.ConditionTrue, v1alpha1.ReasonReachable)
}
