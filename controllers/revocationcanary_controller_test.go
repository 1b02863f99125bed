package controllers

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
	"github.com/ragcanary/ragcanary/internal/schedule"
)

// canaryFixture is one test's canary with its references in a fresh namespace.
type canaryFixture struct {
	t      *testing.T
	ns     string
	canary *v1alpha1.RevocationCanary
	// created is the canary's creation time: schedules count from it.
	created time.Time
}

// canaryRefs are what the canary references; tests leave some out.
type canaryRefs struct {
	corpus, persona, control bool
}

var allCanaryRefs = canaryRefs{corpus: true, persona: true, control: true}

// newCanaryFixture creates the references and a canary running every hour.
// The schedule clock is set to the real time first, so the canary is never
// created with a clock another test left hours ahead.
func newCanaryFixture(t *testing.T, refs canaryRefs, mutate func(*v1alpha1.RevocationCanary)) *canaryFixture {
	t.Helper()
	f := &canaryFixture{t: t, ns: newNamespace(t)}
	if refs.corpus {
		f.createCorpus()
	}
	if refs.persona {
		f.createPersona("alice")
	}
	if refs.control {
		f.createPersona("mallory")
	}
	canary := objects.RevocationCanary(f.ns, "grant-revocation", time.Hour,
		objects.Every(time.Second, 3), objects.Timeouts(2*time.Minute, 5*time.Minute))
	if mutate != nil {
		mutate(canary)
	}
	scheduleClock.SetTime(time.Now())
	if err := k8sClient.Create(context.Background(), canary); err != nil {
		t.Fatalf("creating canary: %v", err)
	}
	t.Cleanup(func() {
		// Stop the canary so a later test moving the shared clock does not
		// make it create runs.
		_ = k8sClient.Delete(context.Background(), canary)
	})
	f.canary, f.created = canary, canary.CreationTimestamp.UTC()
	return f
}

func (f *canaryFixture) createCorpus() {
	f.t.Helper()
	corpus := objects.Corpus(f.ns, objects.CorpusName, "http://127.0.0.1:1", objects.SourceSecret("corpus-source", objects.TokenKey))
	if err := k8sClient.Create(context.Background(), corpus); err != nil {
		f.t.Fatalf("creating corpus: %v", err)
	}
}

func (f *canaryFixture) createPersona(name string) {
	f.t.Helper()
	if err := k8sClient.Create(context.Background(), objects.Persona(f.ns, name, name)); err != nil {
		f.t.Fatalf("creating persona: %v", err)
	}
}

// at sets the schedule clock to the canary's creation time plus d.
func (f *canaryFixture) at(d time.Duration) {
	scheduleClock.SetTime(f.created.Add(d))
}

// poke changes an unrelated annotation so the controller reconciles now:
// the controller requeues on real time, which the fake clock does not move.
func (f *canaryFixture) poke() {
	f.t.Helper()
	f.patchAnnotation("test.ragcanary.dev/poke", strconv.FormatInt(time.Now().UnixNano(), 10))
}

func (f *canaryFixture) patchAnnotation(key, value string) {
	f.t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value)
	if err := k8sClient.Patch(context.Background(), f.canary, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		f.t.Fatalf("patching canary annotation: %v", err)
	}
}

// patchSpec merge-patches the spec and returns the new generation, which
// the test can wait on as proof that a reconcile saw the current clock.
func (f *canaryFixture) patchSpec(spec string) int64 {
	f.t.Helper()
	patch := fmt.Sprintf(`{"spec":%s}`, spec)
	if err := k8sClient.Patch(context.Background(), f.canary, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		f.t.Fatalf("patching canary spec: %v", err)
	}
	return f.canary.Generation
}

// get reads the canary with the direct client.
func (f *canaryFixture) get() *v1alpha1.RevocationCanary {
	f.t.Helper()
	var got v1alpha1.RevocationCanary
	if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(f.canary), &got); err != nil {
		f.t.Fatalf("reading canary: %v", err)
	}
	return &got
}

