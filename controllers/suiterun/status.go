package suiterun

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ragcanary/ragcanary/controllers/shared"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/metrics"
	"github.com/ragcanary/ragcanary/internal/scoring"
	"github.com/ragcanary/ragcanary/internal/suite"
)

// finish writes the finished run in one status write, then, once it is
// stored, emits the completion events and records the metrics: a failed
// write re-executes the run, and must not count it twice.
func (r *SuiteRunReconciler) finish(ctx context.Context, run *v1alpha1.SuiteRun, s *v1alpha1.EvalSuite, out *runOutcome) error {
	now := r.Clock.Now()
	if err := r.annotateCompletion(ctx, run, now); err != nil {
		return client.IgnoreNotFound(err)
	}
	before := run.DeepCopy()
	finishedStatus(run, out, metav1.Time{Time: now})
	if err := shared.PatchStatus(ctx, r.Client, before, run, before.Status, run.Status); err != nil {
		return client.IgnoreNotFound(err)
	}
	passed := meta.IsStatusConditionTrue(run.Status.Conditions, v1alpha1.ConditionPassed)
	log.FromContext(ctx).Info("suite run finished", "passed", passed, "executions", ptr.Deref(run.Status.Executions, 0),
		"disclosures", ptr.Deref(run.Status.Disclosures, 0), "probeErrors", ptr.Deref(run.Status.ProbeErrors, 0))
	r.completionEvents(run)
	recordSuiteMetrics(run, s, out)
	return nil
}

// annotateCompletion records the precise completion time before the status
// write that finishes the run.
func (r *SuiteRunReconciler) annotateCompletion(ctx context.Context, run *v1alpha1.SuiteRun, now time.Time) error {
	before := run.DeepCopy()
	if run.Annotations == nil {
		run.Annotations = map[string]string{}
	}
	run.Annotations[v1alpha1.AnnotationCompletedAt] = now.UTC().Format(time.RFC3339Nano)
	return r.Patch(ctx, run, client.MergeFrom(before))
}

// finishedStatus fills the status of a finished run from its outcome.
func finishedStatus(run *v1alpha1.SuiteRun, out *runOutcome, now metav1.Time) {
	st := &run.Status
	st.CompletionTime = &now
	st.ObservedGeneration = run.Generation
	setRunCondition(run, v1alpha1.ConditionComplete, metav1.ConditionTrue, v1alpha1.ReasonFinished, "the run finished")
	st.CasesHash = out.casesHash
	switch {
	case st.Fixture == nil:
	case !out.fixtureRemoval:
		setRunCondition(run, v1alpha1.ConditionFixtureRemoved, metav1.ConditionFalse, v1alpha1.ReasonFixtureRemovalPending,
			"an earlier attempt planted the fixture; removing it")
	case out.fixtureLeft != nil:
		setRunCondition(run, v1alpha1.ConditionFixtureRemoved, metav1.ConditionFalse, v1alpha1.ReasonFixtureRemovalFailed,
			shared.TruncateMessage("removing the fixture failed, retrying: "+suite.ErrorText(out.fixtureLeft)))
	default:
		markRemoved(run)
	}
	if st.CasesHash != "" || st.Fixture != nil {
		st.ReportConfigMapRef = &v1alpha1.LocalObjectReference{Name: reportName(run)}
	}
	if out.result == nil {
		st.Phase = v1alpha1.SuiteRunFailed
		setRunCondition(run, v1alpha1.ConditionPassed, metav1.ConditionFalse, out.reason, out.message)
		return
	}
	res := out.result
	st.Executions = ptr.To(int32(res.Executions))
	st.Disclosures = ptr.To(int32(res.Disclosures))
	st.ProbeErrors = ptr.To(int32(len(res.Errored)))
	st.Personas = suite.PersonaResults(*res)
	st.Gates = suite.GateResults(*res)
	st.FailingCases = suite.FailingCases(*res)
	st.ReportConfigMapRef = &v1alpha1.LocalObjectReference{Name: reportName(run)}
	reason, message := passedReason(*res)
	if res.Passed {
		st.Phase = v1alpha1.SuiteRunSucceeded
		setRunCondition(run, v1alpha1.ConditionPassed, metav1.ConditionTrue, reason, message)
		return
	}
	st.Phase = v1alpha1.SuiteRunFailed
	setRunCondition(run, v1alpha1.ConditionPassed, metav1.ConditionFalse, reason, message)
}

