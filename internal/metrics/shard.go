package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
)

// shardUnownedCanaryDesc is the one series the stale-canary alert has for a
// canary no replica measures: each replica exports a canary's series only
// for its own share, so an unowned canary has none of them.
var shardUnownedCanaryDesc = newGaugeDesc("shard_unowned_canary",
	"1 while the sharder finds no live replica owning the canary: no owner label, or the owner's shard Lease expired or is missing; absent while a live replica owns it. Exported by the leader only.",
	[]string{LabelNamespace, LabelCanary})

// UnownedCanaries reports the canaries no live replica owns. An error
// means the answer is unknown, never that none is unowned.
type UnownedCanaries func(ctx context.Context) ([]types.NamespacedName, error)

// UnownedCanaryCollector builds ragcanary_shard_unowned_canary at scrape
// time from the sharder's view, so a canary's series goes as soon as it is
// owned or deleted, and the family holds at most one series per canary.
// As a manager Runnable it registers itself while its manager leads, the
// replica whose sharder runs.
type UnownedCanaryCollector struct {
	unowned UnownedCanaries
}

// NewUnownedCanaryCollector collects what unowned reports.
func NewUnownedCanaryCollector(unowned UnownedCanaries) *UnownedCanaryCollector {
	return &UnownedCanaryCollector{unowned: unowned}
}

// Describe sends the family's descriptor.
func (c *UnownedCanaryCollector) Describe(ch chan<- *prometheus.Desc) { ch <- shardUnownedCanaryDesc }

// Collect sends one series per unowned canary. A failed read fails the
// scrape: an alert must not read "could not tell" as "every canary owned".
func (c *UnownedCanaryCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	keys, err := c.unowned(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(shardUnownedCanaryDesc, err)
		return
	}
	for _, k := range keys {
		ch <- prometheus.MustNewConstMetric(shardUnownedCanaryDesc, prometheus.GaugeValue, 1, k.Namespace, k.Name)
	}
}

// Start registers the collector until ctx ends, as ObjectCollector does.
func (c *UnownedCanaryCollector) Start(ctx context.Context) error { return registerUntilDone(ctx, c) }

// NeedLeaderElection is true: the sharder, whose view this is, runs on the
// leader only.
func (c *UnownedCanaryCollector) NeedLeaderElection() bool { return true }