// waitStatus polls the canary until check passes.
func (f *canaryFixture) waitStatus(what string, check func(*v1alpha1.RevocationCanary) error) *v1alpha1.RevocationCanary {
	f.t.Helper()
	var got *v1alpha1.RevocationCanary
	testutil.Eventually(f.t, eventuallyTimeout, what, func() error {
		got = f.get()
		return check(got)
	})
	return got
}

func (f *canaryFixture) waitCondition(condType string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	f.t.Helper()
	var cond *metav1.Condition
	f.waitStatus(fmt.Sprintf("%s=%s/%s", condType, status, reason), func(c *v1alpha1.RevocationCanary) error {
		cond = meta.FindStatusCondition(c.Status.Conditions, condType)
		if cond == nil || cond.Status != status || cond.Reason != reason {
			return fmt.Errorf("condition is %+v", cond)
		}
		return nil
	})
	return cond
}

// waitGeneration waits until the controller evaluated generation gen.
func (f *canaryFixture) waitGeneration(gen int64) *v1alpha1.RevocationCanary {
	f.t.Helper()
	return f.waitStatus(fmt.Sprintf("observedGeneration %d", gen), func(c *v1alpha1.RevocationCanary) error {
		if c.Status.ObservedGeneration != gen {
			return fmt.Errorf("observedGeneration is %d", c.Status.ObservedGeneration)
		}
		return nil
	})
}

// waitNext waits until status.nextScheduleTime is want: proof that a
// reconcile ran with the clock the test set.
func (f *canaryFixture) waitNext(want time.Time) *v1alpha1.RevocationCanary {
	f.t.Helper()
	return f.waitStatus("nextScheduleTime "+want.String(), func(c *v1alpha1.RevocationCanary) error {
		if c.Status.NextScheduleTime == nil || !c.Status.NextScheduleTime.Equal(&metav1.Time{Time: want}) {
			return fmt.Errorf("nextScheduleTime is %v", c.Status.NextScheduleTime)
		}
		return nil
	})
}

// runs lists the CanaryRuns in the namespace that are not being deleted, by name.
func (f *canaryFixture) runs() []string {
	f.t.Helper()
	var list v1alpha1.CanaryRunList
	if err := k8sClient.List(context.Background(), &list, client.InNamespace(f.ns)); err != nil {
		f.t.Fatalf("listing runs: %v", err)
	}
	var names []string
	for _, r := range list.Items {
		if r.DeletionTimestamp.IsZero() {
			names = append(names, r.Name)
		}
	}
	slices.Sort(names)
	return names
}

// waitRuns waits until exactly the named runs exist.
func (f *canaryFixture) waitRuns(want ...string) {
	f.t.Helper()
	slices.Sort(want)
	testutil.Eventually(f.t, eventuallyTimeout, fmt.Sprintf("runs %v", want), func() error {
		if got := f.runs(); !slices.Equal(got, want) {
			return fmt.Errorf("runs are %v", got)
		}
		return nil
	})
}

// scheduledName is the run name for the time d after creation.
func (f *canaryFixture) scheduledName(d time.Duration) string {
	return schedule.RunName(f.canary.Name, f.created.Add(d))
}

// getRun reads a run with the direct client.
func (f *canaryFixture) getRun(name string) *v1alpha1.CanaryRun {
	f.t.Helper()
	var run v1alpha1.CanaryRun
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: name}, &run); err != nil {
		f.t.Fatalf("reading run %s: %v", name, err)
	}
	return &run
}

// finishRun writes a finished status onto a run, as the CanaryRun controller would.
func (f *canaryFixture) finishRun(name string, phase v1alpha1.CanaryPhase, verdict v1alpha1.Verdict, completed time.Time) {
	f.t.Helper()
	run := f.getRun(name)
	before := run.DeepCopy()
	run.Status.Phase, run.Status.Verdict = phase, verdict
	run.Status.CompletionTime = &metav1.Time{Time: completed}
	if err := k8sClient.Status().Patch(context.Background(), run, client.MergeFrom(before)); err != nil {
		f.t.Fatalf("finishing run %s: %v", name, err)
	}
}

