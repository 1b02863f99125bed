package ragtarget

import (
	"slices"
	"sync"
	"sync/atomic"
)

// SyncKind names one of the independent sync schedules.
type SyncKind string

const (
	// SyncContent picks up new, changed and deleted documents.
	SyncContent SyncKind = "content"
	// SyncACL picks up grant, revocation and membership changes.
	SyncACL SyncKind = "acl"
	// SyncGroups reads group memberships from the directory (groups.go);
	// it runs only when Config.Groups is set.
	SyncGroups SyncKind = "groups"
)

// indexer owns the primary replica and feeds every change to the lagging
// replicas. Syncs are serialized because each diffs the source against the
// primary's current state.
type indexer struct {
	mu                sync.Mutex
	src               *source
	primary           *replica
	lagging           []*laggingReplica
	chunkWords        int
	groupsAtQueryTime bool
	// onApplied is told which principals' visible content changed whenever the
	// primary or a lagging replica applies a change.
	onApplied func(affected map[string]struct{})

	contentSyncs atomic.Uint64
	aclSyncs     atomic.Uint64
}

// sync runs one sync of kind and returns the documents it changed and its
// error; the counters advance even on failure so tests and logs can tell a
// tick happened.
func (ix *indexer) sync(kind SyncKind) ([]string, error) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	snap := ix.src.snapshot()
	var ch change
	if kind == SyncContent {
		ch = ix.contentDiff(snap)
	} else {
		ch = ix.aclDiff(snap)
	}
	err := ix.publish(ch)
	if kind == SyncContent {
		ix.contentSyncs.Add(1)
	} else {
		ix.aclSyncs.Add(1)
	}
	return ch.documents(), err
}

// contentDiff indexes documents that are new or whose content changed, with
// the access list as it is right now (a crawler reads both together), and
// removes documents the source no longer has.
func (ix *indexer) contentDiff(snap sourceSnapshot) change {
	ch := change{puts: map[string]indexedDoc{}}
	seen := make(map[string]struct{}, len(snap.docs))
	for _, d := range snap.docs {
		seen[d.id] = struct{}{}
		cur, ok := ix.primary.docs[d.id]
		if ok && cur.contentVersion == d.contentVersion {
			continue
		}
		ch.puts[d.id] = indexedDoc{
			contentVersion: d.contentVersion,
			chunks:         chunk(d.title, d.body, ix.chunkWords),
			acl:            ix.resolveACL(d.acl, snap.groups),
		}
	}
	for id := range ix.primary.docs {
		if _, ok := seen[id]; !ok {
			ch.deletes = append(ch.deletes, id)
		}
	}
	slices.Sort(ch.deletes)
	return ch
}

// aclDiff re-stamps indexed documents whose effective access list changed.
// Documents not yet indexed wait for the content sync.
func (ix *indexer) aclDiff(snap sourceSnapshot) change {
	ch := change{puts: map[string]indexedDoc{}}
	for _, d := range snap.docs {
		cur, ok := ix.primary.docs[d.id]
		if !ok {
			continue
		}
		acl := ix.resolveACL(d.acl, snap.groups)
		if slices.Equal(acl, cur.acl) {
			continue
		}
		cur.acl = acl
		ch.puts[d.id] = cur
	}
	return ch
}

// resolveACL expands groups into their members at sync time, the way most
// connectors flatten identities; with groups resolved at query time the raw
// principals are stored and expansion happens per request.
func (ix *indexer) resolveACL(acl []string, groups map[string][]string) []string {
	if ix.groupsAtQueryTime {
		return acl
	}
	set := setOf(acl)
	for _, p := range acl {
		for _, m := range groups[p] {
			set[m] = struct{}{}
		}
	}
	return sortedKeys(set)
}

// publish applies ch to the primary at once and schedules it on each lagging
// replica.
func (ix *indexer) publish(ch change) error {
	if ch.empty() {
		return nil
	}
	affected := ix.affectedPrincipals(ch)
	if err := ix.primary.apply(ch); err != nil {
		return err
	}
	if ix.onApplied != nil {
		ix.onApplied(affected)
	}
	for _, l := range ix.lagging {
		l.enqueue(ch, affected)
	}
	return nil
}

// affectedPrincipals lists principals whose visible content ch changes:
// everyone on either side of a new or deleted document, and the symmetric
// difference of an access list that changed.
func (ix *indexer) affectedPrincipals(ch change) map[string]struct{} {
	out := map[string]struct{}{}
	add := func(ps []string) {
		for _, p := range ps {
			out[p] = struct{}{}
		}
	}
	for _, id := range ch.deletes {
		add(ix.primary.docs[id].acl)
	}
	for id, d := range ch.puts {
		old, ok := ix.primary.docs[id]
		if !ok || old.contentVersion != d.contentVersion {
			add(old.acl)
			add(d.acl)
			continue
		}
		add(symmetricDifference(old.acl, d.acl))
	}
	return out
}

func symmetricDifference(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			out = append(out, x)
		}
	}
	return out
}
