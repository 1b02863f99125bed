package ragtarget_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/ragcanary/ragcanary/internal/dev/openfgatest"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/targettest"
	"github.com/ragcanary/ragcanary/internal/driver"
	httpdriver "github.com/ragcanary/ragcanary/internal/driver/http"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// Pacing of the real-time stream tests: the ACL sync applies a revocation
// within streamACLSync of the request, long before a stream of some thirty
// chunks streamChunkEvery apart ends. streamSlack absorbs scheduling on a
// loaded machine in the timing bounds only; the chunk counts are exact.
const (
	streamChunkEvery = 100 * time.Millisecond
	streamACLSync    = 230 * time.Millisecond
	streamSlack      = 200 * time.Millisecond
	streamWait       = 20 * time.Second
)

// streamBody repeats the payload word in every sentence, so every passage
// (and every chunk of the answer quoting it) carries the canary.
var streamBody = strings.Repeat("the zebrafinch payload sentence travels in every chunk of this canary. ", 14)

// applyWatch is a log handler noting when the ACL sync applied a change to
// one document: ragtarget logs "index sync applied" right after the index
// changed, the ground truth a cut is timed against.
type applyWatch struct {
	doc string
	mu  sync.Mutex
	at  time.Time
}

func (a *applyWatch) Enabled(context.Context, slog.Level) bool { return true }
func (a *applyWatch) WithAttrs([]slog.Attr) slog.Handler       { return a }
func (a *applyWatch) WithGroup(string) slog.Handler            { return a }

func (a *applyWatch) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "index sync applied" {
		return nil
	}
	var kind string
	var docs []string
	r.Attrs(func(at slog.Attr) bool {
		switch at.Key {
		case "kind":
			kind = at.Value.String()
		case "documents":
			docs = strings.Split(at.Value.String(), ",")
		}
		return true
	})
	if kind == string(ragtarget.SyncACL) && slices.Contains(docs, a.doc) {
		a.mu.Lock()
		if a.at.IsZero() {
			a.at = time.Now()
		}
		a.mu.Unlock()
	}
	return nil
}

func (a *applyWatch) applied() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.at
}

// liveEnv is a ragtarget on the real clock with a fast ACL sync, served over
// real HTTP: stream timings are wall-clock measurements.
type liveEnv struct {
	t     *testing.T
	svc   *ragtarget.Service
	drv   *httpdriver.Driver
	url   string
	watch *applyWatch
}

func startLive(t *testing.T, cfg ragtarget.Config) *liveEnv {
	t.Helper()
	watch := &applyWatch{doc: "doc-1"}
	cfg.SourceToken = sourceToken
	cfg.Tokens = map[string]string{alice.Reveal(): "user:alice", bob.Reveal(): "user:bob"}
	cfg.ContentSyncInterval, cfg.ACLSyncInterval = time.Hour, streamACLSync
	cfg.ChunkWords, cfg.AnswerPassages = 40, 3
	cfg.StreamChunkInterval = streamChunkEvery
	cfg.Logger = slog.New(watch)
	tg := targettest.Start(t, cfg)
	e := &liveEnv{t: t, svc: tg.Service, drv: tg.Driver(t, 5*time.Second), url: tg.URL, watch: watch}
	must(t, e.drv.CreateDocument(context.Background(), driver.Document{ID: "doc-1", Title: "Doc doc-1", Body: streamBody, Principals: []string{"user:alice"}}))
	must(t, tg.SyncNow(ragtarget.SyncContent))
	return e
}

// sseEvent is one data event and when the client read it.
type sseEvent struct {
	at   time.Time
	data string
}

// liveStream reads a raw chat stream in the background, stamping each event
// on arrival, so a revocation can be made while it flows.
type liveStream struct {
	events <-chan sseEvent
	cancel context.CancelFunc
}

func openStream(t *testing.T, url string, token driver.Token, question string) *liveStream {
	t.Helper()
	return openStreamFor(t, t, url, token, question)
}

