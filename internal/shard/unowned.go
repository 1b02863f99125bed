package shard

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Unowned lists the objects of kind gvk that no live replica owns: without
// an owner label, or owned by a replica whose shard Lease expired or is
// gone. No replica works on those, so no replica exports their series; the
// leader reports them instead. It waits for the sharder's cache to sync,
// and fails rather than answer from a cache that never did.
func (s *Sharder) Unowned(ctx context.Context, gvk schema.GroupVersionKind) ([]types.NamespacedName, error) {
	s.init()
	select {
	case <-s.synced:
	case <-ctx.Done():
		return nil, fmt.Errorf("shard: the sharder's cache has not synced: %w", ctx.Err())
	}
	replicas, _, err := s.live(ctx)
	if err != nil {
		return nil, err
	}
	x, ok := s.indexes[gvk]
	if !ok {
		return nil, fmt.Errorf("shard: %s is not a sharded kind", gvk.Kind)
	}
	return x.unowned(replicas), nil
}

// unowned picks the objects whose owner is not among the live replicas,
// in name order. An object being deleted is left out: the user asked for
// it to go, and nobody is expected to measure it. It reads the entries in
// place: the leader answers this on every scrape, and a copy of every
// entry each time was garbage in proportion to the fleet.
func (x *index) unowned(replicas []string) []types.NamespacedName {
	alive := aliveSet(replicas)
	var out []types.NamespacedName
	x.mu.RLock()
	for key, e := range x.entries {
		if e.deleting || alive[e.owner] {
			continue
		}
		out = append(out, key)
	}
	x.mu.RUnlock()
	slices.SortFunc(out, func(a, b types.NamespacedName) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

func aliveSet(replicas []string) map[string]bool {
	alive := make(map[string]bool, len(replicas))
	for _, r := range replicas {
		alive[r] = true
	}
	return alive
}
