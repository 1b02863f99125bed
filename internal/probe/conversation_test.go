package probe

import (
	"context"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/targettest"
	"github.com/ragcanary/ragcanary/internal/driver"
	httpdriver "github.com/ragcanary/ragcanary/internal/driver/http"
	"github.com/ragcanary/ragcanary/internal/measure"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

const (
	convAlice = driver.Token("alice-conv-token")
	convBob   = driver.Token("bob-conv-token")
)

// conversationTarget serves ragtarget over real HTTP with the canary
// planted for alice and indexed; syncs run only when the test calls them.
func conversationTarget(t *testing.T, reusesHistory bool) (*ragtarget.Service, *httpdriver.Driver) {
	t.Helper()
	tg := targettest.Start(t, ragtarget.Config{
		Tokens:                    map[string]string{convAlice.Reveal(): "user:alice", convBob.Reveal(): "user:bob"},
		ConversationReusesHistory: reusesHistory,
	})
	tg.Plant(t, driver.Document{ID: testTarget.DocumentID, Title: "canary", Body: testTarget.Handle + " holds " + testTarget.Payload,
		Principals: []string{"user:alice"}})
	return tg.Service, tg.Driver(t, 2*time.Second)
}

// revokeAndSync takes alice's grant away and lets the ACL sync apply it.
func revokeAndSync(t *testing.T, svc *ragtarget.Service, d *httpdriver.Driver) {
	t.Helper()
	if err := d.Revoke(context.Background(), testTarget.DocumentID, "user:alice"); err != nil {
		t.Fatal(err)
	}
	if err := svc.SyncNow(ragtarget.SyncACL); err != nil {
		t.Fatal(err)
	}
}

// started opens alice's conversation about the canary, as the run does
// before revoking, and returns the target the exclusion probes use.
func started(t *testing.T, d *httpdriver.Driver) Target {
	t.Helper()
	id, first, err := d.StartConversation(context.Background(), convAlice, testTarget.Handle)
	if err != nil || !AnswerShows(first, testTarget) {
		t.Fatalf("first turn %+v, err %v: want the canary shown", first, err)
	}
	tg := testTarget
	tg.Conversation = Conversation{ID: id, Owner: convAlice}
	return tg
}

func TestConversationProbe(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name          string
		reusesHistory bool
		// want is the persona's follow-up outcome after the ACL sync
		// applied the revocation.
		want measure.Outcome
	}{
		{name: "follow-ups re-authorised", want: measure.Absent},
		{name: "follow-ups answered from history", reusesHistory: true, want: measure.Present},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, d := conversationTarget(t, tc.reusesHistory)
			// Without a conversation the probe starts one: visibility.
			if got := Probe(ctx, d, v1alpha1.SurfaceConversation, convAlice, testTarget); got != measure.Present {
				t.Fatalf("visibility probe = %v, want Present", got)
			}
			tg := started(t, d)
			if got := Probe(ctx, d, v1alpha1.SurfaceConversation, convAlice, tg); got != measure.Present {
				t.Fatalf("follow-up before the revocation = %v, want Present", got)
			}
			revokeAndSync(t, svc, d)
			if got := Probe(ctx, d, v1alpha1.SurfaceConversation, convAlice, tg); got != tc.want {
				t.Fatalf("follow-up after the revocation = %v, want %v", got, tc.want)
			}
			// The answer surface is re-authorised either way: the defect is
			// the conversation's alone.
			if got := Probe(ctx, d, v1alpha1.SurfaceAnswer, convAlice, tg); got != measure.Absent {
				t.Fatalf("answer probe after the revocation = %v, want Absent", got)
			}
		})
	}
}

func TestConversationProbeOfControlUsesItsOwnConversation(t *testing.T) {
	_, d := conversationTarget(t, true)
	tg := started(t, d)
	// Bob cannot follow up in alice's conversation (404 would be an error
	// and test nothing); he asks in one of his own and must not see it.
	if got := Probe(context.Background(), d, v1alpha1.SurfaceConversation, convBob, tg); got != measure.Absent {
		t.Fatalf("control probe = %v, want Absent (a valid reply without the canary)", got)
	}
}

func TestVanishedConversationIsAnError(t *testing.T) {
	_, d := conversationTarget(t, false)
	tg := testTarget
	tg.Conversation = Conversation{ID: "conv-gone", Owner: convAlice}
	if got := Probe(context.Background(), d, v1alpha1.SurfaceConversation, convAlice, tg); got != measure.Error {
		t.Fatalf("follow-up in a conversation the target does not know = %v, want Error", got)
	}
	// A driver without the conversation API cannot probe the surface.
	type plain struct{ driver.Driver }
	if got := Probe(context.Background(), plain{d}, v1alpha1.SurfaceConversation, convAlice, testTarget); got != measure.Error {
		t.Fatalf("probe through a driver without conversations = %v, want Error", got)
	}
}
