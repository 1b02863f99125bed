package canaryrun

import (
	"context"

	"github.com/ragcanary/ragcanary/internal/probe"
	"github.com/ragcanary/ragcanary/internal/shard"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// handOver lets a draining run go: its probe loop and in-flight streams
// stop, what they saw is persisted to status (the new owner resumes from
// it, as after a restart), and only then the owner and drain labels are
// removed, so the run is never probed by two replicas at once.
func (r *CanaryRunReconciler) handOver(ctx context.Context, rc *runCtx) (ctrl.Result, error) {
	if snap, ok := r.stopProbing(rc); ok && snap.Stage == probe.StageExclusion && len(snap.Surfaces) > 0 {
		rc.run.Status.Surfaces = snap.Surfaces
	}
	r.inFlight.Stop(rc.key)
	if err := r.persist(ctx, rc); err != nil {
		return ctrl.Result{}, err
	}
	log.FromContext(ctx).Info("handing the run over to another replica")
	return ctrl.Result{}, client.IgnoreNotFound(shard.Release(ctx, r.Client, rc.run))
}
