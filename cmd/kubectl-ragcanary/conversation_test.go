package main

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/cli"
)

// conversationFixture is a namespace with four canaries: chat-grant probes
// Search and Conversation (three kept runs, the middle one still visible in
// the conversation at the timeout); search-only probes Search alone;
// chat-unmeasured's last run established nothing on the conversation;
// streaming read streams across its revocation (InFlight).
func conversationFixture(t *testing.T, ns string) {
	t.Helper()
	fixtureNamespace(t, ns)
	createCorpus(t, ns, "docs", 30*time.Second, time.Minute, ready(metav1.ConditionTrue, v1alpha1.ReasonReachable, "contract v1.1"))
	S, C := v1alpha1.SurfaceSearch, v1alpha1.SurfaceConversation
	met := func(canary *v1alpha1.RevocationCanary, last *v1alpha1.CanaryRun) {
		setCanaryStatus(t, canary, func(s *v1alpha1.RevocationCanaryStatus) {
			s.Conditions = append(ready(metav1.ConditionTrue, "Scheduled", ""), condition("SLOMet", metav1.ConditionTrue, "SLOMet"))
			s.LastRun = summaryOf(last)
		})
	}

	chat := createCanary(t, ns, "chat-grant", canarySpec("docs", S, C))
	finishedRun(t, chat, "chat-grant-1772431200", -2*time.Hour, v1alpha1.VerdictSLOMet, 850*time.Millisecond, "",
		measured(S, 1100*time.Millisecond, 1500*time.Millisecond, 0, 0), measured(C, 2*time.Second, 2600*time.Millisecond, 0, 0))
	finishedRun(t, chat, "chat-grant-1772434800", -time.Hour, v1alpha1.VerdictNotExcluded, 1200*time.Millisecond,
		"the canary was still visible on Conversation at the exclusion timeout (2m0s)",
		measured(S, 1290*time.Millisecond, 1610*time.Millisecond, 0, 0), measured(C, 2*time.Minute, -1, 0, 0))
	met(chat, finishedRun(t, chat, "chat-grant-1772436600", -30*time.Minute, v1alpha1.VerdictSLOMet, 900*time.Millisecond, "",
		measured(S, 1400*time.Millisecond, 2210*time.Millisecond, 0, 0), measured(C, 3050*time.Millisecond, 4312500*time.Microsecond, 1, 2)))

	only := createCanary(t, ns, "search-only", canarySpec("docs", S))
	met(only, finishedRun(t, only, "search-only-1772436600", -30*time.Minute, v1alpha1.VerdictSLOMet, time.Second, "",
		measured(S, 1400*time.Millisecond, 2210*time.Millisecond, 0, 0)))

	// Streams read across the revocation: cut 140ms after the request,
	// within the 30s SLO (the corpus's exclusion SLO: no delivery SLO set).
	streaming := createCanary(t, ns, "streaming", canarySpec("docs", S, v1alpha1.SurfaceInFlight))
	streamed := finishedRun(t, streaming, "streaming-1772436600", -30*time.Minute, v1alpha1.VerdictSLOMet, time.Second, "",
		measured(S, 1400*time.Millisecond, 2210*time.Millisecond, 0, 0))
	setCanaryStatus(t, streaming, func(s *v1alpha1.RevocationCanaryStatus) {
		s.Conditions = append(ready(metav1.ConditionTrue, "Scheduled", ""), condition("SLOMet", metav1.ConditionTrue, "SLOMet"))
		s.LastRun = summaryOf(streamed)
		s.LastRun.InFlight = &v1alpha1.InFlightSummary{PostRevocationDelivery: dur(140 * time.Millisecond), CanaryBytesAfterRequest: 62,
			Delivery: "140ms", Outcomes: "Cut=1", SLO: dur(30 * time.Second)}
	})

	// Inconclusive: the conversation's follow-ups only failed, so the run
	// holds no conversation measurement at all.
	unmeasured := createCanary(t, ns, "chat-unmeasured", canarySpec("docs", S, C))
	met(unmeasured, finishedRun(t, unmeasured, "chat-unmeasured-1772436600", -30*time.Minute, v1alpha1.VerdictInconclusive, time.Second,
		"probe errors prevented establishing exclusion on the Conversation surface",
		measured(S, time.Second, 2*time.Second, 0, 0)))
}

