package evalsuite

import (
	"context"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/schedule"
)

// defaultReportHistoryLimit matches the CRD default of spec.reportHistoryLimit.
const defaultReportHistoryLimit = 10

// pruneReports deletes the oldest report ConfigMaps beyond the suite's
// reportHistoryLimit. Reports are owned by the suite, not the run, so
// pruning runs by the run history limits never deletes one by surprise;
// this is their only retention besides deleting the suite. A report whose
// run is still active is never pruned.
func (r *EvalSuiteReconciler) pruneReports(ctx context.Context, s *v1alpha1.EvalSuite) error {
	limit := defaultReportHistoryLimit
	if s.Spec.ReportHistoryLimit != nil {
		limit = int(max(*s.Spec.ReportHistoryLimit, 1))
	}
	var cms corev1.ConfigMapList
	if err := r.APIReader.List(ctx, &cms, client.InNamespace(s.Namespace),
		client.MatchingLabels{v1alpha1.LabelSuite: schedule.LabelValue(s.Name), v1alpha1.LabelReport: "true"}); err != nil {
		return err
	}
	var owned []corev1.ConfigMap
	for _, cm := range cms.Items {
		if ownedBy(&cm, s) && cm.DeletionTimestamp.IsZero() {
			owned = append(owned, cm)
		}
	}
	// Newest first by when the report was written (the completed-at
	// annotation, sub-second), then creation time, then name.
	if len(owned) <= limit {
		return nil
	}
	slices.SortFunc(owned, func(a, b corev1.ConfigMap) int {
		if c := reportTime(b).Compare(reportTime(a)); c != 0 {
			return c
		}
		return strings.Compare(b.Name, a.Name)
	})
	active := map[string]bool{}
	for _, a := range s.Status.Active {
		active[a.Name+"-report"] = true
	}
	for _, cm := range owned[limit:] {
		if active[cm.Name] {
			continue
		}
		if err := r.Delete(ctx, &cm, client.Preconditions{UID: &cm.UID}); client.IgnoreNotFound(err) != nil {
			return err
		}
		log.FromContext(ctx).V(1).Info("pruned suite report", "configMap", cm.Name)
	}
	return nil
}

// reportTime is when a report was written: its completed-at annotation,
// else (a run that never finished) its creation.
func reportTime(cm corev1.ConfigMap) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, cm.Annotations[v1alpha1.AnnotationCompletedAt]); err == nil {
		return t
	}
	return cm.CreationTimestamp.Time
}

func ownedBy(obj client.Object, owner client.Object) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == owner.GetUID() {
			return true
		}
	}
	return false
}