// createOwnedRun creates a run as the canary would, for history tests
// that need several finished runs without stepping through a schedule.
func (f *canaryFixture) createOwnedRun(name string) {
	f.t.Helper()
	canary := f.get()
	run := &v1alpha1.CanaryRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name,
			Labels: map[string]string{v1alpha1.LabelCanary: canary.Name}},
		Spec: v1alpha1.CanaryRunSpec{CanarySpec: canary.Spec.CanarySpec},
	}
	run.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(canary, v1alpha1.GroupVersion.WithKind("RevocationCanary"))}
	if err := k8sClient.Create(context.Background(), run); err != nil {
		f.t.Fatalf("creating run %s: %v", name, err)
	}
}

// waitEvent waits for an event with reason on the canary.
func (f *canaryFixture) waitEvent(reason string) {
	f.t.Helper()
	testutil.Eventually(f.t, eventuallyTimeout, "event "+reason, func() error {
		var list eventsv1.EventList
		if err := k8sClient.List(context.Background(), &list, client.InNamespace(f.ns)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Reason == reason && e.Regarding.Name == f.canary.Name {
				return nil
			}
		}
		return fmt.Errorf("%d events, none with reason %s", len(list.Items), reason)
	})
}

// TestRevocationCanaryCreatesRunsOnSchedule: nothing runs before the first
// time; each due time creates one run with a deterministic name, the spec
// copied and the canary as controller; after missed times only the latest
// runs.
func TestRevocationCanaryCreatesRunsOnSchedule(t *testing.T) {
	f := newCanaryFixture(t, allCanaryRefs, nil)
	f.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonScheduled)
	f.waitCondition(v1alpha1.ConditionSLOMet, metav1.ConditionUnknown, v1alpha1.ReasonNoRunFinished)
	f.waitNext(f.created.Add(time.Hour))
	if runs := f.runs(); len(runs) != 0 {
		t.Fatalf("runs before the first scheduled time: %v", runs)
	}

	f.at(time.Hour + time.Second)
	f.poke()
	first := f.scheduledName(time.Hour)
	f.waitRuns(first)
	got := f.waitNext(f.created.Add(2 * time.Hour))
	if got.Status.LastScheduleTime == nil || !got.Status.LastScheduleTime.Time.Equal(f.created.Add(time.Hour)) {
		t.Errorf("lastScheduleTime = %v, want %s", got.Status.LastScheduleTime, f.created.Add(time.Hour))
	}
	if !slices.Equal(got.Status.Active, []v1alpha1.LocalObjectReference{{Name: first}}) {
		t.Errorf("status.active = %v, want [%s]", got.Status.Active, first)
	}
	run := f.getRun(first)
	if ref := metav1.GetControllerOf(run); ref == nil || ref.UID != f.canary.UID {
		t.Errorf("run controller = %+v, want the canary", ref)
	}
	if run.Labels[v1alpha1.LabelCanary] != f.canary.Name {
		t.Errorf("run label %s = %q, want %q", v1alpha1.LabelCanary, run.Labels[v1alpha1.LabelCanary], f.canary.Name)
	}
	if run.Spec.PersonaRef.Name != "alice" || run.Spec.ExclusionSLO == nil || run.Spec.ExclusionSLO.Duration != 30*time.Second {
		t.Errorf("run spec not copied from the canary: %+v", run.Spec)
	}
	f.waitEvent(v1alpha1.ReasonRunCreated)

	// The next hour: the finished first run does not block the second.
	f.finishRun(first, v1alpha1.PhaseSucceeded, v1alpha1.VerdictSLOMet, f.created.Add(time.Hour+time.Minute))
	f.at(2*time.Hour + time.Second)
	f.poke()
	second := f.scheduledName(2 * time.Hour)
	f.waitRuns(first, second)

	// Down for three hours: one catch-up run for the latest time, no burst.
	f.finishRun(second, v1alpha1.PhaseSucceeded, v1alpha1.VerdictSLOMet, f.created.Add(2*time.Hour+time.Minute))
	f.at(5*time.Hour + 30*time.Minute)
	f.poke()
	f.waitRuns(first, second, f.scheduledName(5*time.Hour))
	f.waitNext(f.created.Add(6 * time.Hour))
}

