package inflight

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
)

// scripted is a StreamWatcher that delivers the chunks the test sends,
// stamped by the test: the stream's timing is the test's.
type scripted struct {
	chunks chan driver.StreamChunk
	end    driver.StreamEnd
	err    error
}

func (s *scripted) WatchStream(ctx context.Context, _ driver.Token, _ string, onChunk func(driver.StreamChunk)) (driver.StreamEnd, error) {
	for c := range s.chunks {
		onChunk(c)
	}
	return s.end, s.err
}

const payload = "rcpayload0123456789abcdef"

// run streams before, then marks the request, then streams after, and
// returns the result once the stream ended.
func streamAcross(t *testing.T, w *scripted, before, after []string) v1alpha1.InFlightStream {
	t.Helper()
	w.chunks = make(chan driver.StreamChunk)
	notified := make(chan struct{}, 4)
	s := Watch(context.Background(), w, nil, driver.Token(""), "q", payload, func() { notified <- struct{}{} })
	// Chunks are stamped when sent, so every one sent before the request
	// is stamped before it.
	for _, c := range before {
		w.chunks <- driver.StreamChunk{At: time.Now(), Content: c}
	}
	s.Requested(time.Now())
	for _, c := range after {
		w.chunks <- driver.StreamChunk{At: time.Now(), Content: c}
	}
	close(w.chunks)
	<-s.Closed()
	return s.Result()
}

func TestOutcomes(t *testing.T) {
	canary := "its payload is " + payload + " here "
	for _, tc := range []struct {
		name          string
		w             scripted
		before, after []string
		want          v1alpha1.InFlightOutcome
		delivered     bool
	}{
		{"completed with canary content after the request", scripted{end: driver.StreamEnd{Finished: true}},
			[]string{canary}, []string{"and ", canary}, v1alpha1.InFlightCompleted, true},
		{"cut with a declared end, nothing of the canary after the request", scripted{end: driver.StreamEnd{Declared: "access_revoked"}},
			[]string{canary}, []string{"other content"}, v1alpha1.InFlightCut, false},
		// Cut, but late: "Cut" alone would hide the delivery a reader must see.
		{"delivered canary content after the request, then cut", scripted{end: driver.StreamEnd{Declared: "access_revoked"}},
			[]string{canary}, []string{canary}, v1alpha1.InFlightDeliveredThenCut, true},
		{"went on without the canary", scripted{end: driver.StreamEnd{Finished: true}},
			[]string{canary}, []string{"other content"}, v1alpha1.InFlightReauthorized, false},
		{"failed: never a cut", scripted{err: errors.New("connection reset")},
			[]string{canary}, []string{canary}, v1alpha1.InFlightError, true},
		{"ended before the request", scripted{end: driver.StreamEnd{Finished: true}},
			[]string{canary}, nil, v1alpha1.InFlightEndedBeforeRevocation, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.w
			got := streamAcross(t, &w, tc.before, tc.after)
			if got.Outcome != tc.want {
				t.Fatalf("outcome %s (%s), want %s", got.Outcome, got.Message, tc.want)
			}
			if tc.delivered != (got.CanaryChunksAfterRequest > 0) {
				t.Errorf("canary chunks after the request %d, want delivered=%v", got.CanaryChunksAfterRequest, tc.delivered)
			}
			if tc.delivered && (got.PostRevocationDelivery == nil || got.PostRevocationDelivery.Duration <= 0 || got.CanaryBytesAfterRequest == 0) {
				t.Errorf("delivery %v bytes %d, want the content after the request measured", got.PostRevocationDelivery, got.CanaryBytesAfterRequest)
			}
		})
	}
}

// TestPayloadSplitAcrossChunks: a payload cut between chunks is found in
// the chunk that completes it, and only there.
func TestPayloadSplitAcrossChunks(t *testing.T) {
	w := &scripted{end: driver.StreamEnd{Finished: true}}
	half := len(payload) / 2
	got := streamAcross(t, w, []string{"its payload is " + payload[:half]}, []string{payload[half:] + " and on", " more words"})
	if got.CanaryChunks != 1 || got.CanaryChunksAfterRequest != 1 {
		t.Fatalf("canary chunks %d (after %d), want the completing chunk only", got.CanaryChunks, got.CanaryChunksAfterRequest)
	}
	if want := int64(len(payload[half:] + " and on")); got.CanaryBytesAfterRequest != want {
		t.Errorf("bytes after the request %d, want %d (up to the last canary chunk)", got.CanaryBytesAfterRequest, want)
	}
	if got.Outcome != v1alpha1.InFlightCompleted {
		t.Errorf("outcome %s, want Completed", got.Outcome)
	}
}

