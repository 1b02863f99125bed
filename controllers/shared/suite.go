package shared

import (
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/reconcile"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func SuiteRunFinished(run *v1alpha1.SuiteRun) bool {
	return run.Status.Phase == v1alpha1.SuiteRunSucceeded || run.Status.Phase == v1alpha1.SuiteRunFailed
}

// UserProblem copies what the user must fix (reconcile.Compute) into cond
// and returns nil, or returns any other (transient) error for backoff.
func UserProblem(err error, cond *metav1.Condition) error {
	out := reconcile.Compute(err, reconcile.Policy{})
	if out.Condition != nil {
		cond.Reason, cond.Message = out.Condition.Reason, TruncateMessage(out.Condition.Message)
		return nil
	}
	return out.Err
}

func TruncateMessage(s string) string {
	if len(s) <= MaxConditionMessage {
		return s
	}
	return s[:MaxConditionMessage-3] + "..."
}

// PreciseCompletion is a finished run's completion time, refined by the
// completed-at annotation when it agrees with status to the second.
func PreciseCompletion(run *v1alpha1.SuiteRun) time.Time {
	coarse := CompletionOr(run.Status.CompletionTime, run)
	precise, err := time.Parse(time.RFC3339Nano, run.Annotations[v1alpha1.AnnotationCompletedAt])
	if err != nil || !precise.Truncate(time.Second).Equal(coarse.Truncate(time.Second)) {
		return coarse
	}
	return precise
}

// MaxConditionMessage keeps messages well inside the API's 32 KiB limit.
const MaxConditionMessage = 1024