// TestRevocationCanaryForbidDoesNotOverlap: under Forbid a due time waits
// while a run is active and starts once it finishes.
func TestRevocationCanaryForbidDoesNotOverlap(t *testing.T) {
	f := newCanaryFixture(t, allCanaryRefs, nil)
	f.waitNext(f.created.Add(time.Hour))
	f.at(time.Hour + time.Second)
	f.poke()
	first := f.scheduledName(time.Hour)
	f.waitRuns(first)

	f.at(2*time.Hour + time.Second)
	f.poke()
	// The 2h time is held back, so the next one shown is 3h.
	f.waitNext(f.created.Add(3 * time.Hour))
	if runs := f.runs(); !slices.Equal(runs, []string{first}) {
		t.Fatalf("runs overlap under Forbid: %v", runs)
	}

	// Finishing the active run re-triggers the canary through the Owns
	// watch (no poke) and the held time runs.
	f.finishRun(first, v1alpha1.PhaseFailed, v1alpha1.VerdictSetupFailed, f.created.Add(2*time.Hour))
	f.waitRuns(first, f.scheduledName(2*time.Hour))
}

// TestRevocationCanaryReplace: under Replace a due time deletes the active
// run and starts the new one.
func TestRevocationCanaryReplace(t *testing.T) {
	f := newCanaryFixture(t, allCanaryRefs, func(c *v1alpha1.RevocationCanary) {
		c.Spec.ConcurrencyPolicy = v1alpha1.ReplaceConcurrent
	})
	f.waitNext(f.created.Add(time.Hour))
	f.at(time.Hour + time.Second)
	f.poke()
	first := f.scheduledName(time.Hour)
	f.waitRuns(first)

	f.at(2*time.Hour + time.Second)
	f.poke()
	// runs() leaves out runs being deleted, so a finalizer on the old run
	// does not matter: it is gone from the live set.
	f.waitRuns(f.scheduledName(2 * time.Hour))
}

// TestRevocationCanarySuspend: a suspended canary creates no runs however
// many times fall due, and catches up with one run when resumed.
func TestRevocationCanarySuspend(t *testing.T) {
	f := newCanaryFixture(t, allCanaryRefs, func(c *v1alpha1.RevocationCanary) { c.Spec.Suspend = ptr.To(true) })
	f.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSuspended)

	f.at(3*time.Hour + time.Second)
	// A spec change is the sync point: its generation is observed only by
	// a reconcile that saw the moved clock.
	got := f.waitGeneration(f.patchSpec(`{"jitter":"1s"}`))
	if runs := f.runs(); len(runs) != 0 {
		t.Fatalf("suspended canary created runs: %v", runs)
	}
	if got.Status.NextScheduleTime != nil {
		t.Errorf("suspended canary shows a next schedule time %v", got.Status.NextScheduleTime)
	}

	f.patchSpec(`{"suspend":false}`)
	f.waitRuns(f.scheduledName(3 * time.Hour))
}

