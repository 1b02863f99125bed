package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/hack/bench/internal/benchkit"
)

// objectSizes are the bytes of one stored RevocationCanary and one active
// CanaryRun, and of the run's managedFields: what every write, watch event
// and the API server's watch cache carry per object.
type objectSizes struct {
	canary, run, runManagedFields int
}

func (o objectSizes) String() string {
	return fmt.Sprintf("RevocationCanary %d B, CanaryRun %d B (managedFields %d B of it)", o.canary, o.run, o.runManagedFields)
}

// measureObjects reads the first canary of the first shard and its run.
func measureObjects(ctx context.Context, c client.Client) (objectSizes, error) {
	var runs v1alpha1.CanaryRunList
	if err := c.List(ctx, &runs, client.InNamespace(benchkit.ShardNamespace(0)), client.Limit(1)); err != nil {
		return objectSizes{}, err
	}
	if len(runs.Items) == 0 {
		return objectSizes{}, fmt.Errorf("no CanaryRun in %s", benchkit.ShardNamespace(0))
	}
	run := runs.Items[0]
	var canary v1alpha1.RevocationCanary
	if err := c.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: run.Labels[v1alpha1.LabelCanary]}, &canary); err != nil {
		return objectSizes{}, err
	}
	var out objectSizes
	var err error
	if out.run, err = jsonSize(&run); err != nil {
		return out, err
	}
	if out.canary, err = jsonSize(&canary); err != nil {
		return out, err
	}
	out.runManagedFields, err = jsonSize(run.ManagedFields)
	return out, err
}

func jsonSize(v any) (int, error) {
	b, err := json.Marshal(v)
	return len(b), err
}

// perCanary lists request counts divided by the number of canaries.
func perCanary(counts map[string]int64, canaries int) []string {
	keys := make([]string, 0, len(counts))
	var total int64
	for k, n := range counts {
		if isWrite(k) {
			keys = append(keys, k)
			total += n
		}
	}
	sort.Slice(keys, func(i, j int) bool { return counts[keys[i]] > counts[keys[j]] })
	out := []string{fmt.Sprintf("%-32s %7d  %6.2f per canary", "all writes", total, float64(total)/float64(canaries))}
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%-32s %7d  %6.2f per canary", k, counts[k], float64(counts[k])/float64(canaries)))
	}
	return out
}
