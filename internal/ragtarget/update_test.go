package ragtarget_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// TestUpdateContentAppliesAtContentSync: re-creating a document with a new
// body (the UpdateContent method) changes what search and answers serve only
// at the next content sync, old and new body switching together; the grant
// survives because the update sends the same principals.
func TestUpdateContentAppliesAtContentSync(t *testing.T) {
	e := start(t, ragtarget.Config{ContentSyncInterval: 2 * time.Second, ACLSyncInterval: 10 * time.Second, AnswerCacheTTL: time.Hour})
	ctx := context.Background()
	caps, err := e.drv.Capabilities(ctx)
	must(t, err)
	if !caps.Supports(v1alpha1.RevokeUpdateContent) {
		t.Fatalf("capabilities %v do not list UpdateContent", caps.RevocationMethods)
	}
	e.create("doc-1", "the zebrafinch canary says oldpayload", "user:alice")
	// The answer cache (an hour) must be invalidated by the content sync.
	e.advanceTo(2 * time.Second)
	if !e.visible(alice, "oldpayload", "doc-1") {
		t.Fatal("the first body is not searchable after the content sync")
	}
	if a := e.answer(alice, canaryQuery); !strings.Contains(a.Text, "oldpayload") {
		t.Fatalf("answer = %q, want the first body", a.Text)
	}
	e.create("doc-1", "the zebrafinch canary says newpayload", "user:alice")
	e.advance() // t=3s: no content sync yet
	if !e.visible(alice, "oldpayload", "doc-1") || e.visible(alice, "newpayload", "doc-1") {
		t.Fatal("the update reached the index before the content sync")
	}
	if a := e.answer(alice, canaryQuery); !strings.Contains(a.Text, "oldpayload") {
		t.Fatalf("answer before the content sync = %q, want the old body", a.Text)
	}
	e.advance() // t=4s: content sync
	if e.visible(alice, "oldpayload", "doc-1") || !e.visible(alice, "newpayload", "doc-1") {
		t.Fatal("after the content sync the index does not serve exactly the new body")
	}
	if a := e.answer(alice, canaryQuery); !strings.Contains(a.Text, "newpayload") || strings.Contains(a.Text, "oldpayload") ||
		!slices.Contains(a.Citations, "doc-1#0") {
		t.Fatalf("answer after the content sync = %+v, want the new body cited", a)
	}
	if e.visible(bob, "newpayload", "doc-1") {
		t.Fatal("isolation: the update granted bob")
	}
}

func (e *env) answer(persona driver.Token, q string) driver.Answer {
	e.t.Helper()
	a, err := e.drv.Answer(context.Background(), persona, q)
	if err != nil {
		e.t.Fatalf("Answer: %v", err)
	}
	return a
}