// TestRevocationCanaryRunNow: each new run-now token creates exactly one
// run, named after the token, without consuming a scheduled time.
func TestRevocationCanaryRunNow(t *testing.T) {
	f := newCanaryFixture(t, allCanaryRefs, nil)
	f.waitNext(f.created.Add(time.Hour))
	f.at(10 * time.Minute)

	f.patchAnnotation(v1alpha1.AnnotationRunNow, "first")
	firstRun := schedule.RunNowName(f.canary.Name, "first")
	f.waitRuns(firstRun)
	got := f.waitStatus("lastRunNowToken first", func(c *v1alpha1.RevocationCanary) error {
		if c.Status.LastRunNowToken != "first" {
			return fmt.Errorf("lastRunNowToken is %q", c.Status.LastRunNowToken)
		}
		return nil
	})
	if got.Status.LastScheduleTime != nil {
		t.Errorf("run-now set lastScheduleTime %v; the schedule must be untouched", got.Status.LastScheduleTime)
	}

	// The same token acted on: other changes create nothing more. The
	// spec change is the sync point.
	f.waitGeneration(f.patchSpec(`{"jitter":"1s"}`))
	if runs := f.runs(); !slices.Equal(runs, []string{firstRun}) {
		t.Fatalf("a token already acted on created more runs: %v", runs)
	}

	f.finishRun(firstRun, v1alpha1.PhaseSucceeded, v1alpha1.VerdictSLOMet, f.created.Add(11*time.Minute))
	f.patchAnnotation(v1alpha1.AnnotationRunNow, "second")
	secondRun := schedule.RunNowName(f.canary.Name, "second")
	f.waitRuns(firstRun, secondRun)

	// The schedule still runs on its own: the acted-on token is not asked
	// again (which would swallow the due time into the existing run).
	f.finishRun(secondRun, v1alpha1.PhaseSucceeded, v1alpha1.VerdictSLOMet, f.created.Add(12*time.Minute))
	f.at(time.Hour + time.Second)
	f.poke()
	f.waitRuns(firstRun, secondRun, f.scheduledName(time.Hour))
}

// TestRevocationCanaryHistoryLimits: finished runs beyond the limits are
// deleted, oldest first, per class; active runs are never pruned.
func TestRevocationCanaryHistoryLimits(t *testing.T) {
	f := newCanaryFixture(t, allCanaryRefs, func(c *v1alpha1.RevocationCanary) {
		c.Spec.SuccessfulRunsHistoryLimit = ptr.To[int32](1)
		c.Spec.FailedRunsHistoryLimit = ptr.To[int32](1)
	})
	f.waitNext(f.created.Add(time.Hour))
	for _, name := range []string{"ok-old", "ok-new", "failed-old", "failed-new", "active"} {
		f.createOwnedRun(name)
	}
	base := f.created.Add(-time.Hour)
	f.finishRun("ok-old", v1alpha1.PhaseSucceeded, v1alpha1.VerdictSLOMet, base)
	f.finishRun("failed-old", v1alpha1.PhaseFailed, v1alpha1.VerdictSetupFailed, base.Add(time.Minute))
	f.finishRun("ok-new", v1alpha1.PhaseSucceeded, v1alpha1.VerdictSLOBreached, base.Add(2*time.Minute))
	f.finishRun("failed-new", v1alpha1.PhaseFailed, v1alpha1.VerdictSetupFailed, base.Add(3*time.Minute))
	f.poke()

	f.waitRuns("active", "failed-new", "ok-new")
	got := f.waitStatus("lastRun failed-new", func(c *v1alpha1.RevocationCanary) error {
		if c.Status.LastRun == nil || c.Status.LastRun.Name != "failed-new" {
			return fmt.Errorf("lastRun is %+v", c.Status.LastRun)
		}
		return nil
	})
	if !slices.Equal(got.Status.Active, []v1alpha1.LocalObjectReference{{Name: "active"}}) {
		t.Errorf("status.active = %v, want [active]", got.Status.Active)
	}
}