// surfaceOf is the canary's last-run bounds on surface s, nil when status
// shows none.
func surfaceOf(t *testing.T, f *cli.Fleet, canary string, s v1alpha1.Surface) *cli.SurfaceBounds {
	t.Helper()
	for i := range f.Canaries {
		c := &f.Canaries[i]
		if c.Name != canary {
			continue
		}
		if c.LastRun == nil {
			t.Fatalf("canary %s has no last run", canary)
		}
		for j := range c.LastRun.Surfaces {
			if c.LastRun.Surfaces[j].Surface == string(s) {
				return &c.LastRun.Surfaces[j]
			}
		}
		return nil
	}
	t.Fatalf("no canary %s in %+v", canary, f.Canaries)
	return nil
}

// TestStatusShowsConversation: status shows the Conversation interval
// against its SLO next to Search for the canaries that probe it, "-" for
// one that does not, and an unmeasured conversation as unknown, never 0;
// -o json carries the exact bounds.
func TestStatusShowsConversation(t *testing.T) {
	conversationFixture(t, "conv")
	res := ragcanary(testNow, "status", "-n", "conv")
	if res.code != exitOK {
		t.Errorf("exit code %d, want 0 (no last run breached); stderr: %s", res.code, res.stderr)
	}
	golden(t, "status_conversation.txt", res.stdout)

	res = ragcanary(testNow, "status", "-n", "conv", "-o", "json")
	var f cli.Fleet
	if err := json.Unmarshal([]byte(res.stdout), &f); err != nil {
		t.Fatalf("-o json is not JSON: %v\n%s", err, res.stdout)
	}
	C := v1alpha1.SurfaceConversation
	if s := surfaceOf(t, &f, "chat-grant", C); s == nil || !near(s.LowerSeconds, 3.05) || !near(s.UpperSeconds, 4.3125) || s.SLOSeconds != 30 {
		t.Errorf("chat-grant conversation %+v, want exactly 3.05–4.3125 against SLO 30", s)
	}
	if s := surfaceOf(t, &f, "search-only", C); s != nil {
		t.Errorf("search-only shows a conversation it never probed: %+v", s)
	}
	if s := surfaceOf(t, &f, "chat-unmeasured", C); s == nil || s.LowerSeconds != nil || s.UpperSeconds != nil || s.SLOSeconds != 30 {
		t.Errorf("chat-unmeasured conversation %+v, want probed with no bounds (null, not 0) against SLO 30", s)
	}
	for _, c := range f.Canaries {
		switch {
		case c.Name == "streaming":
			if r := c.LastRun.InFlight; r == nil || !near(r.DeliverySeconds, 0.14) || r.CanaryBytesAfterRequest != 62 || r.SLOSeconds != 30 || r.Outcomes != "Cut=1" {
				t.Errorf("streaming in-flight %+v, want 0.14s, 62 bytes, SLO 30, Cut=1", r)
			}
			if s := surfaceOf(t, &f, "streaming", v1alpha1.SurfaceInFlight); s != nil {
				t.Errorf("InFlight shown as a probed surface with bounds: %+v", s)
			}
		case c.LastRun != nil && c.LastRun.InFlight != nil:
			t.Errorf("%s shows an in-flight measurement it never took: %+v", c.Name, c.LastRun.InFlight)
		}
	}
}

// TestHistoryShowsConversation: history has a Conversation column and a
// spread of its upper bounds, with the right-censored run left out of the
// percentiles rather than counted as a number.
func TestHistoryShowsConversation(t *testing.T) {
	conversationFixture(t, "conv-hist")
	h := historyOf(t, "chat-grant", "conv-hist", "history_conversation.txt")
	var conv *cli.Spread
	for i := range h.Upper {
		if h.Upper[i].Surface == string(v1alpha1.SurfaceConversation) {
			conv = &h.Upper[i]
		}
	}
	if conv == nil || conv.N != 2 || conv.Missing != 1 || !near(conv.P50Seconds, 2.6) || !near(conv.MaxSeconds, 4.3125) || conv.Sparkline != "▅·█" {
		t.Errorf("conversation spread %+v, want n 2 missing 1 p50 2.6 max 4.3125 sparkline ▅·█", conv)
	}

	res := ragcanary(testNow, "history", "search-only", "-n", "conv-hist", "-o", "json")
	h = cli.History{}
	if err := json.Unmarshal([]byte(res.stdout), &h); err != nil {
		t.Fatalf("-o json: %v\n%s", err, res.stdout)
	}
	for _, sp := range h.Upper {
		if sp.Surface == string(v1alpha1.SurfaceConversation) {
			t.Errorf("search-only has a conversation spread %+v", sp)
		}
	}
	for _, r := range h.Runs {
		for _, s := range r.Surfaces {
			if s.Surface == string(v1alpha1.SurfaceConversation) {
				t.Errorf("search-only run %s shows a conversation surface %+v", r.Name, s)
			}
		}
	}
}
