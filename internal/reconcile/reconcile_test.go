package reconcile

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/target"
)

func TestCompute(t *testing.T) {
	resolve := Policy{StalledRequeue: 0, WaitingRequeue: 30 * time.Second}
	call := Policy{StalledRequeue: time.Minute, TargetRequeue: time.Minute, What: "driver check"}
	persona := Policy{}
	apiDown := errors.New("etcdserver: request timed out")
	for _, tc := range []struct {
		name   string
		err    error
		policy Policy
		// reason is the condition's reason, "" for no condition.
		reason string
		// requeue is Result.RequeueAfter.
		requeue time.Duration
		// backoff is whether the error is returned for backoff.
		backoff bool
	}{
		{"no failure", nil, resolve, "", 0, false},
		// The user must fix it: a condition, and wait for a change...
		{"stalled", target.Stall("SecretNotLabeled", "label it"), resolve, "SecretNotLabeled", 0, false},
		{"stalled, named", target.Named("Corpus", "kb", target.Stall(v1alpha1.ReasonURLNotAllowed, "x")), resolve, v1alpha1.ReasonURLNotAllowed, 0, false},
		// ...or re-check on the interval where the policy says so.
		{"stalled check", target.Stall("PermissionsSchemaMismatch", "no relation viewer"), call, "PermissionsSchemaMismatch", time.Minute, false},
		// Not there yet: a condition, and look again by the policy...
		{"waiting", target.Wait("CorpusNotFound", "apply it"), resolve, "CorpusNotFound", 30 * time.Second, false},
		// ...or as soon as the problem says.
		{"waiting, own recheck", &target.Problem{Intent: target.Waiting, Reason: "ReaderNotCaughtUp", Message: "replaying", RequeueAfter: 5 * time.Second},
			call, "ReaderNotCaughtUp", 5 * time.Second, false},
		// A call to the target failed: a condition re-checked on the interval.
		{"target unreachable", driver.NewError(driver.Transient, "Capabilities", 503, "server error", nil), call, v1alpha1.ReasonUnreachable, time.Minute, false},
		{"credential refused", driver.NewError(driver.Unauthorized, "Capabilities", 401, "unauthorized", nil), call, v1alpha1.ReasonCredentialRejected, time.Minute, false},
		// Without a target policy a driver error is backed off like any.
		{"target error, no target policy", driver.NewError(driver.Transient, "Search", 503, "server error", nil), persona, "", 0, true},
		// The API server failed while resolving: back off, show nothing.
		{"api server", apiDown, resolve, "", 0, true},
	} {
		got := Compute(tc.err, tc.policy)
		reason := ""
		if got.Condition != nil {
			reason = got.Condition.Reason
			if got.Condition.Status != metav1.ConditionFalse || got.Condition.Message == "" {
				t.Errorf("%s: condition %+v, want False with a message", tc.name, got.Condition)
			}
		}
		if reason != tc.reason || got.Result.RequeueAfter != tc.requeue || (got.Err != nil) != tc.backoff {
			t.Errorf("%s: reason %q requeue %s backoff %v; want %q %s %v", tc.name, reason, got.Result.RequeueAfter, got.Err != nil,
				tc.reason, tc.requeue, tc.backoff)
		}
		if tc.policy.What != "" && got.Condition != nil && !strings.HasPrefix(got.Condition.Message, tc.policy.What+" failed: ") {
			t.Errorf("%s: message %q does not name the call", tc.name, got.Condition.Message)
		}
		if tc.backoff && !errors.Is(got.Err, tc.err) {
			t.Errorf("%s: the error for backoff is not the cause", tc.name)
		}
		if (tc.err != nil) != (got.Problem != nil) {
			t.Errorf("%s: problem %+v for error %v", tc.name, got.Problem, tc.err)
		}
	}
}
