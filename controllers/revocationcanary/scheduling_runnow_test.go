package revocationcanary

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/dev/testutil/kubetest"

	"github.com/ragcanary/ragcanary/controllers/shared"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/schedule"
)

// runNowCase is an hourly canary whose run-now annotation "second" was acted
// on (its run exists, finished) while the status read back still records
// the earlier token: the reconciler's own status write had not reached the
// cache. The hourly time is due.
type runNowCase struct {
	canary  *v1alpha1.RevocationCanary
	sched   *schedule.Schedule
	created time.Time
	runNow  *v1alpha1.CanaryRun
}

func newRunNowCase(t *testing.T) runNowCase {
	t.Helper()
	created := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	canary := &v1alpha1.RevocationCanary{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: "c", UID: types.UID("canary-uid"),
		CreationTimestamp: metav1.Time{Time: created},
		Annotations:       map[string]string{v1alpha1.AnnotationRunNow: "second"},
	}}
	canary.Status.LastRunNowToken = "first"
	sched, err := schedule.Parse(v1alpha1.Schedule{Cron: "@hourly"})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	runNow := &v1alpha1.CanaryRun{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: schedule.RunNowName("c", "second"),
		CreationTimestamp: metav1.Time{Time: created.Add(11 * time.Minute)},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "RevocationCanary",
			Name: "c", UID: canary.UID, Controller: &yes}},
	}}
	runNow.Status.Phase = v1alpha1.PhaseSucceeded
	return runNowCase{canary: canary, sched: &sched, created: created, runNow: runNow}
}

func (c runNowCase) parent() shared.ScheduledParent {
	return canaryParent(c.canary, c.sched)
}

func (c runNowCase) scheduler(cl client.Client) shared.RunScheduler {
	return shared.RunScheduler{Client: cl, Recorder: events.NewFakeRecorder(10), Now: c.created.Add(time.Hour + time.Second),
		Held: &sync.Map{}, Created: shared.NewCreatedRuns()}
}

// TestStaleRunNowTokenDoesNotSwallowTheDueSchedule: the runs show the
// token was acted on, so the due hourly run is created, not the run-now
// run again (which would record the hourly time as consumed by a run that
// started before it).
func TestStaleRunNowTokenDoesNotSwallowTheDueSchedule(t *testing.T) {
	c := newRunNowCase(t)
	var runs shared.ChildRuns
	runs.Add(describeCanaryRun(c.runNow))
	s := c.scheduler(nil)
	plan := schedule.Decide(s.Input(c.parent(), runs))
	if plan.Create == nil {
		t.Fatalf("nothing planned, want the hourly run (blocked %q)", plan.Blocked)
	}
	if want := schedule.RunName("c", c.created.Add(time.Hour)); plan.Create.Name != want {
		t.Fatalf("planned %s, want the hourly run %s", plan.Create.Name, want)
	}
	if plan.Create.RunNowToken != "" {
		t.Errorf("the hourly run consumes run-now token %q again", plan.Create.RunNowToken)
	}
}

// TestExistingRunNowRunDoesNotConsumeTheDueSchedule: when not even the
// runs listed show the run-now run, creating it meets AlreadyExists. That
// run was made before this plan, so the hourly time is not recorded as
// consumed, and the reconciler looks again within a second instead of an
// hour later; the next look creates the hourly run.
func TestExistingRunNowRunDoesNotConsumeTheDueSchedule(t *testing.T) {
	c := newRunNowCase(t)
	cl := fake.NewClientBuilder().WithScheme(kubetest.NewScheme()).WithObjects(c.runNow.DeepCopy()).Build()
	s := c.scheduler(cl)
	build := func(planned *schedule.Run) client.Object { return newCanaryRun(c.canary, planned) }

	res, err := s.Schedule(context.Background(), c.parent(), shared.ChildRuns{}, build)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.canary.Status.LastScheduleTime; got != nil {
		t.Errorf("lastScheduleTime = %v: an already existing run-now run consumed the hourly time", got.Time)
	}
	if c.canary.Status.LastRunNowToken != "second" {
		t.Errorf("lastRunNowToken = %q, want second (the run exists)", c.canary.Status.LastRunNowToken)
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > schedule.MinRequeue {
		t.Errorf("requeue after %v, want within %v: a due time may be waiting", res.RequeueAfter, schedule.MinRequeue)
	}

	if _, err := s.Schedule(context.Background(), c.parent(), shared.ChildRuns{}, build); err != nil {
		t.Fatal(err)
	}
	var list v1alpha1.CanaryRunList
	if err := cl.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	hourly := schedule.RunName("c", c.created.Add(time.Hour))
	var names []string
	for _, r := range list.Items {
		names = append(names, r.Name)
	}
	if len(names) != 2 || (names[0] != hourly && names[1] != hourly) {
		t.Fatalf("runs %v, want the run-now run and %s", names, hourly)
	}
}