// TestRevocationCanaryInvalidSchedule: a cron expression the API server
// accepts but cron cannot parse makes the canary not Ready with a message
// that says what to write, creates no runs, and recovers when fixed.
func TestRevocationCanaryInvalidSchedule(t *testing.T) {
	f := newCanaryFixture(t, allCanaryRefs, func(c *v1alpha1.RevocationCanary) {
		c.Spec.Schedule = v1alpha1.Schedule{Cron: "61 * * * *"}
	})
	cond := f.waitCondition(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonInvalidSchedule)
	if want := "five fields"; !containsEvery(cond.Message, "61 * * * *", want) {
		t.Errorf("message %q should quote the expression and say %q", cond.Message, want)
	}
	f.at(48 * time.Hour)
	f.waitGeneration(f.patchSpec(`{"jitter":"1s"}`))
	if runs := f.runs(); len(runs) != 0 {
		t.Fatalf("invalid schedule created runs: %v", runs)
	}

	f.patchSpec(`{"schedule":{"cron":"@hourly"}}`)
	f.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonScheduled)
	if f.get().Status.NextScheduleTime == nil {
		t.Error("a valid schedule shows no next schedule time")
	}

	// Broken again: the next time is withdrawn, since no run will start.
	f.patchSpec(`{"schedule":{"cron":"@every 100ms"}}`)
	cond = f.waitCondition(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonInvalidSchedule)
	if !containsEvery(cond.Message, "at least 1s") {
		t.Errorf("message %q should give the minimum interval", cond.Message)
	}
	if next := f.get().Status.NextScheduleTime; next != nil {
		t.Errorf("invalid canary still shows nextScheduleTime %v", next)
	}
}

// TestRevocationCanaryMissingReferences: without its Corpus, or without a
// control Persona, the canary is not Ready and creates no runs even when a
// time is due; creating the reference (no canary change) makes it Ready and
// the due run starts.
func TestRevocationCanaryMissingReferences(t *testing.T) {
	f := newCanaryFixture(t, canaryRefs{persona: true}, nil)
	cond := f.waitCondition(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonCorpusNotFound)
	if !containsEvery(cond.Message, `"corpus"`, "spec.corpusRef") {
		t.Errorf("message %q should name the corpus and the field to fix", cond.Message)
	}
	f.at(time.Hour + time.Second)
	f.waitGeneration(f.patchSpec(`{"jitter":"1s"}`))
	if runs := f.runs(); len(runs) != 0 {
		t.Fatalf("canary without a corpus created runs: %v", runs)
	}

	f.createCorpus()
	cond = f.waitCondition(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonPersonaNotFound)
	if !containsEvery(cond.Message, `"mallory"`, "spec.controlPersonaRefs") {
		t.Errorf("message %q should name the control persona and the field", cond.Message)
	}
	if runs := f.runs(); len(runs) != 0 {
		t.Fatalf("canary without a control persona created runs: %v", runs)
	}

	f.createPersona("mallory")
	f.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonScheduled)
	f.waitRuns(f.scheduledName(time.Hour))
}

