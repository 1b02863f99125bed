package target

import (
	"crypto/sha256"
	"sync"
)

// shared holds the connections the door opens for corpora (Postgres
// drivers, authorization-engine clients), one per configuration, owned by
// the Door rather than the process.
//
// An entry stays open while anyone holds it — a probe loop for its whole
// stage, a reconcile for its step — or while it is the current
// configuration of some corpus, so the Corpus controller's checks and the
// next run stage reuse it. It is closed as soon as neither is true: a
// replaced configuration (a rotated password, a retargeted corpus) closes
// when its last holder lets go, never under a holder, and never later
// than that.
type shared[T any] struct {
	mu      sync.Mutex
	entries map[configID]*sharedEntry[T]
	current map[string]configID
	close   func(T)
	// opened counts entries ever opened, for tests of churn.
	opened int
}

type sharedEntry[T any] struct {
	v    T
	refs int
}

// configID names a configuration by a hash of its parts, so no map key
// ever holds a credential in the clear.
type configID [32]byte

func idOf(parts ...[]byte) configID {
	h := sha256.New()
	for _, p := range parts {
		h.Write(p)
		h.Write([]byte{0})
	}
	var id configID
	copy(id[:], h.Sum(nil))
	return id
}

func newShared[T any](closeFn func(T)) *shared[T] {
	return &shared[T]{entries: map[configID]*sharedEntry[T]{}, current: map[string]configID{}, close: closeFn}
}

// acquire returns id's value, opening it when no entry exists, and holds it
// until release is called (once; later calls do nothing). When corpus is
// not "", id becomes that corpus's current configuration.
func (s *shared[T]) acquire(corpus string, id configID, open func() (T, error)) (T, func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[id]
	if !ok {
		v, err := open()
		if err != nil {
			var zero T
			return zero, nil, err
		}
		e = &sharedEntry[T]{v: v}
		s.entries[id] = e
		s.opened++
	}
	e.refs++
	if corpus != "" {
		s.setCurrentLocked(corpus, id)
	}
	return e.v, s.releaser(id), nil
}

// hold takes one more hold of id's entry, which its caller holds already.
// Should the entry be gone (a hold taken after the last release, a bug),
// nothing is held: calls through the closed connection fail, and a
// failure is never read as an absence.
func (s *shared[T]) hold(id configID) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[id]
	if !ok {
		return func() {}
	}
	e.refs++
	return s.releaser(id)
}

func (s *shared[T]) releaser(id configID) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if e, ok := s.entries[id]; ok {
				e.refs--
				s.closeIfUnused(id)
			}
		})
	}
}

func (s *shared[T]) setCurrentLocked(corpus string, id configID) {
	old, had := s.current[corpus]
	s.current[corpus] = id
	if had && old != id {
		s.closeIfUnused(old)
	}
}

// forget drops corpus's current configuration (the corpus was deleted);
// it closes once nobody holds it.
func (s *shared[T]) forget(corpus string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.current[corpus]
	if !ok {
		return
	}
	delete(s.current, corpus)
	s.closeIfUnused(id)
}

// closeIfUnused closes id's entry when no one holds it and no corpus has
// it as its current configuration. Called with s.mu held.
func (s *shared[T]) closeIfUnused(id configID) {
	e, ok := s.entries[id]
	if !ok || e.refs > 0 {
		return
	}
	for _, cur := range s.current {
		if cur == id {
			return
		}
	}
	delete(s.entries, id)
	s.close(e.v)
}

// open reports how many entries are open now and how many were ever opened.
func (s *shared[T]) counts() (open, ever int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries), s.opened
}
