package conformance_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/conformance"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/targettest"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

func run(t *testing.T, cfg ragtarget.Config, principal string) conformance.Report {
	t.Helper()
	cfg.Tokens = map[string]string{"persona": "user:alice"}
	tg := targettest.Start(t, cfg)
	return conformance.Run(context.Background(), conformance.Config{
		Driver: tg.Driver(t, time.Second), PersonaToken: driver.Token("persona"), PersonaPrincipal: principal,
		Timeout: 500 * time.Millisecond, PollInterval: 10 * time.Millisecond,
	})
}

func TestGrantThatNeverSyncsFailsVisibility(t *testing.T) {
	// No sync runs within the check's timeout, so the grant never reaches the index.
	r := run(t, ragtarget.Config{ContentSyncInterval: time.Hour, ACLSyncInterval: time.Hour}, "user:alice")
	if !slices.Equal(r.Failed(), []string{conformance.CheckSearchVisible}) {
		t.Fatalf("failed = %v, want only %s; report %+v", r.Failed(), conformance.CheckSearchVisible, r.Results)
	}
}

func TestWrongPrincipalFailsVisibility(t *testing.T) {
	// The grant goes to a principal the persona token does not resolve to.
	r := run(t, ragtarget.Config{ContentSyncInterval: 20 * time.Millisecond, ACLSyncInterval: 20 * time.Millisecond}, "user:mallory")
	if !slices.Contains(r.Failed(), conformance.CheckSearchVisible) {
		t.Fatalf("failed = %v, want %s", r.Failed(), conformance.CheckSearchVisible)
	}
}

func TestStaleCacheFailsAnswerExclusion(t *testing.T) {
	r := run(t, ragtarget.Config{ContentSyncInterval: 20 * time.Millisecond, ACLSyncInterval: 20 * time.Millisecond,
		AnswerCacheTTL: time.Hour, CacheIgnoresACLChanges: true}, "user:alice")
	if !slices.Equal(r.Failed(), []string{conformance.CheckAnswerExcluded}) {
		t.Fatalf("failed = %v, want only %s", r.Failed(), conformance.CheckAnswerExcluded)
	}
}

func TestConversationChecksPassOnRagtarget(t *testing.T) {
	r := run(t, ragtarget.Config{ContentSyncInterval: 20 * time.Millisecond, ACLSyncInterval: 20 * time.Millisecond}, "user:alice")
	if !r.Passed() {
		t.Fatalf("failed = %v; report %+v", r.Failed(), r.Results)
	}
	for _, name := range []string{conformance.CheckConversationVisible, conformance.CheckConversationUnknown, conformance.CheckConversationExcluded} {
		if !slices.ContainsFunc(r.Results, func(res conformance.Result) bool { return res.Name == name && res.Status == conformance.Pass }) {
			t.Errorf("%s did not pass: %+v", name, r.Results)
		}
	}
}

func TestConversationHistoryDefectFailsConversationExclusion(t *testing.T) {
	r := run(t, ragtarget.Config{ContentSyncInterval: 20 * time.Millisecond, ACLSyncInterval: 20 * time.Millisecond,
		ConversationReusesHistory: true}, "user:alice")
	if !slices.Equal(r.Failed(), []string{conformance.CheckConversationExcluded}) {
		t.Fatalf("failed = %v, want only %s", r.Failed(), conformance.CheckConversationExcluded)
	}
}
