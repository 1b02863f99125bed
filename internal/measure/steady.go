package measure

import (
	"time"

	"k8s.io/utils/clock"
)

// Steady wraps c so that the times it reports move with c's monotonic
// reading: Now is the wall time at construction plus the monotonic time
// elapsed since. A wall-clock step while the operator runs (NTP, a VM
// resume, an admin) then cannot move a persisted timestamp backwards and
// shrink a bound. Steps across a restart are caught by Classify's ordering
// check instead. Fake clocks in tests behave exactly as before.
func Steady(c clock.WithTicker) clock.WithTicker {
	return &steady{WithTicker: c, anchor: c.Now()}
}

type steady struct {
	clock.WithTicker
	anchor time.Time
}

func (s *steady) Now() time.Time { return s.anchor.Add(s.WithTicker.Since(s.anchor)) }

func (s *steady) Since(t time.Time) time.Duration { return s.Now().Sub(t) }
