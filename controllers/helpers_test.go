package controllers

import (
	"testing"

	"github.com/ragcanary/ragcanary/api/v1alpha1"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
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

// fixtureTokens map the credentials the fixtures' persona Secrets hold to
// the principals the test ragtargets know alice and mallory by.
func fixtureTokens() map[string]string {
	return map[string]string{testAliceToken: "alice@example.com", testMalloryToken: "mallory@example.com"}
}

// fixtureConfig is cfg accepting the fixtures' source credential and, when
// cfg names no personas of its own, alice's and mallory's.
func fixtureConfig(cfg ragtarget.Config) ragtarget.Config {
	if cfg.SourceToken == "" {
		cfg.SourceToken = testSourceToken
	}
	if cfg.Tokens == nil {
		cfg.Tokens = fixtureTokens()
	}
	return cfg
}

// credentialLabels mark a test Secret as a ragcanary credential.
func credentialLabels() map[string]string {
	return map[string]string{v1alpha1.LabelCredential: v1alpha1.LabelCredentialValue}
}

// createSecret stores value under key in a credential Secret.
func createSecret(t *testing.T, ns, name, key, value string) {
	t.Helper()
	s := objects.CredentialSecret(ns, name, value)
	s.Data = map[string][]byte{key: []byte(value)}
	crCreate(t, s)
}

// isTerminal reports whether a run reached a phase it never leaves.
func isTerminal(p v1alpha1.CanaryPhase) bool {
	return p == v1alpha1.PhaseSucceeded || p == v1alpha1.PhaseFailed
}
