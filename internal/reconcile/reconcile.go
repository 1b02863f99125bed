// Package reconcile maps a failure to what a reconciler does about it, in
// one place for every reconciler: the condition to show, when to look
// again, and whether controller-runtime should back off. It follows Flux's
// ComputeReconcileResult: errors are typed by intent (internal/target's
// Problem), the mapping is a pure function with a table test, and
// reconcilers only choose their Policy.
package reconcile

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/target"
)

// Policy is how one reconciler treats each intent.
type Policy struct {
	// StalledRequeue re-checks a problem the user must fix; 0 waits for a
	// change to the object or what it watches.
	StalledRequeue time.Duration
	// WaitingRequeue re-checks a reference that does not exist yet, unless
	// the problem says when to look again itself.
	WaitingRequeue time.Duration
	// TargetRequeue, when set, is for a call to the target itself: any
	// failure that is not a Problem (the target refused, failed or could
	// not be reached) becomes a condition re-checked after it, instead of
	// an error for backoff.
	TargetRequeue time.Duration
	// What names the call for the condition's message ("capabilities
	// check failed: ..."); "" adds nothing.
	What string
}

// Outcome is what a reconciler does with a failure.
type Outcome struct {
	// Condition is the False condition to set (Type left to the caller);
	// nil when nothing is shown (no failure, or an error for backoff).
	Condition *metav1.Condition
	// Result is what Reconcile returns with Err.
	Result ctrl.Result
	// Err is returned for controller-runtime's backoff: a transient
	// failure that says nothing about the spec. Nil otherwise.
	Err error
	// Problem is the failure as the door classified it; nil without one.
	Problem *target.Problem
}

// Compute maps err by policy. A nil err is the zero Outcome.
func Compute(err error, policy Policy) Outcome {
	if err == nil {
		return Outcome{}
	}
	if p, user := target.IsUserProblem(err); user {
		return Outcome{Condition: condition(p.Reason, prefixed(policy.What, p.Message)), Result: requeue(p, policy), Problem: p}
	}
	p := target.AsProblem(err)
	if policy.TargetRequeue > 0 {
		reason := v1alpha1.ReasonUnreachable
		if driver.IsUnauthorized(err) {
			reason = v1alpha1.ReasonCredentialRejected
		}
		// AsProblem keeps a driver error's sanitized text (operation, kind,
		// status) and gives anything else a generic one.
		return Outcome{Condition: condition(reason, prefixed(policy.What, p.Message)),
			Result: ctrl.Result{RequeueAfter: policy.TargetRequeue}, Problem: p}
	}
	return Outcome{Err: err, Problem: p}
}

func prefixed(what, message string) string {
	if what == "" {
		return message
	}
	return what + " failed: " + message
}

func requeue(p *target.Problem, policy Policy) ctrl.Result {
	switch {
	case p.Intent == target.Waiting && p.RequeueAfter > 0:
		return ctrl.Result{RequeueAfter: p.RequeueAfter}
	case p.Intent == target.Waiting:
		return ctrl.Result{RequeueAfter: policy.WaitingRequeue}
	default:
		return ctrl.Result{RequeueAfter: policy.StalledRequeue}
	}
}

func condition(reason, message string) *metav1.Condition {
	return &metav1.Condition{Status: metav1.ConditionFalse, Reason: reason, Message: message}
}