// openStreamFor is openStream for a stream that lives as long as life,
// which may outlive t.
func openStreamFor(t *testing.T, life testing.TB, url string, token driver.Token, question string) *liveStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	life.Cleanup(cancel)
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"` + question + `"}]}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	must(t, err)
	req.Header.Set("Authorization", "Bearer "+token.Reveal())
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream reply %d %q, want a 200 event stream", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := make(chan sseEvent, 256)
	go func() {
		defer close(events)
		defer func() { _ = resp.Body.Close() }()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- sseEvent{at: time.Now(), data: data}
			}
		}
	}()
	return &liveStream{events: events, cancel: cancel}
}

// next returns the next event; false once the stream ended.
func (s *liveStream) next(t *testing.T) (sseEvent, bool) {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		return ev, ok
	case <-time.After(streamWait):
		t.Fatalf("no stream event within %s", streamWait)
		return sseEvent{}, false
	}
}

// streamLog is what a stream delivered, classified.
type streamLog struct {
	content  []sseEvent // events whose delta carries text; data is the text
	finish   string
	errType  string // the declared end of a cut stream, "" otherwise
	errCode  string
	endedAt  time.Time // when the finish or error event arrived
	done     bool      // [DONE] arrived, and last
	trailing int       // events after [DONE]
}

