package ragtarget

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// faultInjector makes a share of calls slow, fail, hang or return garbage, so
// ragcanary's handling of a broken target (never an absence) can be verified.
type faultInjector struct {
	cfg   Faults
	clock clock.Clock
	next  http.Handler

	mu  sync.Mutex
	rng *rand.Rand
}

func newFaultInjector(cfg Faults, c clock.Clock, next http.Handler) http.Handler {
	seed := cfg.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	return &faultInjector{cfg: cfg, clock: c, next: next, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// fault is the outcome drawn for one request.
type fault int

const (
	faultNone fault = iota
	faultTimeout
	faultError
	faultMalformed
)

func (f *faultInjector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	persona := isPersonaPath(r.URL.Path)
	if !f.inScope(r.URL.Path, persona) {
		f.next.ServeHTTP(w, r)
		return
	}
	// Buffering the body first lets net/http notice a client that gives up
	// during injected latency or a hang, so abandoned requests end promptly.
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeProblem(w, http.StatusBadRequest, "bad_request", "the request body could not be read")
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if f.cfg.Latency > 0 && !waitReal(r, f.cfg.Latency) {
		return
	}
	switch f.draw(persona) {
	case faultTimeout:
		f.hang(r)
	case faultError:
		writeProblem(w, http.StatusServiceUnavailable, "unavailable", "injected fault")
	case faultMalformed:
		// A truncated JSON document with a success status: the reply a crashing
		// proxy or a half-written buffer produces.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"hits":[{"chunkId":"`))
	default:
		f.next.ServeHTTP(w, r)
	}
}

// inScope reports whether the request may receive faults. Health and
// capabilities are never faulted so a faulty target can still be discovered.
func (f *faultInjector) inScope(path string, persona bool) bool {
	source := strings.HasPrefix(path, "/v1/documents/") || strings.HasPrefix(path, "/v1/groups/")
	switch f.cfg.Scope {
	case FaultScopePersona:
		return persona
	case FaultScopeSource:
		return source
	default:
		return persona || source
	}
}

func isPersonaPath(path string) bool {
	return path == "/v1/search" || path == "/v1/answer" || strings.HasPrefix(path, "/v1/conversations")
}

// draw picks at most one fault. Malformed replies only make sense where a
// reply body is parsed, i.e. persona calls.
func (f *faultInjector) draw(persona bool) fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.rng.Float64() < f.cfg.TimeoutRate:
		return faultTimeout
	case f.rng.Float64() < f.cfg.ErrorRate:
		return faultError
	case persona && f.rng.Float64() < f.cfg.MalformedRate:
		return faultMalformed
	default:
		return faultNone
	}
}

// hang holds the request until the client gives up, bounded so an abandoned
// connection is eventually released.
func (f *faultInjector) hang(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-f.clock.After(maxTimeoutHang):
	}
}

// waitReal delays by d of wall time. Latency is what the client experiences,
// so it deliberately ignores the injected clock that drives sync schedules.
func waitReal(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.Context().Done():
		return false
	case <-t.C:
		return true
	}
}
