package ragtarget

// SourceDocuments returns what the system of record holds right now:
// document ID → the principals granted access to it, sorted. It reads the
// source, not the index, so it answers "did the client leave a document or a
// grant behind?" regardless of sync schedules. Read-only, for tests and
// tools; the map is a copy.
func (s *Service) SourceDocuments() map[string][]string {
	s.src.mu.Lock()
	defer s.src.mu.Unlock()
	out := make(map[string][]string, len(s.src.docs))
	for id, d := range s.src.docs {
		out[id] = sortedKeys(d.acl)
	}
	return out
}
