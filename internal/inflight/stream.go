// Package inflight reads answers already streaming when access is revoked
// (the InFlight surface): each stream is watched chunk by chunk, every
// chunk stamped on arrival with the monotonic clock, and what it delivered
// after the revocation request is measured.
package inflight

import (
	"context"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
)

// Bounds on what one stream keeps, whatever a target streams: a hostile
// one may send a million one-byte chunks.
const (
	// keptBefore is how many chunks before the request are kept; only the
	// timeline uses them.
	keptBefore = 256
	// timelineBefore and timelineAfter are the chunks the timeline shows
	// around the request (TimelineMax in all).
	timelineBefore = 16
	timelineAfter  = 48
	// maxMessage bounds a failure's message in status.
	maxMessage = 256
)

type chunk struct {
	at     time.Time
	bytes  int
	canary bool
}

// Stream is one answer watched as it streams. Its methods are safe for
// concurrent use; Watch's goroutine is its only writer of chunks.
type Stream struct {
	payload string
	opened  time.Time
	notify  func()

	mu sync.Mutex
	// tail is the last len(payload)-1 bytes of content: an occurrence of
	// the payload split across chunks completes in the chunk that ends it.
	tail      string
	total     int
	canary    int
	requested time.Time
	// before are the latest chunks before the request (all chunks while it
	// is unknown), at most keptBefore; after are the chunks after it, at
	// most timelineAfter, and the counters below everything after it.
	before, after            []chunk
	afterCanary              int
	afterBytes, afterAtLast  int64
	lastCanary, lastAfterCnr time.Time
	afterTruncated           bool

	done   bool
	end    driver.StreamEnd
	err    error
	endAt  time.Time
	closed chan struct{}
}

// Watch opens one stream of question as persona and reads it to its end
// in a goroutine of its own; notify (may be nil) is called when the stream
// first shows the payload and when it ends, so a reconciler waiting on it
// needs no polling. wait (may be nil) is the target's rate limit, taken
// before the request like every probe's; a wait that fails fails the stream.
func Watch(ctx context.Context, w driver.StreamWatcher, wait func(context.Context) error, persona driver.Token, question, payload string, notify func()) *Stream {
	s := &Stream{payload: payload, notify: notify, closed: make(chan struct{})}
	go func() {
		if wait != nil {
			if err := wait(ctx); err != nil {
				s.finish(driver.StreamEnd{}, err)
				return
			}
		}
		s.mu.Lock()
		s.opened = time.Now()
		s.mu.Unlock()
		end, err := w.WatchStream(ctx, persona, question, s.add)
		s.finish(end, err)
	}()
	return s
}

func (s *Stream) add(c driver.StreamChunk) {
	s.mu.Lock()
	joined := s.tail + c.Content
	found := s.payload != "" && strings.Contains(joined, s.payload)
	if keep := len(s.payload) - 1; len(joined) > keep {
		s.tail = joined[len(joined)-keep:]
	} else {
		s.tail = joined
	}
	first := found && s.canary == 0
	s.record(chunk{at: c.At, bytes: len(c.Content), canary: found})
	s.mu.Unlock()
	if first && s.notify != nil {
		s.notify()
	}
}

// record files a chunk before or after the request; s.mu is held.
func (s *Stream) record(c chunk) {
	s.total++
	if c.canary {
		s.canary++
		s.lastCanary = c.at
	}
	if s.requested.IsZero() || !c.at.After(s.requested) {
		s.before = append(s.before, c)
		if len(s.before) > keptBefore {
			s.before = s.before[1:]
		}
		return
	}
	s.afterBytes += int64(c.bytes)
	if c.canary {
		s.afterCanary++
		s.afterAtLast = s.afterBytes
		s.lastAfterCnr = c.at
	}
	if len(s.after) < timelineAfter {
		s.after = append(s.after, c)
	} else {
		s.afterTruncated = true
	}
}

// Requested tells the stream when the revocation was requested (the
// instant the persisted time was taken from). Chunks that arrived after it
// but were filed before this call are moved after it.
func (s *Stream) Requested(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.requested.IsZero() {
		return
	}
	s.requested = t
	pending := s.before
	s.before = nil
	s.total, s.canary = s.total-len(pending), s.canary-countCanary(pending)
	for _, c := range pending {
		s.record(c)
	}
}

