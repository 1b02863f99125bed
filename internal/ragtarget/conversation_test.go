package ragtarget_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// shows reports whether an answer quotes or cites the zebrafinch passage.
func shows(a driver.Answer) bool {
	return strings.Contains(a.Text, "near the river") || slices.Contains(a.Citations, "doc-1#0")
}

// openConversation plants doc-1 for alice, waits until it is indexed and
// starts a conversation about it whose first answer cites it.
func (e *env) openConversation() string {
	e.t.Helper()
	e.create("doc-1", "the zebrafinch nests near the river", "user:alice")
	e.advance()
	id, first, err := e.drv.StartConversation(context.Background(), alice, question)
	if err != nil {
		e.t.Fatalf("StartConversation: %v", err)
	}
	if !shows(first) || first.Status != driver.StatusAnswer || first.Reason != "" {
		e.t.Fatalf("first turn = %+v, want the passage cited with status answer and no reason", first)
	}
	return id
}

func (e *env) followUp(persona driver.Token, id string) driver.Answer {
	e.t.Helper()
	a, err := e.drv.FollowUp(context.Background(), persona, id, question)
	if err != nil {
		e.t.Fatalf("FollowUp: %v", err)
	}
	return a
}

func TestFollowUpsAreReauthorised(t *testing.T) {
	e := start(t, ragtarget.Config{ACLSyncInterval: 3 * time.Second})
	id := e.openConversation()
	must(t, e.drv.Revoke(context.Background(), "doc-1", "user:alice"))
	e.advance() // t=2s: the ACL sync has not applied the revoke yet
	if a := e.followUp(alice, id); !shows(a) {
		t.Fatalf("follow-up before the ACL sync = %+v, want the passage still served", a)
	}
	e.advance() // t=3s: ACL sync
	a := e.followUp(alice, id)
	if shows(a) {
		t.Fatalf("follow-up after the ACL sync still serves the revoked passage: %+v", a)
	}
	if a.Status != driver.StatusNotFound || a.Reason != driver.ReasonNoEvidence {
		t.Fatalf("follow-up declared %q/%q, want not_found/NO_EVIDENCE", a.Status, a.Reason)
	}
}

func TestConversationReusesHistoryDefectKeepsRevokedContent(t *testing.T) {
	e := start(t, ragtarget.Config{ACLSyncInterval: 3 * time.Second, ConversationReusesHistory: true})
	id := e.openConversation()
	must(t, e.drv.Revoke(context.Background(), "doc-1", "user:alice"))
	e.advanceTo(10 * time.Second) // three ACL syncs later
	if e.visible(alice, "zebrafinch", "doc-1") {
		t.Fatal("search still returns the revoked document: the ACL sync did not apply")
	}
	if e.answerShows(alice) {
		t.Fatal("the answer surface still serves the revoked passage; only conversations should")
	}
	for range 2 {
		if a := e.followUp(alice, id); !shows(a) || a.Status != driver.StatusAnswer {
			t.Fatalf("follow-up under the defect = %+v, want the remembered passage with status answer", a)
		}
	}
	// A new conversation is authorised afresh, defect or not.
	_, first, err := e.drv.StartConversation(context.Background(), alice, question)
	must(t, err)
	if shows(first) {
		t.Fatalf("a new conversation's first turn serves the revoked passage: %+v", first)
	}
}

func TestConversationBelongsToItsPersona(t *testing.T) {
	e := start(t, ragtarget.Config{})
	id := e.openConversation()
	for name, tc := range map[string]struct {
		persona driver.Token
		id      string
	}{
		"another persona": {persona: bob, id: id},
		"unknown ID":      {persona: alice, id: "conv-unknown"},
	} {
		_, err := e.drv.FollowUp(context.Background(), tc.persona, tc.id, question)
		if k, _ := driver.KindOf(err); k != driver.Permanent || statusOf(err) != 404 {
			t.Errorf("%s: err = %v, want a permanent 404", name, err)
		}
	}
	if a := e.followUp(alice, id); !shows(a) {
		t.Fatalf("the owner's follow-up = %+v, want the passage", a)
	}
}

func TestConversationsAreBoundedOldestEvicted(t *testing.T) {
	e := start(t, ragtarget.Config{MaxConversations: 2})
	oldest := e.openConversation()
	var newer []string
	for range 2 {
		id, _, err := e.drv.StartConversation(context.Background(), alice, question)
		must(t, err)
		newer = append(newer, id)
	}
	if n := e.svc.ConversationCount(); n != 2 {
		t.Fatalf("kept %d conversations, want the bound 2", n)
	}
	if _, err := e.drv.FollowUp(context.Background(), alice, oldest, question); statusOf(err) != 404 {
		t.Fatalf("follow-up in the evicted conversation: err = %v, want 404", err)
	}
	for _, id := range newer {
		e.followUp(alice, id)
	}
}

func TestCapabilitiesReportConversations(t *testing.T) {
	e := start(t, ragtarget.Config{})
	c, err := e.drv.Capabilities(context.Background())
	must(t, err)
	if !c.Conversation || c.ContractVersion != driver.ContractVersion {
		t.Fatalf("capabilities = %+v, want conversation true on %s", c, driver.ContractVersion)
	}
}

// statusOf is the HTTP status a driver error carries, 0 when none.
func statusOf(err error) int {
	var de *driver.Error
	if errors.As(err, &de) {
		return de.StatusCode
	}
	return 0
}
