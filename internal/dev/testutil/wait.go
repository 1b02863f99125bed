// Package testutil holds helpers shared by the project's tests.
package testutil

import (
	"testing"
	"time"
)

// PollInterval is how often Eventually re-checks its condition.
const PollInterval = 20 * time.Millisecond

// Eventually re-checks cond every PollInterval until it returns nil,
// failing t with the last error once timeout has passed. Tests wait for an
// observable state with it; none waits a fixed time and hopes.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	EventuallyEvery(t, timeout, PollInterval, what, cond)
}

// EventuallyEvery is Eventually re-checking every interval, for conditions
// too costly to ask PollInterval apart (a real cluster's API, a CLI run).
func EventuallyEvery(t testing.TB, timeout, interval time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %s: %v", what, timeout, err)
		}
		<-tick.C
	}
}

// EventuallyTrue is Eventually for a boolean condition.
func EventuallyTrue(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	Eventually(t, timeout, what, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	})
}

type notYet struct{}

func (notYet) Error() string { return "condition still false" }

var errNotYet error = notYet{}
