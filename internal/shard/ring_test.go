package shard

import (
	"fmt"
	"testing"
)

// TestAssignSpread checks that rendezvous hashing gives every replica a
// fair share: 3,000 keys over 3 replicas, each within 15% of 1,000.
func TestAssignSpread(t *testing.T) {
	replicas := []string{"ragcanary-0", "ragcanary-1", "ragcanary-2"}
	counts := map[string]int{}
	for i := range 3000 {
		counts[Assign(fmt.Sprintf("tenant-%d/canary-%d", i%7, i), replicas)]++
	}
	for _, r := range replicas {
		if counts[r] < 850 || counts[r] > 1150 {
			t.Errorf("replica %s got %d of 3000 keys, want 850..1150 (all: %v)", r, counts[r], counts)
		}
	}
}

// TestAssignStable checks that the owner depends only on the key and the
// set of replicas, and that a replica joining takes keys only for itself.
func TestAssignStable(t *testing.T) {
	three := []string{"a", "b", "c"}
	reordered := []string{"c", "a", "b"}
	four := []string{"a", "b", "c", "d"}
	moved := 0
	for i := range 2000 {
		key := fmt.Sprintf("ns/canary-%d", i)
		before := Assign(key, three)
		if again := Assign(key, reordered); again != before {
			t.Fatalf("%s: owner %s with one order of replicas, %s with another", key, before, again)
		}
		after := Assign(key, four)
		if after != before {
			moved++
			if after != "d" {
				t.Fatalf("%s moved from %s to %s when only d joined", key, before, after)
			}
		}
	}
	// About a quarter should move to the newcomer; none elsewhere.
	if moved < 400 || moved > 600 {
		t.Errorf("%d of 2000 keys moved to the new replica, want about 500", moved)
	}
}

func TestAssignNoReplicas(t *testing.T) {
	if got := Assign("ns/x", nil); got != "" {
		t.Errorf("Assign with no replicas = %q, want \"\"", got)
	}
}