func (l *streamLog) add(t *testing.T, ev sseEvent) {
	t.Helper()
	if l.done {
		l.trailing++
		return
	}
	if ev.data == "[DONE]" {
		l.done = true
		return
	}
	var msg struct {
		Choices []struct {
			Delta struct {
				Content string `json:"content"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Error *struct {
			Type string  `json:"type"`
			Code *string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(ev.data), &msg); err != nil {
		t.Fatalf("event %q is not JSON: %v", ev.data, err)
	}
	switch {
	case msg.Error != nil:
		l.errType, l.endedAt = msg.Error.Type, ev.at
		if msg.Error.Code != nil {
			l.errCode = *msg.Error.Code
		}
	case len(msg.Choices) != 1:
		t.Fatalf("event %q has %d choices", ev.data, len(msg.Choices))
	case msg.Choices[0].FinishReason != nil:
		l.finish, l.endedAt = *msg.Choices[0].FinishReason, ev.at
	case msg.Choices[0].Delta.Content != "":
		l.content = append(l.content, sseEvent{at: ev.at, data: msg.Choices[0].Delta.Content})
	}
}

// drain reads the stream to its end.
func (s *liveStream) drain(t *testing.T, l *streamLog) {
	t.Helper()
	for ev, ok := s.next(t); ok; ev, ok = s.next(t) {
		l.add(t, ev)
	}
}

// readContent reads until n content events arrived.
func (s *liveStream) readContent(t *testing.T, l *streamLog, n int) {
	t.Helper()
	for len(l.content) < n {
		ev, ok := s.next(t)
		if !ok {
			t.Fatalf("the stream ended after %d content chunks, want %d", len(l.content), n)
		}
		l.add(t, ev)
	}
}

// delivery is the post-revocation delivery of one stream.
type delivery struct {
	lastContent  time.Duration // request → last content chunk; negative when none came after
	bytesAfter   int           // content bytes read after the request
	afterApplied int           // content chunks read after the sync applied it
}

func measure(l streamLog, requested, applied time.Time) delivery {
	d := delivery{lastContent: -1}
	for _, c := range l.content {
		if c.at.After(requested) {
			d.bytesAfter += len(c.data)
			d.lastContent = c.at.Sub(requested)
		}
		if c.at.After(applied) {
			d.afterApplied++
		}
	}
	return d
}

// revokeAfter are the content chunks a stream delivers before the grant is
// revoked: the revocation falls at different phases of the ACL sync (every
// 230 ms against chunks every 100 ms), so the sync applies it between 0 and
// one interval after the request.
var revokeAfter = []int{2, 3, 5}

// revokeMidStream streams alice's answer, revokes her grant after n
// content chunks, reads the stream to its end and returns it with when the
// revocation was requested and when the ACL sync applied it.
func (e *liveEnv) revokeMidStream(n int) (l streamLog, requested, applied time.Time) {
	e.t.Helper()
	s := openStream(e.t, e.url, alice, "zebrafinch")
	s.readContent(e.t, &l, n)
	requested = time.Now()
	must(e.t, e.drv.Revoke(context.Background(), "doc-1", "user:alice"))
	s.drain(e.t, &l)
	testutil.EventuallyTrue(e.t, 5*time.Second, "the ACL sync applied the revocation", func() bool { return !e.watch.applied().IsZero() })
	applied = e.watch.applied()
	e.t.Logf("applied %s after the request; %d content chunks in all", applied.Sub(requested).Round(time.Millisecond), len(l.content))
	return l, requested, applied
}

func (d delivery) log(t *testing.T, mode string) {
	t.Helper()
	last := "none"
	if d.lastContent >= 0 {
		last = d.lastContent.Round(time.Millisecond).String()
	}
	t.Logf("%s: last content chunk %s after the revocation request, %d content bytes after it, %d chunks after the sync applied it",
		mode, last, d.bytesAfter, d.afterApplied)
}

// TestStreamWithoutReauthorizationRunsToTheEnd: with no re-checks, a stream
// begun before a revocation keeps delivering the revoked document's content
// after the ACL sync applied it, paced by the chunk interval, and ends as a
// completed stream.
func TestStreamWithoutReauthorizationRunsToTheEnd(t *testing.T) {
	for _, n := range revokeAfter {
		t.Run(fmt.Sprintf("revoked-after-%d", n), func(t *testing.T) {
			e := startLive(t, ragtarget.Config{})
			l, requested, applied := e.revokeMidStream(n)
			d := measure(l, requested, applied)
			d.log(t, "none")
			if l.errType != "" || l.finish != "stop" || !l.done || l.trailing != 0 {
				t.Fatalf("stream ended with error %q, finish %q, [DONE] %v: want a completed stream", l.errType, l.finish, l.done)
			}
			if d.afterApplied < 5 {
				t.Fatalf("%d content chunks after the sync applied the revocation, want the stream to keep delivering", d.afterApplied)
			}
			if span, paced := l.content[len(l.content)-1].at.Sub(l.content[0].at), time.Duration(len(l.content)-2)*streamChunkEvery; span < paced {
				t.Fatalf("%d content chunks arrived within %s, want them paced %s apart", len(l.content), span, streamChunkEvery)
			}
		})
	}
}

// TestStreamReauthorizedPerChunkIsCutAtTheACLSync: re-checking before every
// chunk lets at most one more content chunk through once the sync applied
// the revocation, then declares access_revoked and [DONE].
func TestStreamReauthorizedPerChunkIsCutAtTheACLSync(t *testing.T) {
	for _, n := range revokeAfter {
		t.Run(fmt.Sprintf("revoked-after-%d", n), func(t *testing.T) {
			e := startLive(t, ragtarget.Config{StreamReauthorize: ragtarget.StreamReauthorize{Mode: ragtarget.ReauthorizePerChunk}})
			l, requested, applied := e.revokeMidStream(n)
			d := measure(l, requested, applied)
			d.log(t, "per-chunk")
			wantCut(t, l)
			if d.afterApplied > 1 {
				t.Fatalf("%d content chunks after the sync applied the revocation, want at most 1", d.afterApplied)
			}
			if lag := l.endedAt.Sub(applied); lag > streamChunkEvery+streamSlack {
				t.Fatalf("cut %s after the sync applied the revocation, want within one chunk interval (%s)", lag, streamChunkEvery)
			}
		})
	}
}

// TestStreamReauthorizedOnIntervalIsCutWithinIt: re-checking every D cuts
// the stream within D and one chunk interval of the sync applying the
// revocation.
func TestStreamReauthorizedOnIntervalIsCutWithinIt(t *testing.T) {
	const every = 400 * time.Millisecond
	for _, n := range revokeAfter {
		t.Run(fmt.Sprintf("revoked-after-%d", n), func(t *testing.T) {
			e := startLive(t, ragtarget.Config{StreamReauthorize: ragtarget.StreamReauthorize{Mode: ragtarget.ReauthorizeInterval, Every: every}})
			l, requested, applied := e.revokeMidStream(n)
			d := measure(l, requested, applied)
			d.log(t, "interval="+every.String())
			wantCut(t, l)
			if lag := l.endedAt.Sub(applied); lag > every+streamChunkEvery+streamSlack {
				t.Fatalf("cut %s after the sync applied the revocation, want within %s and one chunk interval", lag, every)
			}
		})
	}
}

// wantCut wants the declared end of a revoked stream: the access_revoked
// error object as the last data event, then [DONE], no finish reason.
func wantCut(t *testing.T, l streamLog) {
	t.Helper()
	if l.errType != "access_revoked" || l.errCode != "access_revoked" || l.finish != "" || !l.done || l.trailing != 0 {
		t.Fatalf("stream ended with error %q (code %q), finish %q, [DONE] %v then %d events: want access_revoked, then [DONE]",
			l.errType, l.errCode, l.finish, l.done, l.trailing)
	}
}

// TestStreamStopsWhenTheClientGoes: a stream waiting out a long chunk
// interval ends as soon as its client leaves; it never waits the interval.
func TestStreamStopsWhenTheClientGoes(t *testing.T) {
	var logs testutil.LockedBuffer
	e := start(t, ragtarget.Config{StreamChunkInterval: time.Hour,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	e.plant()
	url := e.url
	// The access log writes its line when the handler returns.
	const served = "path=/v1/chat/completions"
	returned := func() bool { return strings.Contains(logs.String(), served) }
	// Should the stream ignore its client, stepping the clock releases it
	// chunk by chunk, so the failure is reported instead of the server's
	// close hanging.
	t.Cleanup(func() {
		if t.Failed() {
			testutil.EventuallyTrue(t, 5*time.Second, "the stream released", func() bool { e.clk.Step(time.Hour); return returned() })
		}
	})
	s := openStream(t, url, alice, question)
	if _, ok := s.next(t); !ok {
		t.Fatal("the stream ended before its first event")
	}
	if returned() {
		t.Fatal("the stream ended without waiting for its next chunk")
	}
	s.cancel()
	testutil.EventuallyTrue(t, 5*time.Second, "the stream handler returned after the client left", returned)
}

// TestStreamReauthorizationCatchesAStaleCachedAnswer: under the stale-cache
// defect the cached answer still quotes the revoked passage; without
// re-checks it streams in full, with per-chunk the stream declares
// access_revoked before its first content chunk, and the official SDK
// reports that as a stream error naming the type.
func TestStreamReauthorizationCatchesAStaleCachedAnswer(t *testing.T) {
	for _, mode := range []ragtarget.ReauthorizeMode{ragtarget.ReauthorizeNone, ragtarget.ReauthorizePerChunk} {
		t.Run(string(mode), func(t *testing.T) {
			e := start(t, ragtarget.Config{ACLSyncInterval: 3 * time.Second, AnswerCacheTTL: time.Hour, CacheIgnoresACLChanges: true,
				StreamReauthorize: ragtarget.StreamReauthorize{Mode: mode}})
			e.plant()
			c := chatClient(e.url, alice.Reveal())
			chat(t, c, openai.UserMessage(question))
			must(t, e.drv.Revoke(context.Background(), "doc-1", "user:alice"))
			e.advanceTo(3 * time.Second)
			if e.visible(alice, "zebrafinch", "doc-1") {
				t.Fatal("the ACL sync did not apply the revocation")
			}
			stream := c.Chat.Completions.NewStreaming(context.Background(), chatParams(openai.UserMessage(question)))
			defer func() { _ = stream.Close() }()
			var content strings.Builder
			for stream.Next() {
				for _, ch := range stream.Current().Choices {
					content.WriteString(ch.Delta.Content)
				}
			}
			var cut *ssestream.StreamError
			isCut := errors.As(stream.Err(), &cut) && strings.Contains(string(cut.Event.Data), `"type":"access_revoked"`)
			switch {
			case mode == ragtarget.ReauthorizeNone && (stream.Err() != nil || !strings.Contains(content.String(), "near the river")):
				t.Fatalf("without re-checks: content %q, error %v; want the stale answer in full", content.String(), stream.Err())
			case mode == ragtarget.ReauthorizePerChunk && (!isCut || content.Len() != 0):
				t.Fatalf("per-chunk: content %q, error %v; want access_revoked before any content", content.String(), stream.Err())
			}
		})
	}
}

// TestStreamReauthorizationAsksTheEngine: with OpenFGA deciding, a re-check
// asks it as search does (ListObjects for prefilter, Check for postfilter):
// a revoked tuple cuts the stream within a chunk, and a stopped OpenFGA
// ends it with authorization_unavailable, never as a completed stream.
func TestStreamReauthorizationAsksTheEngine(t *testing.T) {
	cfg := ragtarget.Config{StreamChunkInterval: 2 * streamChunkEvery, ChunkWords: 40, AnswerPassages: 3,
		StreamReauthorize: ragtarget.StreamReauthorize{Mode: ragtarget.ReauthorizePerChunk}}
	body := strings.Repeat("aurora borealis payload sentence travels in every chunk. ", 16)
	held := map[ragtarget.FilterMode]*liveStream{}
	heldLogs := map[ragtarget.FilterMode]*streamLog{}
	// OpenFGA lives as long as this subtest; the services and the held
	// streams as long as the test.
	if !t.Run("serving", func(st *testing.T) {
		fga := openfgatest.Start(st, openfgatest.Options{})
		for _, filter := range fgaFilters {
			ctx := context.Background()
			e := startFGAFor(st, t, fga, ragtarget.OpenFGAAuthz{Filter: filter}, cfg)
			e.index(map[string]string{"revoked": strings.ReplaceAll(body, "borealis", "revokedword"),
				"held": strings.ReplaceAll(body, "aurora", "heldword")})
			must(st, e.perms.Grant(ctx, "revoked", "alice"))
			must(st, e.perms.Grant(ctx, "held", "alice"))

			var l streamLog
			s := openStream(st, e.url, fgaAlice, "revokedword")
			s.readContent(st, &l, 2)
			must(st, e.perms.Revoke(ctx, "revoked", "alice"))
			revoked := time.Now()
			s.drain(st, &l)
			wantCut(st, l)
			if d := measure(l, revoked, revoked); d.afterApplied > 1 {
				st.Fatalf("%s: %d content chunks after OpenFGA held the revocation, want at most 1", filter, d.afterApplied)
			}

			heldLogs[filter] = &streamLog{}
			held[filter] = openStreamFor(st, t, e.url, fgaAlice, "heldword")
			held[filter].readContent(st, heldLogs[filter], 1)
		}
	}) {
		t.FailNow()
	}
	for filter, s := range held {
		l := heldLogs[filter]
		s.drain(t, l)
		if l.errType != "authorization_unavailable" || l.finish != "" || !l.done {
			t.Fatalf("%s with OpenFGA stopped: error %q, finish %q, [DONE] %v after %d content chunks; want authorization_unavailable",
				filter, l.errType, l.finish, l.done, len(l.content))
		}
	}
}

// TestStreamAndDigestSettingsRefused: New refuses settings the streaming
// and digest code cannot run with, saying which.
func TestStreamAndDigestSettingsRefused(t *testing.T) {
	for _, tc := range []struct {
		cfg ragtarget.Config
		// want is in New's error.
		want string
	}{
		{ragtarget.Config{StreamChunkInterval: -time.Second}, "the stream chunk interval must not be negative"},
		{ragtarget.Config{StreamReauthorize: ragtarget.StreamReauthorize{Mode: ragtarget.ReauthorizeInterval}}, "needs a positive period"},
		{ragtarget.Config{StreamReauthorize: ragtarget.StreamReauthorize{Mode: ragtarget.ReauthorizePerChunk, Every: time.Second}}, "per-chunk takes no period"},
		{ragtarget.Config{StreamReauthorize: ragtarget.StreamReauthorize{Mode: "sometimes"}}, `"sometimes" is not one of none, per-chunk, interval=D`},
		{ragtarget.Config{DigestInterval: -time.Second}, "the digest interval must not be negative"},
		{ragtarget.Config{DigestACL: "owner"}, `digest ACL "owner" is not one of`},
		{ragtarget.Config{DigestInterval: time.Minute, OpenFGA: &ragtarget.OpenFGAAuthz{URL: "http://127.0.0.1:1", Store: "s"}}, "digests need the index's own access lists"},
	} {
		tc.cfg.SourceToken = sourceToken
		if _, err := ragtarget.New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error saying %q", tc.cfg, err, tc.want)
		}
	}
}
