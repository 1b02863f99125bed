package controllers

import (
	"fmt"
	"testing"

	"github.com/ragcanary/ragcanary/internal/ragtarget"

	"github.com/ragcanary/ragcanary/internal/dev/testutil"
)

// TestSuiteRunRecordsItsDuration checks the wiring of
// ragcanary_suite_run_duration_seconds: one observation per finished run,
// under the suite's series, spanning status.startTime to completion.
func TestSuiteRunRecordsItsDuration(t *testing.T) {
	f := newSuiteFixture(t, ragtarget.Config{}, nil)
	run := f.runOnce("duration")
	var series int
	var count uint64
	var sum float64
	testutil.Eventually(t, eventuallyTimeout, "one duration observation", func() error {
		ms := gatherSeries(t, "ragcanary_suite_run_duration_seconds", f.ns)
		series = len(ms)
		if series != 1 {
			return fmt.Errorf("%d series", series)
		}
		count, sum = ms[0].GetHistogram().GetSampleCount(), ms[0].GetHistogram().GetSampleSum()
		if labelValue(ms[0], "suite") != f.suite.Name || labelValue(ms[0], "corpus") != "corpus" {
			return fmt.Errorf("labels %v", ms[0].GetLabel())
		}
		return nil
	})
	// status.startTime has whole seconds, so the observation may exceed
	// the stored span by up to one second, never fall short of it.
	span := run.Status.CompletionTime.Sub(run.Status.StartTime.Time).Seconds()
	if count != 1 || sum < span-1 || sum > span+1 || sum < 0 {
		t.Errorf("duration count=%d sum=%v, want 1 observation within a second of the stored span %v", count, sum, span)
	}
}