// TestChunksFiledLateCountAfterTheRequest: a chunk that arrived after the
// request instant but was filed before Requested was called counts after.
func TestChunksFiledLateCountAfterTheRequest(t *testing.T) {
	s := &Stream{payload: payload, closed: make(chan struct{})}
	at := time.Now()
	s.add(driver.StreamChunk{At: at.Add(-time.Second), Content: payload + " one"})
	s.add(driver.StreamChunk{At: at.Add(time.Millisecond), Content: payload + " two"})
	s.Requested(at)
	s.finish(driver.StreamEnd{Finished: true}, nil)
	got := s.Result()
	if got.CanaryChunks != 2 || got.CanaryChunksAfterRequest != 1 || got.PostRevocationDelivery.Duration != time.Millisecond {
		t.Fatalf("%+v, want one canary chunk 1ms after the request", got)
	}
	if len(got.Timeline) != 2 || got.Timeline[0].OffsetMillis != -1000 || got.Timeline[1].OffsetMillis != 1 {
		t.Errorf("timeline %+v, want -1000ms and +1ms", got.Timeline)
	}
}

// TestHostileStreamIsBounded: a million tiny chunks keep what a stream
// holds bounded, and the timeline says it was truncated.
func TestHostileStreamIsBounded(t *testing.T) {
	s := &Stream{payload: payload, closed: make(chan struct{})}
	at := time.Now()
	for i := range 1_000_000 {
		if i == 500_000 {
			s.Requested(at)
		}
		s.add(driver.StreamChunk{At: at.Add(time.Duration(i-500_000) * time.Microsecond), Content: "x"})
	}
	s.finish(driver.StreamEnd{Finished: true}, nil)
	if len(s.before) > keptBefore || len(s.after) > timelineAfter {
		t.Fatalf("kept %d before and %d after, want at most %d and %d", len(s.before), len(s.after), keptBefore, timelineAfter)
	}
	got := s.Result()
	if !got.TimelineTruncated || len(got.Timeline) != timelineBefore+timelineAfter || got.Chunks != 1_000_000 {
		t.Errorf("timeline %d truncated %v chunks %d", len(got.Timeline), got.TimelineTruncated, got.Chunks)
	}
	if got.Outcome != v1alpha1.InFlightReauthorized {
		t.Errorf("outcome %s, want Reauthorized (content after the request, none of it the canary's)", got.Outcome)
	}
}

// TestStillOpenIsAnError: a stream the run stopped waiting for is an
// error, never a cut or an absence.
func TestStillOpenIsAnError(t *testing.T) {
	s := &Stream{payload: payload, closed: make(chan struct{})}
	s.Requested(time.Now())
	got := s.Result()
	if got.Outcome != v1alpha1.InFlightError || got.PostRevocationDelivery != nil || !strings.Contains(got.Message, "still open") {
		t.Fatalf("%+v, want an Error with no delivery", got)
	}
}

func TestAllShowing(t *testing.T) {
	showing := &Stream{payload: payload, closed: make(chan struct{})}
	showing.add(driver.StreamChunk{At: time.Now(), Content: payload})
	waiting := &Stream{payload: payload, closed: make(chan struct{})}
	if all, ended := AllShowing([]*Stream{showing, waiting}); all || ended {
		t.Fatalf("all %v ended %v, want neither while one still waits", all, ended)
	}
	if all, ended := AllShowing([]*Stream{showing}); !all || ended {
		t.Fatalf("all %v ended %v, want all", all, ended)
	}
	waiting.finish(driver.StreamEnd{Finished: true}, nil)
	if all, ended := AllShowing([]*Stream{showing, waiting}); all || !ended {
		t.Fatalf("all %v ended %v, want ended: it can no longer be in flight", all, ended)
	}
	if all, _ := AllShowing(nil); all {
		t.Fatal("no streams are not all showing")
	}
}

func TestLostStreamsAreErrors(t *testing.T) {
	m := Lost(2)
	if len(m.Streams) != 2 || m.Streams[0].Outcome != v1alpha1.InFlightError {
		t.Fatalf("%+v, want two Errors", m)
	}
}

// TestFailedRateLimitWaitFailsTheStream: a stream whose rate-limit wait
// fails (its run stopped) is an Error, never sent.
func TestFailedRateLimitWaitFailsTheStream(t *testing.T) {
	w := &scripted{chunks: make(chan driver.StreamChunk)}
	close(w.chunks)
	s := Watch(context.Background(), w, func(context.Context) error { return context.Canceled }, driver.Token(""), "q", payload, nil)
	<-s.Closed()
	s.Requested(time.Now())
	if got := s.Result(); got.Outcome != v1alpha1.InFlightError || got.OpenedTime != nil {
		t.Fatalf("%+v, want an Error that never opened", got)
	}
}
