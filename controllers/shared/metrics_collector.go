package shared

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ragcanary/ragcanary/internal/metrics"
)

// NewObjectCollector builds the collector of the gauges derived from
// objects. It reads the manager's cache, on the schedule clock; the SLOs
// and run ownership it exports are the rules the reconcilers use
// (measure.JudgedSLO, metrics.RunOf), so a scraped value never disagrees
// with a verdict.
func NewObjectCollector(mgr ctrl.Manager, opts Options) *metrics.ObjectCollector {
	return metrics.NewObjectCollector(mgr.GetCache(), opts.ScheduleClock)
}
