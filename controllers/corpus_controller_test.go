package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/targettest"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// newCorpus is a corpus at url whose source credential is the
// "<name>-source" Secret's, each call bounded by 2s.
func newCorpus(ns, name, url string) *v1alpha1.Corpus {
	return objects.Corpus(ns, name, url, objects.SourceSecret(name+"-source", objects.TokenKey), objects.CallTimeout(2*time.Second))
}

// corpusKey names the Corpus ns/name for the reads that need only its key.
func corpusKey(ns, name string) *v1alpha1.Corpus {
	return &v1alpha1.Corpus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func waitCorpusReady(t *testing.T, c *v1alpha1.Corpus, status metav1.ConditionStatus, reason string) *v1alpha1.Corpus {
	t.Helper()
	var got v1alpha1.Corpus
	testutil.Eventually(t, eventuallyTimeout, fmt.Sprintf("corpus Ready=%s/%s", status, reason), func() error {
		if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(c), &got); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
		if cond == nil || cond.Status != status || cond.Reason != reason {
			return fmt.Errorf("condition is %+v", cond)
		}
		return nil
	})
	return &got
}

// TestCorpusReadyAgainstRagtarget: without its Secret a corpus is
// SecretNotFound; with it, the corpus reaches a real ragtarget over HTTP and
// reports its capabilities; the credential never reaches status.
func TestCorpusReadyAgainstRagtarget(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	url := targettest.Start(t, fixtureConfig(ragtarget.Config{AnswerCacheTTL: 1e9})).URL
	corpus := newCorpus(ns, "rt", url)
	if err := k8sClient.Create(context.Background(), corpus); err != nil {
		t.Fatal(err)
	}
	waitCorpusReady(t, corpus, metav1.ConditionFalse, v1alpha1.ReasonSecretNotFound)

	createSecret(t, ns, "rt-source", "token", testSourceToken)
	got := waitCorpusReady(t, corpus, metav1.ConditionTrue, v1alpha1.ReasonReachable)
	caps := got.Status.Capabilities
	if caps == nil || caps.ContractVersion != "v1" || !caps.AnswerSurface || len(caps.RevocationMethods) == 0 {
		t.Errorf("capabilities = %+v, want contract v1 with an answer surface and revocation methods", caps)
	}
	if got.Status.LastCheckTime == nil {
		t.Error("lastCheckTime not set")
	}
	if raw, _ := json.Marshal(got.Status); strings.Contains(string(raw), testSourceToken) {
		t.Errorf("status holds the source credential: %s", raw)
	}
}

// TestCorpusWrongCredential: a credential the target refuses is reported as
// CredentialRejected, not as a healthy corpus.
func TestCorpusWrongCredential(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	url := targettest.Start(t, fixtureConfig(ragtarget.Config{})).URL
	corpus := newCorpus(ns, "wrong", url)
	createSecret(t, ns, "wrong-source", "token", "not-the-token")
	if err := k8sClient.Create(context.Background(), corpus); err != nil {
		t.Fatal(err)
	}
	got := waitCorpusReady(t, corpus, metav1.ConditionFalse, v1alpha1.ReasonCredentialRejected)
	msg := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady).Message
	if strings.Contains(msg, "not-the-token") {
		t.Errorf("condition message leaks the credential: %q", msg)
	}
}

// TestCorpusUnreachable: a target that does not answer is Unreachable.
func TestCorpusUnreachable(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	corpus := newCorpus(ns, "gone", url)
	createSecret(t, ns, "gone-source", "token", testSourceToken)
	if err := k8sClient.Create(context.Background(), corpus); err != nil {
		t.Fatal(err)
	}
	waitCorpusReady(t, corpus, metav1.ConditionFalse, v1alpha1.ReasonUnreachable)
}

// TestCorpusContractMismatch: a target speaking another contract version is
// refused with ContractMismatch. The target is a minimal stand-in that serves
// only the capabilities document, as a future contract version would.
func TestCorpusContractMismatch(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/capabilities" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"contractVersion":"v9","answer":false,"revocationMethods":["RemoveGrant"]}`))
	}))
	t.Cleanup(srv.Close)
	corpus := newCorpus(ns, "future", srv.URL)
	createSecret(t, ns, "future-source", "token", testSourceToken)
	if err := k8sClient.Create(context.Background(), corpus); err != nil {
		t.Fatal(err)
	}
	got := waitCorpusReady(t, corpus, metav1.ConditionFalse, v1alpha1.ReasonContractMismatch)
	// A reply ragcanary cannot rely on never stands in status as fact.
	if got.Status.Capabilities != nil {
		t.Errorf("capabilities = %+v, want none from a v9 target", got.Status.Capabilities)
	}
}
