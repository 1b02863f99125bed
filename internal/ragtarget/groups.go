package ragtarget

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Groups from a directory. With Config.Groups set, ragtarget behaves like an
// assistant that takes its groups from the organisation's directory (Onyx's
// external group sync, Glean's group crawl): every GroupsSyncInterval it
// asks the directory for the members of every principal a document is
// granted to, and that copy is the membership the filter uses until the
// next sync. A member removed in the directory therefore keeps a group's
// access until the next sync reads the removal (and, with groups flattened
// into the index, until the ACL sync after that).

// DefaultGroupsSyncInterval is the directory group sync's period when a
// group source is set and the interval is zero: the short end of what
// assistants ship (Onyx syncs groups every 5–30 minutes).
const DefaultGroupsSyncInterval = 5 * time.Minute

// groupSyncHistory bounds the syncs GroupSyncs remembers.
const groupSyncHistory = 100

// ErrNoSuchGroup is what a GroupSource answers (wrapped or not) for a name
// the directory holds no group under. Document grants do not say which
// principals are groups, so the sync asks about every grantee; a user's
// principal is answered with ErrNoSuchGroup and has no members. Any other
// error is a failed read, never "no members".
var ErrNoSuchGroup = errors.New("no such group in the directory")

// GroupSource is the directory ragtarget reads group membership from.
type GroupSource interface {
	// Members returns the principals in group now: an empty list for a group
	// without members, ErrNoSuchGroup for a name that is no group.
	Members(ctx context.Context, group string) ([]string, error)
}

// Membership is one principal's membership of one group.
type Membership struct {
	Group, Member string
}

// GroupSync is one directory group sync as it ran: the ground truth a test
// holds a RemoveFromGroup canary's bounds against.
type GroupSync struct {
	// Began is when the sync started reading the directory; a change the
	// directory acknowledged before it is in what the sync read.
	Began time.Time
	// Applied is when the membership read replaced the previous copy: with
	// groups resolved at query time the filter uses it from this instant;
	// otherwise the next ACL sync flattens it into the index.
	Applied time.Time
	// Groups is how many grantees the directory was asked about.
	Groups int
	// Failed names the grantees whose read failed, sorted; each kept the
	// members the previous sync read.
	Failed []string
	// Added and Removed are the memberships that changed, sorted.
	Added, Removed []Membership
}

// groupSyncer copies membership from the directory into the source.
type groupSyncer struct {
	src    *source
	groups GroupSource
	now    func() time.Time
	// onChanged is told whose memberships a sync changed.
	onChanged func(members map[string]struct{})

	mu      sync.Mutex // one sync at a time: each diffs against the last
	runs    atomic.Uint64
	histMu  sync.Mutex
	history []GroupSync
}

// sync reads every grantee's members and replaces the source's membership
// with them, keeping the previous members of a grantee whose read failed.
// The error names the failed grantees; the sync still counts and is kept.
func (g *groupSyncer) sync(ctx context.Context) (GroupSync, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	defer g.runs.Add(1)
	rec := GroupSync{Began: g.now()}
	prev := g.src.groupTable()
	grantees := g.src.grantees()
	next, errs := g.read(ctx, grantees, prev)
	rec.Added, rec.Removed = membershipDiff(prev, next)
	rec.Applied, rec.Groups = g.src.replaceGroups(next, g.now), len(grantees)
	for group := range errs {
		rec.Failed = append(rec.Failed, group)
	}
	slices.Sort(rec.Failed)
	g.remember(rec)
	if changed := changedMembers(rec); len(changed) > 0 && g.onChanged != nil {
		g.onChanged(changed)
	}
	return rec, joinGroupErrors(rec.Failed, errs)
}

// read asks the directory about each grantee. A grantee that is no group
// is left out; one whose read failed keeps its previous members.
func (g *groupSyncer) read(ctx context.Context, grantees []string, prev map[string][]string) (map[string][]string, map[string]error) {
	next := make(map[string][]string, len(prev))
	errs := map[string]error{}
	for _, p := range grantees {
		members, err := g.groups.Members(ctx, p)
		switch {
		case err == nil:
			next[p] = sortedKeys(setOf(members))
		case errors.Is(err, ErrNoSuchGroup):
		default:
			errs[p] = err
			if old, ok := prev[p]; ok {
				next[p] = old
			}
		}
	}
	return next, errs
}

func (g *groupSyncer) remember(rec GroupSync) {
	g.histMu.Lock()
	defer g.histMu.Unlock()
	if len(g.history) == groupSyncHistory {
		g.history = slices.Delete(g.history, 0, 1)
	}
	g.history = append(g.history, rec)
}

func (g *groupSyncer) syncs() []GroupSync {
	g.histMu.Lock()
	defer g.histMu.Unlock()
	return slices.Clone(g.history)
}

