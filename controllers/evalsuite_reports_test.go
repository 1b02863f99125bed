package controllers

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// TestReportsOutliveRunPruning: with no passed run kept and one report
// kept, two runs leave no SuiteRun but exactly the newest run's report —
// pruning runs deletes no report, reportHistoryLimit prunes the older one.
func TestReportsOutliveRunPruning(t *testing.T) {
	f := newSuiteFixture(t, ragtarget.Config{}, func(s *v1alpha1.EvalSuite) {
		s.Spec.SuccessfulRunsHistoryLimit = ptr.To[int32](0)
		s.Spec.ReportHistoryLimit = ptr.To[int32](1)
	})
	var first string
	for i, token := range []string{"one", "two"} {
		f.runNow(token)
		testutil.Eventually(t, eventuallyTimeout, "run "+token+" finished and pruned", func() error {
			s := f.getSuite()
			if s.Status.LastRun == nil || s.Status.LastRunNowToken != token || (i == 1 && s.Status.LastRun.Name == first) {
				return fmt.Errorf("lastRun %+v", s.Status.LastRun)
			}
			if n := len(f.runs()); n != 0 {
				return fmt.Errorf("%d runs kept, want 0", n)
			}
			return nil
		})
		if i == 0 {
			first = f.getSuite().Status.LastRun.Name
		}
	}
	last := f.getSuite().Status.LastRun.Name
	testutil.Eventually(t, eventuallyTimeout, "only the newest report kept", func() error {
		var cms corev1.ConfigMapList
		if err := k8sClient.List(context.Background(), &cms, client.InNamespace(f.ns), client.MatchingLabels{v1alpha1.LabelReport: "true"}); err != nil {
			return err
		}
		var names []string
		for _, cm := range cms.Items {
			names = append(names, cm.Name)
		}
		if len(names) != 1 || names[0] != last+"-report" {
			return fmt.Errorf("reports %v, want only %s-report", names, last)
		}
		if cms.Items[0].Data[v1alpha1.ReportKeyEvidence] == "" {
			return fmt.Errorf("the kept report has no %s", v1alpha1.ReportKeyEvidence)
		}
		return nil
	})
}
