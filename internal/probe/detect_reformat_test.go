package probe

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	httpdriver "github.com/ragcanary/ragcanary/internal/driver/http"
	"github.com/ragcanary/ragcanary/internal/measure"
)

// styledTarget is a canary with terms of the shape the operator draws:
// a prefix and 32 lower-case hex digits.
var styledTarget = Target{
	DocumentID: "rc-styled",
	Handle:     "rcanary0f1e2d3c4b5a69788796a5b4c3d2e1f0",
	Payload:    "rcpayload8c1d5e0a9b7f46c2a3e1d0b9c8f7a6e5",
}

// hyphenate breaks s into groups of n runes joined by hyphens, the way a
// model formats a long code for reading.
func hyphenate(s string, n int) string {
	var b strings.Builder
	for i, r := range []rune(s) {
		if i > 0 && i%n == 0 {
			b.WriteByte('-')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// fullWidth writes ASCII letters and digits as their full-width forms,
// which NFKC maps back.
func fullWidth(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '!' && r <= '~' {
			return r - '!' + '！'
		}
		return r
	}, s)
}

// oneCharChanged replaces the last character with another hex digit.
func oneCharChanged(s string) string {
	last := s[len(s)-1]
	repl := byte('0')
	if last == '0' {
		repl = '1'
	}
	return s[:len(s)-1] + string(repl)
}

func TestAnswerShowsStyledPayload(t *testing.T) {
	p, h := styledTarget.Payload, styledTarget.Handle
	mid := len(p) / 2
	tests := []struct {
		name string
		// text is the answer's text; the answer cites nothing, so only a
		// quote of the payload can show the canary.
		text string
		// want is whether the answer shows the canary.
		want bool
	}{
		{name: "verbatim", text: "It says " + p + ".", want: true},
		{name: "upper-cased", text: "It says " + strings.ToUpper(p) + ".", want: true},
		{name: "hyphen-split every 4 characters", text: "Code: " + hyphenate(p, 4), want: true},
		{name: "upper-cased and hyphen-split", text: strings.ToUpper(hyphenate(p, 4)), want: true},
		{name: "split by a zero-width space", text: p[:mid] + "\u200b" + p[mid:], want: true},
		{name: "wrapped in bold", text: "the payload is **" + p + "**", want: true},
		{name: "bold in the middle", text: p[:mid] + "**" + p[mid:] + "**", want: true},
		{name: "italic in the middle", text: p[:mid] + "_" + p[mid:10+mid] + "_" + p[10+mid:], want: true},
		{name: "split by spaces and a line break", text: p[:9] + " " + p[9:20] + "\n" + p[20:], want: true},
		{name: "full-width letters and digits", text: fullWidth(p), want: true},
		{name: "full-width and upper-cased", text: fullWidth(strings.ToUpper(p)), want: true},
		// The handle is the question; echoing it in any style is no sighting.
		{name: "handle only", text: `I found nothing about "` + h + `".`},
		{name: "handle upper-cased and hyphen-split", text: strings.ToUpper(hyphenate(h, 4))},
		{name: "handle next to the prefix of the payload", text: h + " rcpayload"},
		{name: "a different payload", text: "rcpayload0123456789abcdef0123456789abcdef"},
		{name: "the payload with one character changed", text: oneCharChanged(p)},
		{name: "the payload with one character changed, re-styled", text: strings.ToUpper(hyphenate(oneCharChanged(p), 4))},
		{name: "the payload cut short", text: p[:len(p)-1]},
		{name: "nothing", text: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := driver.Answer{Text: tc.text, Citations: []string{}}
			if got := AnswerShows(a, styledTarget); got != tc.want {
				t.Errorf("AnswerShows = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAnswerShowsNeverMatchesAnEmptyPayload(t *testing.T) {
	// A payload of only punctuation normalises to nothing, which every text
	// contains: it must not make every answer a sighting.
	for _, payload := range []string{"", "--", "\u200b"} {
		tg := Target{DocumentID: "rc-x", Handle: "rcanaryh", Payload: payload}
		if AnswerShows(driver.Answer{Text: "anything at all"}, tg) {
			t.Errorf("payload %q: an unrelated answer shows the canary", payload)
		}
	}
}

func TestAnswerShowsLegacyPayload(t *testing.T) {
	// A run planted by an older build keeps its Secret's terms; they are
	// normalised the same way as the answer.
	for _, tc := range []struct {
		name, payload, text string
		want                bool
	}{
		{name: "single token of the first format", payload: "rcanary00ff00ff00ff00ff00ff00ff00ff00ff",
			text: "RCANARY-00FF-00FF-00FF-00FF-00FF-00FF-00FF-00FF", want: true},
		{name: "a term with upper case and hyphens", payload: "RC-Payload-AbC123",
			text: "see rcpayload**abc**123", want: true},
		{name: "a term with upper case, not quoted", payload: "RC-Payload-AbC123", text: "rcpayloadabc124"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := Target{DocumentID: "rc-old", Handle: tc.payload, Payload: tc.payload}
			if got := AnswerShows(driver.Answer{Text: tc.text}, tg); got != tc.want {
				t.Errorf("AnswerShows = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAnswerContentStyledPayloads(t *testing.T) {
	tg := styledTarget
	tg.UpdatedPayload = "rcupdated5b4a39281706f5e4d3c2b1a0f9e8d7c6"
	for _, tc := range []struct {
		name       string
		text       string
		old, fresh measure.Outcome
	}{
		{name: "old version re-styled", text: strings.ToUpper(hyphenate(tg.Payload, 4)),
			old: measure.Present, fresh: measure.Absent},
		{name: "new version in bold", text: "**" + tg.UpdatedPayload[:12] + "**" + tg.UpdatedPayload[12:],
			old: measure.Absent, fresh: measure.Present},
		{name: "handle echoed, re-styled", text: strings.ToUpper(tg.Handle),
			old: measure.Absent, fresh: measure.Absent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, fresh := AnswerContent(driver.Answer{Text: tc.text, Citations: []string{}}, tg)
			if old != tc.old || fresh != tc.fresh {
				t.Errorf("old %s new %s, want old %s new %s", old, fresh, tc.old, tc.fresh)
			}
		})
	}
	// Without an updated payload nothing can show the new version.
	noUpdate := styledTarget
	if _, fresh := AnswerContent(driver.Answer{Text: "anything", Citations: []string{}}, noUpdate); fresh != measure.Absent {
		t.Errorf("no updated payload: new %s, want absent", fresh)
	}
}

// stylingTarget is an http-contract server whose answer surface re-styles
// what it quotes, as a model might: the answer repeats the question and,
// for a persona granted a document holding the question's term, quotes that
// document upper-cased and in hyphenated groups of four, citing nothing.
// Documents and grants come through the contract's source API.
type stylingTarget struct {
	sourceToken string
	principals  map[string]string // persona token → principal

	mu   sync.Mutex
	docs map[string]*stylingDoc
}

type stylingDoc struct {
	body   string
	grants map[string]bool
}

func newStylingTarget(sourceToken string, principals map[string]string) *stylingTarget {
	return &stylingTarget{sourceToken: sourceToken, principals: principals, docs: map[string]*stylingDoc{}}
}

func (s *stylingTarget) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /v1/documents/{id}", s.source(s.putDocument))
	mux.HandleFunc("DELETE /v1/documents/{id}/grants/{principal}", s.source(s.deleteGrant))
	mux.HandleFunc("POST /v1/answer", s.answer)
	return mux
}

func (s *stylingTarget) source(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+s.sourceToken {
			problem(w, http.StatusUnauthorized, "unauthorized")
			return
		}
		next(w, r)
	}
}

func (s *stylingTarget) putDocument(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Body       string   `json:"body"`
		Principals []string `json:"principals"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		problem(w, http.StatusBadRequest, "bad_request")
		return
	}
	doc := &stylingDoc{body: in.Body, grants: map[string]bool{}}
	for _, p := range in.Principals {
		doc.grants[p] = true
	}
	s.mu.Lock()
	s.docs[r.PathValue("id")] = doc
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (s *stylingTarget) deleteGrant(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if doc := s.docs[r.PathValue("id")]; doc != nil {
		delete(doc.grants, r.PathValue("principal"))
	}
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (s *stylingTarget) answer(w http.ResponseWriter, r *http.Request) {
	principal, ok := s.principals[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
	var in struct {
		Question string `json:"question"`
	}
	if !ok {
		problem(w, http.StatusUnauthorized, "unauthorized")
		return
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		problem(w, http.StatusBadRequest, "bad_request")
		return
	}
	text := "You asked about " + restyle(in.Question) + "."
	s.mu.Lock()
	for _, doc := range s.docs {
		if doc.grants[principal] && strings.Contains(doc.body, in.Question) {
			text += " Your documents say: " + restyle(doc.body)
		}
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"answer": text, "citations": []string{}})
}

// restyle upper-cases every word and breaks it into hyphenated groups of four.
func restyle(text string) string {
	words := strings.Fields(text)
	for i, w := range words {
		words[i] = strings.ToUpper(hyphenate(w, 4))
	}
	return strings.Join(words, " ")
}

func problem(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"code": code, "message": code})
}

// TestAnswerProbeSeesRestyledPayload plants a canary on a target whose
// answers re-style every quote, over real HTTP through the HTTP driver: the
// persona's answer shows the canary while granted and not after the grant
// is removed, and a control persona never sees it, although every answer
// echoes the handle.
func TestAnswerProbeSeesRestyledPayload(t *testing.T) {
	const (
		sourceToken = "styling-source-token"
		alice       = driver.Token("styling-alice-token")
		bob         = driver.Token("styling-bob-token")
	)
	st := newStylingTarget(sourceToken, map[string]string{alice.Reveal(): "user:alice", bob.Reveal(): "user:bob"})
	srv := httptest.NewServer(st.handler())
	t.Cleanup(srv.Close)
	d, err := httpdriver.New(httpdriver.Config{BaseURL: srv.URL, SourceToken: sourceToken, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tg := styledTarget
	body := "This document is a ragcanary revocation canary. Its handle is " + tg.Handle + " and its payload is " + tg.Payload
	if err := d.CreateDocument(ctx, driver.Document{ID: tg.DocumentID, Title: "canary", Body: body, Principals: []string{"user:alice"}}); err != nil {
		t.Fatal(err)
	}

	// The reply really is re-styled: the payload is not in it verbatim.
	a, err := d.Answer(ctx, alice, tg.Handle)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(a.Text, tg.Payload) || len(a.Citations) != 0 {
		t.Fatalf("the target quoted the payload verbatim or cited it: the test would not exercise re-styling")
	}

	if got := Probe(ctx, d, v1alpha1.SurfaceAnswer, alice, tg); got != measure.Present {
		t.Errorf("granted persona before the revocation: %s, want present", got)
	}
	if got := Probe(ctx, d, v1alpha1.SurfaceAnswer, bob, tg); got != measure.Absent {
		t.Errorf("control persona whose answer echoes the handle: %s, want absent", got)
	}
	if err := d.Revoke(ctx, tg.DocumentID, "user:alice"); err != nil {
		t.Fatal(err)
	}
	if got := Probe(ctx, d, v1alpha1.SurfaceAnswer, alice, tg); got != measure.Absent {
		t.Errorf("persona after the revocation: %s, want absent", got)
	}
}
