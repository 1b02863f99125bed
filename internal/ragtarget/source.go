package ragtarget

import (
	"slices"
	"sort"
	"sync"
)

// source is the system of record a connector writes to: documents, their
// access lists and group memberships. The index never reads it directly
// except through snapshots taken on its sync schedules, which is what makes
// revocations lag.
type source struct {
	mu     sync.Mutex
	docs   map[string]*sourceDoc
	groups map[string]map[string]struct{}
	// seq numbers content versions so a sync can tell changed documents apart.
	seq uint64
}

type sourceDoc struct {
	title, body    string
	acl            map[string]struct{}
	contentVersion uint64
}

// docSnapshot is an immutable copy of one source document.
type docSnapshot struct {
	id, title, body string
	acl             []string // sorted
	contentVersion  uint64
}

// sourceSnapshot is an immutable copy of the source at one instant.
type sourceSnapshot struct {
	docs   []docSnapshot
	groups map[string][]string // group -> sorted members
}

func newSource() *source {
	return &source{docs: map[string]*sourceDoc{}, groups: map[string]map[string]struct{}{}}
}

// putDocument creates or replaces a document. Unchanged content keeps its
// version, so re-sending a document only changes its access list, which then
// reaches the index on the ACL schedule like any other grant.
func (s *source) putDocument(id, title, body string, principals []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.docs[id]
	if !ok || d.title != title || d.body != body {
		s.seq++
		d = &sourceDoc{title: title, body: body, contentVersion: s.seq}
		s.docs[id] = d
	}
	d.acl = setOf(principals)
}

func (s *source) deleteDocument(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.docs, id)
}

// grant reports false when the document does not exist.
func (s *source) grant(id, principal string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.docs[id]
	if ok {
		d.acl[principal] = struct{}{}
	}
	return ok
}

func (s *source) revoke(id, principal string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.docs[id]; ok {
		delete(d.acl, principal)
	}
}

func (s *source) addMember(group, principal string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.groups[group]
	if !ok {
		m = map[string]struct{}{}
		s.groups[group] = m
	}
	m[principal] = struct{}{}
}

func (s *source) removeMember(group, principal string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.groups[group], principal)
}

// groupsOf returns the groups principal belongs to right now; used when
// groups are resolved at query time.
func (s *source) groupsOf(principal string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for g, members := range s.groups {
		if _, ok := members[principal]; ok {
			out = append(out, g)
		}
	}
	sort.Strings(out)
	return out
}

// members returns the current members of group.
func (s *source) members(group string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sortedKeys(s.groups[group])
}

func (s *source) snapshot() sourceSnapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := sourceSnapshot{docs: make([]docSnapshot, 0, len(s.docs)), groups: make(map[string][]string, len(s.groups))}
	for id, d := range s.docs {
		snap.docs = append(snap.docs, docSnapshot{id: id, title: d.title, body: d.body, acl: sortedKeys(d.acl), contentVersion: d.contentVersion})
	}
	for g, m := range s.groups {
		snap.groups[g] = sortedKeys(m)
	}
	return snap
}

func setOf(items []string) map[string]struct{} {
	m := make(map[string]struct{}, len(items))
	for _, it := range items {
		m[it] = struct{}{}
	}
	return m
}

func sortedKeys(m map[string]struct{}) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