// joinGroupErrors names each failed grantee with its error, in order.
func joinGroupErrors(failed []string, errs map[string]error) error {
	if len(failed) == 0 {
		return nil
	}
	out := make([]error, 0, len(failed))
	for _, group := range failed {
		out = append(out, fmt.Errorf("group %q: %w", group, errs[group]))
	}
	return errors.Join(out...)
}

// membershipDiff lists the memberships in next and not in prev (added) and
// in prev and not in next (removed), each sorted by group then member. A
// group absent and a group without members are the same.
func membershipDiff(prev, next map[string][]string) (added, removed []Membership) {
	return onlyIn(next, prev), onlyIn(prev, next)
}

func onlyIn(a, b map[string][]string) []Membership {
	var out []Membership
	for group, members := range a {
		for _, m := range members {
			if !slices.Contains(b[group], m) {
				out = append(out, Membership{Group: group, Member: m})
			}
		}
	}
	slices.SortFunc(out, func(x, y Membership) int {
		if c := strings.Compare(x.Group, y.Group); c != 0 {
			return c
		}
		return strings.Compare(x.Member, y.Member)
	})
	return out
}

// changedMembers are the principals whose memberships rec changed.
func changedMembers(rec GroupSync) map[string]struct{} {
	out := map[string]struct{}{}
	for _, m := range slices.Concat(rec.Added, rec.Removed) {
		out[m.Member] = struct{}{}
	}
	return out
}

// grantees are the principals any document is granted to, sorted: the
// names the directory is asked about.
func (s *source) grantees() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	set := map[string]struct{}{}
	for _, d := range s.docs {
		for p := range d.acl {
			set[p] = struct{}{}
		}
	}
	return sortedKeys(set)
}

// groupTable copies the membership: group → sorted members.
func (s *source) groupTable() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string][]string, len(s.groups))
	for g, m := range s.groups {
		out[g] = sortedKeys(m)
	}
	return out
}

// replaceGroups makes table the whole membership, as one change: a query
// sees either the previous copy or this one. It returns now() read under
// the same lock, so every query that saw the old copy began before that
// instant and every query that saw the new one ended after it.
func (s *source) replaceGroups(table map[string][]string, now func() time.Time) time.Time {
	groups := make(map[string]map[string]struct{}, len(table))
	for g, members := range table {
		groups[g] = setOf(members)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.groups = groups
	return now()
}

// errGroupsFromDirectory answers the contract's membership calls when a
// directory is the group authority.
var errGroupsFromDirectory = errors.New("group memberships come from the directory ragtarget syncs its groups from; change them there")

// validateGroups checks the directory group settings.
func (c Config) validateGroups() error {
	switch {
	case c.GroupsSyncInterval < 0:
		return errors.New("the groups sync interval must not be negative")
	case c.Groups == nil && c.GroupsSyncInterval > 0:
		return errors.New("a groups sync interval needs a group source (a directory)")
	case c.Groups != nil && (c.Authz != nil || c.OpenFGA != nil):
		// The engine holds the memberships and decides every read: a copy
		// of the directory's groups in the index would decide nothing.
		return errors.New("directory groups need the index's own access lists: a query-time engine (SpiceDB, OpenFGA) holds its own memberships")
	}
	return nil
}

// startGroupSync runs the directory group sync every GroupsSyncInterval.
func (s *Service) startGroupSync(ctx context.Context) {
	if s.groups == nil {
		return
	}
	s.runEvery(ctx, s.cfg.GroupsSyncInterval, func() {
		rec, err := s.groups.sync(ctx)
		if err != nil {
			s.cfg.Logger.Error("group sync failed; those groups keep their previous members", "failed", len(rec.Failed), "error", err)
		}
		if len(rec.Added)+len(rec.Removed) > 0 {
			s.cfg.Logger.Debug("group sync applied", "began", rec.Began.UTC().Format(time.RFC3339Nano),
				"added", len(rec.Added), "removed", len(rec.Removed))
		}
	})
}

// groupsChanged drops the cached answers of principals whose memberships a
// directory sync changed when groups resolve at query time: the new copy
// takes effect on the next query. Flattened groups reach the index, and
// invalidate the cache, at the next ACL sync.
func (s *Service) groupsChanged(members map[string]struct{}) {
	if s.cfg.GroupsAtQueryTime && !s.cfg.CacheIgnoresACLChanges {
		s.cache.invalidate(members)
	}
}

// GroupSyncs returns the most recent directory group syncs (at most 100),
// oldest first; none without a group source.
func (s *Service) GroupSyncs() []GroupSync {
	if s.groups == nil {
		return nil
	}
	return s.groups.syncs()
}
