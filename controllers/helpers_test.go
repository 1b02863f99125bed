package controllers

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/ragcanary/ragcanary/api/v1alpha1"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/internal/ragtarget"
	"github.com/ragcanary/ragcanary/internal/surface"
	"github.com/ragcanary/ragcanary/internal/target"
)

// testDoor is the door the envtest managers use: test targets listen on
// random loopback ports, so any target is allowed here; the allowlist itself
// is tested in internal/target and through the manager binary in test/e2e.
func testDoor(reader client.Reader, limiters *target.Limiters) *target.Door {
	return &target.Door{Reader: reader, Allow: target.AllowAny(), Limiters: limiters, History: testHistory}
}

// testHistory keeps the chat surfaces' conversations of every envtest
// manager, as the manager's one History does.
var testHistory = surface.NewHistory(0)

// Credentials the test ragtargets accept.
const (
	testSourceToken  = "test-source-token"
	testAliceToken   = "test-alice-token"
	testMalloryToken = "test-mallory-token"
)

// startRagtarget serves a real reference RAG service over HTTP on loopback
// and returns its base URL. Zero config fields get test-friendly values.
func startRagtarget(t *testing.T, cfg ragtarget.Config) (*ragtarget.Service, string) {
	t.Helper()
	if cfg.SourceToken == "" {
		cfg.SourceToken = testSourceToken
	}
	if cfg.Tokens == nil {
		cfg.Tokens = map[string]string{testAliceToken: "alice@example.com", testMalloryToken: "mallory@example.com"}
	}
	svc, err := ragtarget.New(cfg)
	if err != nil {
		t.Fatalf("starting ragtarget: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	svc.Start(ctx)
	srv := httptest.NewServer(svc.Handler())
	t.Cleanup(func() {
		srv.Close()
		cancel()
		_ = svc.Close()
	})
	return svc, srv.URL
}

// credentialLabels mark a test Secret as a ragcanary credential.
func credentialLabels() map[string]string {
	return map[string]string{v1alpha1.LabelCredential: v1alpha1.LabelCredentialValue}
}

// createSecret stores one key in a credential Secret.
func createSecret(t *testing.T, ns, name, key, value string) {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: credentialLabels()},
		Data:       map[string][]byte{key: []byte(value)},
	}
	if err := k8sClient.Create(context.Background(), s); err != nil {
		t.Fatalf("creating secret %s: %v", name, err)
	}
}

// isTerminal reports whether a run reached a phase it never leaves.
func isTerminal(p v1alpha1.CanaryPhase) bool {
	return p == v1alpha1.PhaseSucceeded || p == v1alpha1.PhaseFailed
}