// TestRevocationCanaryLastRunAndSLOMet: the newest finished run's
// measurements reach status.lastRun, SLOMet follows its verdict, and the
// verdict changing emits SLOBreached then Recovered.
func TestRevocationCanaryLastRunAndSLOMet(t *testing.T) {
	f := newCanaryFixture(t, allCanaryRefs, nil)
	f.waitCondition(v1alpha1.ConditionSLOMet, metav1.ConditionUnknown, v1alpha1.ReasonNoRunFinished)

	f.createOwnedRun("met")
	run := f.getRun("met")
	before := run.DeepCopy()
	completed := f.created.Add(time.Minute).Truncate(time.Second)
	run.Status = v1alpha1.CanaryRunStatus{
		Phase: v1alpha1.PhaseSucceeded, Verdict: v1alpha1.VerdictSLOMet,
		CompletionTime:   &metav1.Time{Time: completed},
		TimeToVisibility: objects.DurationPtr(4 * time.Second),
		Surfaces: []v1alpha1.SurfaceMeasurement{
			{Surface: v1alpha1.SurfaceSearch, Bounds: objects.Bounds(10*time.Second, 12*time.Second)},
			{Surface: v1alpha1.SurfaceAnswer, Bounds: objects.Bounds(50*time.Second, 55*time.Second)},
		},
	}
	if err := k8sClient.Status().Patch(context.Background(), run, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	f.waitCondition(v1alpha1.ConditionSLOMet, metav1.ConditionTrue, string(v1alpha1.VerdictSLOMet))
	last := f.get().Status.LastRun
	switch {
	case last == nil || last.Name != "met" || last.Verdict != v1alpha1.VerdictSLOMet:
		t.Fatalf("lastRun = %+v", last)
	case last.CompletionTime == nil || !last.CompletionTime.Time.Equal(completed):
		t.Errorf("lastRun.completionTime = %v, want %s", last.CompletionTime, completed)
	case last.TimeToVisibility == nil || last.TimeToVisibility.Duration != 4*time.Second:
		t.Errorf("lastRun.timeToVisibility = %v, want 4s", last.TimeToVisibility)
	case len(last.Surfaces) != 2:
		t.Errorf("lastRun.surfaces = %+v, want Search and Answer", last.Surfaces)
	case last.Surface(v1alpha1.SurfaceSearch).Bounds.Upper.Duration != 12*time.Second || last.Surface(v1alpha1.SurfaceSearch).Bounds.Lower.Duration != 10*time.Second:
		t.Errorf("lastRun Search bounds = %+v, want [10s, 12s]", last.Surface(v1alpha1.SurfaceSearch).Bounds)
	case last.Surface(v1alpha1.SurfaceAnswer).Bounds.Upper.Duration != 55*time.Second || last.Surface(v1alpha1.SurfaceAnswer).Exclusion != "50s–55s":
		t.Errorf("lastRun Answer = %+v, want upper 55s shown as 50s–55s", last.Surface(v1alpha1.SurfaceAnswer))
	}

	f.createOwnedRun("breached")
	f.finishRun("breached", v1alpha1.PhaseSucceeded, v1alpha1.VerdictSLOBreached, completed.Add(time.Hour))
	cond := f.waitCondition(v1alpha1.ConditionSLOMet, metav1.ConditionFalse, string(v1alpha1.VerdictSLOBreached))
	if !containsEvery(cond.Message, "breached") {
		t.Errorf("SLOMet message %q should name the run", cond.Message)
	}
	f.waitEvent(string(v1alpha1.VerdictSLOBreached))

	f.createOwnedRun("recovered")
	f.finishRun("recovered", v1alpha1.PhaseSucceeded, v1alpha1.VerdictSLOMet, completed.Add(2*time.Hour))
	f.waitCondition(v1alpha1.ConditionSLOMet, metav1.ConditionTrue, string(v1alpha1.VerdictSLOMet))
	f.waitEvent(v1alpha1.ReasonRecovered)
}

// TestRevocationCanaryLongNameRuns: a canary name longer than a label value
// still gets runs with names of at most 63 characters that it recognises as
// its own.
func TestRevocationCanaryLongNameRuns(t *testing.T) {
	long := "canary-" + strings.Repeat("x", 80)
	f := newCanaryFixture(t, allCanaryRefs, func(c *v1alpha1.RevocationCanary) { c.Name = long })
	f.waitNext(f.created.Add(time.Hour))
	f.at(time.Hour + time.Second)
	f.poke()
	name := f.scheduledName(time.Hour)
	if len(name) > schedule.MaxNameLength {
		t.Fatalf("run name %q is %d characters", name, len(name))
	}
	f.waitRuns(name)
	f.waitStatus("active run recognised", func(c *v1alpha1.RevocationCanary) error {
		if !slices.Equal(c.Status.Active, []v1alpha1.LocalObjectReference{{Name: name}}) {
			return fmt.Errorf("status.active is %v", c.Status.Active)
		}
		return nil
	})
	if got := f.getRun(name).Labels[v1alpha1.LabelCanary]; got != schedule.LabelValue(long) || len(got) > schedule.MaxNameLength {
		t.Errorf("run label %s = %q, want the %d-character label value %q", v1alpha1.LabelCanary, got, schedule.MaxNameLength, schedule.LabelValue(long))
	}
}

// containsEvery reports whether s contains every part.
func containsEvery(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
