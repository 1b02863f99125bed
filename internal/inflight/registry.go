package inflight

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// Registry holds the streams each run has open. The zero value is ready.
// Streams live in this process only: after a restart a run finds none and
// reports what they would have measured as unknown.
type Registry struct {
	mu   sync.Mutex
	runs map[types.NamespacedName]*run
}

type run struct {
	streams []*Stream
	cancel  context.CancelFunc
	release func()
}

// Open starts n streams for key with open, replacing (and stopping) any it
// had; each gets a context the registry cancels on Stop, which also calls
// release (what the streams hold open; may be nil).
func (r *Registry) Open(key types.NamespacedName, n int, release func(), open func(ctx context.Context) *Stream) []*Stream {
	r.Stop(key)
	ctx, cancel := context.WithCancel(context.Background())
	ru := &run{cancel: cancel, release: release}
	for range n {
		ru.streams = append(ru.streams, open(ctx))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.runs == nil {
		r.runs = map[types.NamespacedName]*run{}
	}
	r.runs[key] = ru
	return ru.streams
}

// Streams are key's open streams, nil when it has none here.
func (r *Registry) Streams(key types.NamespacedName) []*Stream {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ru, ok := r.runs[key]; ok {
		return ru.streams
	}
	return nil
}

// Stop cancels key's streams and forgets them.
func (r *Registry) Stop(key types.NamespacedName) {
	r.mu.Lock()
	ru, ok := r.runs[key]
	delete(r.runs, key)
	r.mu.Unlock()
	if ok {
		ru.cancel()
		if ru.release != nil {
			ru.release()
		}
	}
}

// StopAll stops every run's streams: the process is going away.
func (r *Registry) StopAll() {
	r.mu.Lock()
	keys := make([]types.NamespacedName, 0, len(r.runs))
	for k := range r.runs {
		keys = append(keys, k)
	}
	r.mu.Unlock()
	for _, k := range keys {
		r.Stop(k)
	}
}

// Len is how many runs have streams here.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.runs)
}

// Requested tells every stream of key when the revocation was requested.
func Requested(streams []*Stream, t time.Time) {
	for _, s := range streams {
		s.Requested(t)
	}
}

// AllShowing reports whether every stream is delivering canary content
// and still open, and whether any ended: a set in which one ended before
// the revocation request can no longer be in flight across it, and must be
// opened again.
func AllShowing(streams []*Stream) (all, ended bool) {
	all = len(streams) > 0
	for _, s := range streams {
		done, _ := s.Done()
		ended = ended || done
		all = all && s.Showing() && !done
	}
	return all, ended
}

// AllDone reports whether every stream ended.
func AllDone(streams []*Stream) bool {
	for _, s := range streams {
		if done, _ := s.Done(); !done {
			return false
		}
	}
	return true
}

// Measure is the measurement of streams, judged later against the SLO.
func Measure(streams []*Stream) *v1alpha1.InFlightMeasurement {
	m := &v1alpha1.InFlightMeasurement{}
	for _, s := range streams {
		m.Streams = append(m.Streams, s.Result())
	}
	return m
}

// Lost is the measurement of n streams this process no longer holds (the
// operator restarted, or another replica opened them): each an Error.
func Lost(n int) *v1alpha1.InFlightMeasurement {
	m := &v1alpha1.InFlightMeasurement{}
	for range n {
		m.Streams = append(m.Streams, v1alpha1.InFlightStream{Outcome: v1alpha1.InFlightError,
			Message: "the operator restarted while the stream was read, so what it delivered after the revocation request is unknown"})
	}
	return m
}
