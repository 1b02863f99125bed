package suiterun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ragcanary/ragcanary/controllers/shared"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/schedule"
	"github.com/ragcanary/ragcanary/internal/suite"
)

// runOutcome is how a run ended: scored, or unable to execute.
type runOutcome struct {
	// result is set when the cases were executed and scored.
	result *suite.Result
	// corpus names the corpus for metrics; empty when never resolved.
	corpus string
	// casesHash is the hash of the plan's cases; empty without a plan.
	casesHash string
	// fixtureRemoval is true when this attempt planted (or tried to) and
	// then removed the fixture; fixtureLeft is that removal's failure. A
	// run that ends before planting in this attempt may still hold a
	// fixture from an earlier one (a restart): it keeps its finalizer and
	// removal is retried, never assumed.
	fixtureRemoval bool
	fixtureLeft    error
	// reason and message explain a run that could not execute.
	reason, message string
}

// Reason is the condition reason of a run that could not execute.
func (o *runOutcome) Reason() string { return o.reason }

func failedOutcome(reason, format string, args ...any) *runOutcome {
	return &runOutcome{reason: reason, message: shared.TruncateMessage(fmt.Sprintf(format, args...))}
}

// execute freezes the suite into the run's plan (or reads the plan a
// previous attempt stored), plants the fixture, runs every case × persona,
// scores the replies and removes the fixture. Problems the user must fix
// end the run with a reason; other errors are returned and retried.
func (r *SuiteRunReconciler) execute(ctx context.Context, run *v1alpha1.SuiteRun, s *v1alpha1.EvalSuite) (*runOutcome, error) {
	plan, planJSON, out, err := r.Plan(ctx, run, s)
	if out != nil || err != nil {
		return out, err
	}
	corpusObj, personas, err := suite.ResolveRefs(ctx, r.Client, run.Namespace, plan.Corpus, planPersonas(plan),
		func(name string) string { return "the suite's cases" })
	if out, err := userOutcome(err); out != nil || err != nil {
		return withPlan(out, plan), err
	}
	t, corpus, err := suite.BuildTarget(ctx, r.Door, plan, corpusObj, personas)
	// A user problem's message names the Corpus or Persona and says what to fix.
	if out, err := userOutcome(err); out != nil || err != nil {
		return withPlan(out, plan), err
	}
	defer corpus.Release()
	if plan.Fixture != nil {
		if err := r.markFixture(ctx, run, plan); err != nil {
			return nil, err
		}
	}
	res, cleanup, err := suite.RunPlan(ctx, suite.Run{Plan: plan, Target: t, Source: corpus.Driver, Prefix: fixturePrefix(run),
		Pause: r.Pause, Corpus: suite.CorpusSnapshot(ctx, corpus, corpusObj)})
	var setup *suite.SetupError
	if errors.As(err, &setup) {
		out := withPlan(failedOutcome(setup.Reason, "%s", setup.Err), plan)
		out.fixtureRemoval, out.fixtureLeft = true, cleanup
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	res.Evidence.Run = run.Namespace + "/" + run.Name
	res.Evidence.CreatedAt = r.Clock.Now().UTC().Format(time.RFC3339)
	if err := r.writeReport(ctx, run, res, planJSON); err != nil {
		return nil, err
	}
	return &runOutcome{result: &res, corpus: plan.Corpus, casesHash: plan.CasesHash(),
		fixtureRemoval: plan.Fixture != nil, fixtureLeft: cleanup}, nil
}

func withPlan(out *runOutcome, plan *suite.Plan) *runOutcome {
	if out != nil {
		out.corpus, out.casesHash = plan.Corpus, plan.CasesHash()
	}
	return out
}

func planPersonas(p *suite.Plan) []string {
	out := make([]string, 0, len(p.Personas))
	for _, ps := range p.Personas {
		out = append(out, ps.Name)
	}
	return out
}

// userOutcome turns a *suite.Problem into a failed outcome and passes
// other errors through.
func userOutcome(err error) (*runOutcome, error) {
	var cond metav1.Condition
	if err == nil {
		return nil, nil
	}
	if shared.UserProblem(err, &cond) == nil {
		return failedOutcome(cond.Reason, "%s", cond.Message), nil
	}
	return nil, err
}

// reportName is the run's report ConfigMap: run names are at most 63
// characters, so the suffix always fits.
func reportName(run *v1alpha1.SuiteRun) string { return run.Name + "-report" }

// plan returns the run's frozen plan. The first attempt freezes the suite
// as it is at the run's start and stores the plan in the report ConfigMap
// before anything is planted or asked; a resumed attempt reads that plan
// back, so an edited suite never changes a run in flight.
func (r *SuiteRunReconciler) Plan(ctx context.Context, run *v1alpha1.SuiteRun, s *v1alpha1.EvalSuite) (*suite.Plan, string, *runOutcome, error) {
	cm, err := r.reportConfigMap(ctx, run)
	if errors.Is(err, errReportTaken) {
		return nil, "", failedOutcome(v1alpha1.ReasonReportConflict, "ConfigMap %q exists and is not this run's report: delete or rename it", reportName(run)), nil
	}
	if err != nil {
		return nil, "", nil, err
	}
	if cm != nil && cm.Data[v1alpha1.ReportKeyPlan] != "" {
		var p suite.Plan
		if err := json.Unmarshal([]byte(cm.Data[v1alpha1.ReportKeyPlan]), &p); err != nil {
			return nil, "", nil, fmt.Errorf("reading the run's stored plan: %w", err)
		}
		return &p, cm.Data[v1alpha1.ReportKeyPlan], nil, nil
	}
	def, err := suite.Resolve(ctx, r.Client, s)
	if out, err := userOutcome(err); out != nil || err != nil {
		return nil, "", out, err
	}
	gates, err := suite.ParseGates(s.Spec.Gates)
	if out, err := userOutcome(err); out != nil || err != nil {
		return nil, "", out, err
	}
	at := r.Clock.Now()
	if run.Status.StartTime != nil {
		at = run.Status.StartTime.Time
	}
	p, err := suite.Freeze(def, s, gates, 0, at)
	if out, err := userOutcome(err); out != nil || err != nil {
		return nil, "", out, err
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, "", nil, err
	}
	if len(b) > suite.MaxReportBytes/2 {
		return nil, "", failedOutcome(v1alpha1.ReasonInvalidCases,
			"the frozen suite is %d bytes, more than the %d a run can store: use fewer cases or a smaller fixture", len(b), suite.MaxReportBytes/2), nil
	}
	if err := r.storeReport(ctx, run, s, map[string]string{v1alpha1.ReportKeyPlan: string(b)}); err != nil {
		if errors.Is(err, errReportTaken) {
			return nil, "", failedOutcome(v1alpha1.ReasonReportConflict, "ConfigMap %q exists and is not this run's report: delete or rename it", reportName(run)), nil
		}
		return nil, "", nil, err
	}
	return p, string(b), nil, nil
}

// errReportTaken means the report ConfigMap name belongs to something else;
// the user must resolve it, so the run fails instead of retrying.
var errReportTaken = errors.New("report ConfigMap name is taken")

// reportConfigMap reads the run's report ConfigMap: nil when absent,
// errReportTaken when another object holds the name.
func (r *SuiteRunReconciler) reportConfigMap(ctx context.Context, run *v1alpha1.SuiteRun) (*corev1.ConfigMap, error) {
	var cm corev1.ConfigMap
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: reportName(run)}, &cm)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if cm.Annotations[v1alpha1.AnnotationRunUID] != string(run.UID) {
		return nil, errReportTaken
	}
	return &cm, nil
}