// passedReason explains the verdict. A disclosure outranks probe errors,
// which outrank other gates: a leak is a finding whatever else went wrong,
// and without replies no other verdict can be trusted.
func passedReason(res suite.Result) (string, string) {
	failed := failedGates(res)
	switch {
	case res.Passed:
		return v1alpha1.ReasonSuitePassed, fmt.Sprintf("all %d executions replied and every gate passed", res.Executions)
	case res.Disclosures > 0 && slices.Contains(failed, scoring.GateNoForbidden):
		return v1alpha1.ReasonDisclosureDetected, fmt.Sprintf("%d of %d executions returned or cited forbidden evidence; see failingCases",
			res.Disclosures, res.Executions)
	case len(res.Errored) > 0:
		return v1alpha1.ReasonProbeErrors, fmt.Sprintf("%d of %d executions got no usable reply; they were not scored and the run cannot pass",
			len(res.Errored), res.Executions)
	default:
		return v1alpha1.ReasonGatesFailed, fmt.Sprintf("gates failed: %v", failed)
	}
}

func failedGates(res suite.Result) []string {
	var names []string
	for _, g := range res.Report.Gates {
		if !g.Passed {
			names = append(names, g.Name)
		}
	}
	return names
}

func setRunCondition(run *v1alpha1.SuiteRun, condType string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&run.Status.Conditions, metav1.Condition{
		Type: condType, Status: status, Reason: reason, Message: message, ObservedGeneration: run.Generation,
	})
}

// completionEvents emits the run's verdict once, at completion, with
// constant reasons; a disclosure gets its own warning so it can be alerted
// on apart from other failures.
func (r *SuiteRunReconciler) completionEvents(run *v1alpha1.SuiteRun) {
	cond := meta.FindStatusCondition(run.Status.Conditions, v1alpha1.ConditionPassed)
	if cond == nil {
		return
	}
	if cond.Status == metav1.ConditionTrue {
		r.Recorder.Eventf(run, nil, corev1.EventTypeNormal, v1alpha1.ReasonSuitePassed, "RunFinished", "%s", cond.Message)
		return
	}
	r.Recorder.Eventf(run, nil, corev1.EventTypeWarning, v1alpha1.ReasonSuiteFailed, "RunFinished", "%s: %s", cond.Reason, cond.Message)
	if disclosures := ptr.Deref(run.Status.Disclosures, 0); disclosures > 0 {
		r.Recorder.Eventf(run, nil, corev1.EventTypeWarning, v1alpha1.ReasonDisclosureDetected, "RunFinished",
			"%d executions disclosed forbidden evidence", disclosures)
	}
}

// recordSuiteMetrics records the finished run under its suite's series.
func recordSuiteMetrics(run *v1alpha1.SuiteRun, s *v1alpha1.EvalSuite, out *runOutcome) {
	corpus := out.corpus
	if corpus == "" && s != nil {
		corpus = s.Spec.CorpusRef.Name
	}
	c := metrics.SuiteCompletion{
		Passed:   run.Status.Phase == v1alpha1.SuiteRunSucceeded,
		Finished: run.Status.CompletionTime.Time,
	}
	// The start as persisted (whole seconds once read back) to the precise
	// completion: a run resumed after a restart counts from its first start.
	if run.Status.StartTime != nil {
		c.Started = run.Status.StartTime.Time
	}
	if out.result != nil {
		c.Personas = personaScores(*out.result)
	}
	metrics.RecordSuiteCompletion(metrics.Suite{Namespace: run.Namespace, Suite: run.Spec.SuiteRef.Name, Corpus: corpus}, c)
}

// personaScores are the per-persona statistics over all strata.
func personaScores(res suite.Result) []metrics.PersonaScores {
	var out []metrics.PersonaScores
	for persona, st := range res.Report.Summary.Personas {
		out = append(out, metrics.PersonaScores{Persona: persona, Stats: st})
	}
	return out
}
