package controllers

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/suite"
	"github.com/ragcanary/ragcanary/internal/target"
)

// runOutcome is how a run ended: scored, or unable to execute.
type runOutcome struct {
	// result is set when the cases were executed and scored.
	result *suite.Result
	// corpus names the corpus for metrics; empty when never resolved.
	corpus string
	// reason and message explain a run that could not execute.
	reason, message string
}

func failedOutcome(reason, format string, args ...any) *runOutcome {
	return &runOutcome{reason: reason, message: truncateMessage(fmt.Sprintf(format, args...))}
}

// execute resolves the suite as it is now, runs every case × persona and
// scores the replies. Problems the user must fix end the run with a reason;
// other errors are returned and retried.
func (r *SuiteRunReconciler) execute(ctx context.Context, run *v1alpha1.SuiteRun, s *v1alpha1.EvalSuite) (*runOutcome, error) {
	def, err := suite.Resolve(ctx, r.Client, s)
	if out, err := userOutcome(err); out != nil || err != nil {
		return out, err
	}
	gates, err := suite.ParseGates(s.Spec.Gates)
	if out, err := userOutcome(err); out != nil || err != nil {
		return out, err
	}
	target, out, err := r.target(ctx, s, def)
	if out != nil || err != nil {
		if out != nil {
			out.corpus = def.Corpus.Name
		}
		return out, err
	}
	execs, err := suite.Execute(ctx, target, def.Cases)
	if err != nil {
		return nil, err
	}
	result, err := suite.Score(def.Cases, execs, target.K, gates)
	if err != nil {
		return nil, err
	}
	if err := r.writeReport(ctx, run, result); errors.Is(err, errReportTaken) {
		return failedOutcome(ReasonReportConflict, "ConfigMap %q exists and is not this run's report: delete or rename it", reportName(run)), nil
	} else if err != nil {
		return nil, err
	}
	return &runOutcome{result: &result, corpus: def.Corpus.Name}, nil
}

// userOutcome turns a *suite.Problem into a failed outcome and passes
// other errors through.
func userOutcome(err error) (*runOutcome, error) {
	var cond metav1.Condition
	if err == nil {
		return nil, nil
	}
	if userProblem(err, &cond) == nil {
		return failedOutcome(cond.Reason, "%s", cond.Message), nil
	}
	return nil, err
}

// target builds the execution target through the door: credentials from
// the API server, the corpus's limiter shared with the canary probes. A
// user problem (missing or unlabelled Secret, refused URL) fails the run
// with its reason.
func (r *SuiteRunReconciler) target(ctx context.Context, s *v1alpha1.EvalSuite, def *suite.Definition) (suite.Target, *runOutcome, error) {
	t, err := suite.BuildTarget(ctx, r.Door, s, def, 0)
	if p, ok := target.IsUserProblem(err); ok {
		// The message names the Corpus or Persona and says what to fix.
		return suite.Target{}, failedOutcome(p.Reason, "%s", p.Message), nil
	}
	return t, nil, err
}

// ReasonReportConflict: the report ConfigMap's name is taken by another object.
const ReasonReportConflict = "ReportConflict"

// errReportTaken means the report ConfigMap name belongs to something else;
// the user must resolve it, so the run fails instead of retrying.
var errReportTaken = errors.New("report ConfigMap name is taken")

// reportName is the run's report ConfigMap: run names are at most 63
// characters, so the suffix always fits.
func reportName(run *v1alpha1.SuiteRun) string { return run.Name + "-report" }

// writeReport creates or replaces the run's report ConfigMap, owned by the
// run so it goes with it. Replacing covers a run executed again after a
// restart: the newer report wins, and status points at the same name.
func (r *SuiteRunReconciler) writeReport(ctx context.Context, run *v1alpha1.SuiteRun, result suite.Result) error {
	data, err := suite.ReportData(result)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: reportName(run), Namespace: run.Namespace,
			Labels: map[string]string{LabelSuite: run.Labels[LabelSuite]}},
		Data: data,
	}
	if cm.Labels[LabelSuite] == "" {
		cm.Labels = nil
	}
	if err := controllerutil.SetControllerReference(run, cm, r.Scheme()); err != nil {
		return err
	}
	err = r.Create(ctx, cm)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	var existing corev1.ConfigMap
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(cm), &existing); err != nil {
		return err
	}
	if !metav1.IsControlledBy(&existing, run) {
		return errReportTaken
	}
	existing.Data, existing.BinaryData = data, nil
	return r.Update(ctx, &existing)
}