// storeReport creates the run's report ConfigMap with data, or replaces its
// data. It is owned by the suite (not the run), so pruning runs never
// deletes a report; the suite's reportHistoryLimit keeps them, and deleting
// the suite deletes them. Replacing covers a run executed again after a
// restart: the newer report wins.
func (r *SuiteRunReconciler) storeReport(ctx context.Context, run *v1alpha1.SuiteRun, s *v1alpha1.EvalSuite, data map[string]string) error {
	existing, err := r.reportConfigMap(ctx, run)
	if err != nil {
		return err
	}
	if existing != nil {
		existing.Data, existing.BinaryData = data, nil
		return r.Update(ctx, existing)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: reportName(run), Namespace: run.Namespace,
			Labels:      map[string]string{v1alpha1.LabelSuite: schedule.LabelValue(s.Name), v1alpha1.LabelReport: "true"},
			Annotations: map[string]string{v1alpha1.AnnotationRunUID: string(run.UID)}},
		Data: data,
	}
	if err := controllerutil.SetOwnerReference(s, cm, r.Scheme()); err != nil {
		return err
	}
	err = r.Create(ctx, cm)
	if apierrors.IsAlreadyExists(err) {
		return errReportTaken
	}
	return err
}

// writeReport adds the report, the frozen evidence and the probe errors to
// the run's report ConfigMap, next to its plan.
func (r *SuiteRunReconciler) writeReport(ctx context.Context, run *v1alpha1.SuiteRun, res suite.Result, planJSON string) error {
	data, err := suite.ReportData(res, len(planJSON))
	if err != nil {
		return err
	}
	data[v1alpha1.ReportKeyPlan] = planJSON
	existing, err := r.reportConfigMap(ctx, run)
	if err != nil {
		return err
	}
	if existing == nil {
		return fmt.Errorf("report ConfigMap %s disappeared during the run", reportName(run))
	}
	existing.Data, existing.BinaryData = data, nil
	// Report retention orders reports by this, not by their creation time
	// (whole seconds) or name (hashed).
	existing.Annotations[v1alpha1.AnnotationCompletedAt] = r.Clock.Now().UTC().Format(time.RFC3339Nano)
	return r.Update(ctx, existing)
}

// SuiteRunFinalizer holds a run with a fixture until everything it planted
// is removed from the target, also when the run is deleted mid-flight.
const SuiteRunFinalizer = "ragcanary.dev/suiterun-fixture"

// fixturePrefix scopes the run's fixture IDs: derived from the run's UID,
// so a retried plant replaces its own documents and no two runs share one.
func fixturePrefix(run *v1alpha1.SuiteRun) string {
	uid := strings.ReplaceAll(string(run.UID), "-", "")
	return "sr-" + uid[:min(len(uid), 12)]
}

// markFixture adds the finalizer and records what will be planted before
// the first document is written: a run deleted or restarted at any point
// after this can still find and remove everything.
func (r *SuiteRunReconciler) markFixture(ctx context.Context, run *v1alpha1.SuiteRun, plan *suite.Plan) error {
	if !controllerutil.ContainsFinalizer(run, SuiteRunFinalizer) {
		before := run.DeepCopy()
		controllerutil.AddFinalizer(run, SuiteRunFinalizer)
		if err := r.Patch(ctx, run, client.MergeFrom(before)); err != nil {
			return err
		}
	}
	before := run.DeepCopy()
	groups := 0
	for _, g := range plan.Fixture.Groups {
		groups += min(len(g.Members), 1)
	}
	run.Status.Fixture = &v1alpha1.FixtureStatus{Prefix: fixturePrefix(run), Documents: int32(len(plan.Fixture.Documents)), Groups: int32(groups)}
	return shared.PatchStatus(ctx, r.Client, before, run, before.Status, run.Status)
}
