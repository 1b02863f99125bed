package measure

import (
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// steppingClock has a wall clock that can step while elapsed time (Since)
// advances monotonically, like time.Now with its monotonic reading.
type steppingClock struct {
	*testingclock.FakeClock
	mono time.Duration
	base time.Time
	wall time.Time
}

func (c *steppingClock) Now() time.Time { return c.wall }

func (c *steppingClock) Since(t time.Time) time.Duration { return c.base.Add(c.mono).Sub(t) }

func (c *steppingClock) advance(d time.Duration) { c.mono += d; c.wall = c.wall.Add(d) }

func TestSteadyIgnoresWallClockSteps(t *testing.T) {
	c := &steppingClock{FakeClock: testingclock.NewFakeClock(t0), base: t0, wall: t0}
	s := Steady(c)
	start := s.Now()
	c.advance(2 * time.Second)
	c.wall = c.wall.Add(-time.Hour) // the wall clock steps back an hour
	c.advance(time.Second)
	if got := s.Now().Sub(start); got != 3*time.Second {
		t.Fatalf("elapsed %s on the steady clock, want 3s despite the wall step", got)
	}
	if got := c.Now().Sub(start); got >= 0 {
		t.Fatalf("test clock did not step: %s", got)
	}
}