func countCanary(cs []chunk) int {
	n := 0
	for _, c := range cs {
		if c.canary {
			n++
		}
	}
	return n
}

func (s *Stream) finish(end driver.StreamEnd, err error) {
	s.mu.Lock()
	s.done, s.end, s.err, s.endAt = true, end, err, time.Now()
	s.mu.Unlock()
	close(s.closed)
	if s.notify != nil {
		s.notify()
	}
}

// Showing reports whether the stream has delivered canary content; Done
// whether it ended, and how.
func (s *Stream) Showing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.canary > 0
}

// Done reports whether the stream ended; failed when it ended in an error.
func (s *Stream) Done() (done, failed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done, s.err != nil
}

// Closed is closed when the stream ended.
func (s *Stream) Closed() <-chan struct{} { return s.closed }

// Result is the stream's measurement against the revocation request. Call
// it once the stream is done; a stream still open is reported as an Error
// (the run gave up waiting for it).
func (s *Stream) Result() v1alpha1.InFlightStream {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := v1alpha1.InFlightStream{
		OpenedTime: micro(s.opened), Chunks: int32(s.total), CanaryChunks: int32(s.canary),
		CanaryChunksAfterRequest: int32(s.afterCanary), LastCanaryChunkTime: micro(s.lastCanary),
	}
	if s.done {
		out.EndTime = micro(s.endAt)
	}
	out.Timeline, out.TimelineTruncated = s.timeline()
	out.Outcome, out.EndReason, out.Message = s.outcome()
	if s.afterCanary > 0 {
		out.CanaryBytesAfterRequest = s.afterAtLast
		out.PostRevocationDelivery = &metav1.Duration{Duration: s.lastAfterCnr.Sub(s.requested)}
	} else if out.Outcome != v1alpha1.InFlightEndedBeforeRevocation && out.Outcome != v1alpha1.InFlightError {
		out.PostRevocationDelivery = &metav1.Duration{}
	}
	return out
}

// outcome classifies the stream as its client saw it; s.mu is held.
func (s *Stream) outcome() (v1alpha1.InFlightOutcome, string, string) {
	switch {
	case !s.done:
		return v1alpha1.InFlightError, "", "the stream was still open when the run stopped waiting for it"
	case s.err != nil:
		return v1alpha1.InFlightError, "", truncate(s.err.Error(), maxMessage)
	case s.requested.IsZero() || !s.endAt.After(s.requested):
		return v1alpha1.InFlightEndedBeforeRevocation, s.end.Declared, ""
	case s.end.Declared != "" && s.afterCanary > 0:
		// Cut, but only after canary content reached the reader: both
		// are the outcome, so "Cut" never hides a delivery.
		return v1alpha1.InFlightDeliveredThenCut, s.end.Declared, ""
	case s.end.Declared != "":
		return v1alpha1.InFlightCut, s.end.Declared, ""
	case s.afterCanary > 0:
		return v1alpha1.InFlightCompleted, "", ""
	case s.afterBytes > 0:
		return v1alpha1.InFlightReauthorized, "", ""
	}
	// It finished after the request but delivered no content after it.
	return v1alpha1.InFlightEndedBeforeRevocation, "", ""
}

// timeline is the chunks around the request, offsets rounded up to the
// millisecond; s.mu is held.
func (s *Stream) timeline() ([]v1alpha1.InFlightChunk, bool) {
	if s.requested.IsZero() {
		return nil, false
	}
	before := s.before
	truncated := s.afterTruncated || s.total > len(before)+len(s.after)
	if len(before) > timelineBefore {
		before = before[len(before)-timelineBefore:]
		truncated = true
	}
	out := make([]v1alpha1.InFlightChunk, 0, len(before)+len(s.after))
	for _, c := range append(append([]chunk(nil), before...), s.after...) {
		out = append(out, v1alpha1.InFlightChunk{OffsetMillis: ceilMillis(c.at.Sub(s.requested)), Bytes: int32(c.bytes), Canary: c.canary})
	}
	return out, truncated
}

func ceilMillis(d time.Duration) int64 {
	ms := d / time.Millisecond
	if d%time.Millisecond > 0 {
		ms++
	}
	return int64(ms)
}

func micro(t time.Time) *metav1.MicroTime {
	if t.IsZero() {
		return nil
	}
	return &metav1.MicroTime{Time: t}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
