package probe

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/driver"
	httpdriver "github.com/ragcanary/ragcanary/internal/driver/http"
	"github.com/ragcanary/ragcanary/internal/measure"
	"github.com/ragcanary/ragcanary/internal/target"
)

// testTarget is a canary whose handle and payload are distinct rare terms.
var testTarget = Target{DocumentID: "rc-abc", Handle: "rcanaryhandle123", Payload: "rcpayload456"}

func TestDetection(t *testing.T) {
	tests := []struct {
		name string
		// hits of a search reply.
		hits []driver.Hit
		// answer reply.
		answer driver.Answer
		// wantSearch, wantAnswer: whether each surface shows the canary.
		wantSearch, wantAnswer bool
	}{
		{name: "hit on the canary document", hits: []driver.Hit{{ChunkID: "rc-abc#0", DocumentID: "rc-abc"}}, wantSearch: true},
		{name: "hit on a chunk of the canary document", hits: []driver.Hit{{ChunkID: "rc-abc#1"}}, wantSearch: true},
		{name: "other documents only", hits: []driver.Hit{{ChunkID: "rc-abcd#0", DocumentID: "rc-abcd"}},
			answer: driver.Answer{Text: "nothing", Citations: []string{"rc-abcd#0"}}},
		// Real assistants repeat the question; the handle is the question.
		{name: "answer echoes the handle", answer: driver.Answer{
			Text: `I could not find anything about "rcanaryhandle123".`, Citations: []string{}}},
		{name: "answer echoes the handle and cites another document", answer: driver.Answer{
			Text: "rcanaryhandle123 is not mentioned in [other#0]", Citations: []string{"other#0"}}},
		{name: "answer repeats the payload", answer: driver.Answer{Text: "it says rcpayload456"}, wantAnswer: true},
		{name: "answer cites a canary passage", answer: driver.Answer{Text: "see", Citations: []string{"rc-abc#2"}}, wantAnswer: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := SearchShows(tc.hits, testTarget); got != tc.wantSearch {
				t.Errorf("search shows = %v, want %v", got, tc.wantSearch)
			}
			if got := AnswerShows(tc.answer, testTarget); got != tc.wantAnswer {
				t.Errorf("answer shows = %v, want %v", got, tc.wantAnswer)
			}
		})
	}
}

// echoTarget is a hostile http-contract server: search never finds
// anything, and every answer repeats the question verbatim, as LLM
// assistants do when they find nothing. Personas in leaky get the canary
// passage, payload included, quoted as well.
type echoTarget struct {
	leaky map[string]bool

	mu       sync.Mutex
	requests []string // every query and question received
}

func (e *echoTarget) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Query    string `json:"query"`
		Question string `json:"question"`
	}
	if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&body) != nil {
		http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
		return
	}
	e.mu.Lock()
	e.requests = append(e.requests, body.Query+body.Question)
	e.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/v1/search":
		_, _ = w.Write([]byte(`{"hits":[]}`))
	case "/v1/answer":
		text := `I could not find anything you have access to about "` + body.Question + `".`
		if e.leaky[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")] {
			text += " Related: the canary payload is " + testTarget.Payload
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"answer": text, "citations": []string{}})
	default:
		http.NotFound(w, r)
	}
}

func (e *echoTarget) received() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.requests...)
}

func startEchoTarget(t *testing.T, leaky ...driver.Token) (*echoTarget, driver.Driver) {
	t.Helper()
	et := &echoTarget{leaky: map[string]bool{}}
	for _, p := range leaky {
		et.leaky[p.Reveal()] = true
	}
	srv := httptest.NewServer(et)
	t.Cleanup(srv.Close)
	d, err := httpdriver.New(httpdriver.Config{BaseURL: srv.URL, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return et, d
}

// TestEchoedHandleIsNoIsolationViolation probes, over real HTTP, a target
// whose answers echo the question: a control persona never sees the
// canary, so no round may count an isolation violation.
func TestEchoedHandleIsNoIsolationViolation(t *testing.T) {
	et, d := startEchoTarget(t)
	e := NewEngine(clock.RealClock{}, target.NewLimiters(clock.RealClock{}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = e.Start(ctx) }()
	key := types.NamespacedName{Namespace: "ns", Name: "echo"}
	defer e.Stop(key)

	p := newPlan(StageVisibility, d)
	p.Surfaces = []v1alpha1.Surface{v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer}
	p.Target = testTarget
	st := e.Ensure(key, p)
	testutil.EventuallyTrue(t, waitTimeout, "five rounds", func() bool { return st.Snapshot().Rounds >= 5 })
	s := st.Snapshot()
	if s.IsolationViolations != 0 {
		t.Fatalf("%d isolation violations from answers that only echo the question", s.IsolationViolations)
	}
	if s.AllVisible {
		t.Fatal("the canary looks visible to the persona on a target that never returns it")
	}

	// The probes did ask by the handle, so the answers did echo it, and the
	// payload never left ragcanary.
	sent := et.received()
	if !slices.Contains(sent, testTarget.Handle) {
		t.Fatalf("no probe asked by the handle: %q", sent)
	}
	for _, q := range sent {
		if strings.Contains(q, testTarget.Payload) {
			t.Fatalf("a probe sent the payload: %q", q)
		}
	}
}

// TestAnswerProbeOverHTTP classifies real replies: the echo alone is an
// absence (not an error), the payload quoted is a sighting.
func TestAnswerProbeOverHTTP(t *testing.T) {
	_, d := startEchoTarget(t, persona)
	ctx := context.Background()
	if got := Probe(ctx, d, v1alpha1.SurfaceAnswer, control, testTarget); got != measure.Absent {
		t.Errorf("control persona's echoed answer: %v, want absent", got)
	}
	if got := Probe(ctx, d, v1alpha1.SurfaceAnswer, persona, testTarget); got != measure.Present {
		t.Errorf("persona's answer quoting the payload: %v, want present", got)
	}
	if got := Probe(ctx, d, v1alpha1.SurfaceSearch, control, testTarget); got != measure.Absent {
		t.Errorf("empty search: %v, want absent", got)
	}
}
