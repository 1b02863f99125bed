package controllers

import (
	"context"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

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

// createSecret stores one key in a Secret.
func createSecret(t *testing.T, ns, name, key, value string) {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data:       map[string][]byte{key: []byte(value)},
	}
	if err := k8sClient.Create(context.Background(), s); err != nil {
		t.Fatalf("creating secret %s: %v", name, err)
	}
}
