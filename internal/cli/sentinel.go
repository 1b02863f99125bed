package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/format"
	"github.com/ragcanary/ragcanary/internal/safetext"
)

// SentinelView is a sentinel run's watch as the plugin shows it.
type SentinelView struct {
	// LifetimeLeftSeconds is how long the sentinel is still watched; nil
	// before watching began (the owner has not seen it yet).
	LifetimeLeftSeconds *float64 `json:"lifetimeLeftSeconds"`
	Sightings           int32    `json:"sightings"`
	// Last is the latest sighting status kept; nil when there is none.
	Last *SightingView `json:"lastSighting"`
}

// SightingView is one sighting: who saw the payload, where, through what.
type SightingView struct {
	Persona     string    `json:"persona"`
	Surface     string    `json:"surface"`
	Carriers    []string  `json:"carriers"`
	OwnDocument bool      `json:"ownDocument"`
	Time        time.Time `json:"time"`
}

// sentinelView is a sentinel run's view at now; nil for other runs.
func sentinelView(run *v1alpha1.CanaryRun, now time.Time) *SentinelView {
	if run.Spec.Sentinel == nil {
		return nil
	}
	v := &SentinelView{}
	st := run.Status.Sentinel
	if st == nil {
		return v
	}
	v.Sightings = st.TotalSightings
	if st.WatchUntil != nil {
		left := max(st.WatchUntil.Sub(now), 0).Seconds()
		v.LifetimeLeftSeconds = &left
	}
	if n := len(st.Sightings); n > 0 {
		s := st.Sightings[n-1]
		v.Last = &SightingView{Persona: s.Persona, Surface: string(s.Surface), Carriers: s.Carriers, OwnDocument: s.OwnDocument, Time: s.Time.UTC()}
	}
	return v
}

// sentinelText is "lifetime left 23h; 3 sightings, last mallory on Answer
// via digest-rc#0". Carriers are target-chosen: cleaned for the terminal.
func sentinelText(v *SentinelView) string {
	left := "not watching yet"
	if v.LifetimeLeftSeconds != nil {
		left = "lifetime left " + format.HumanDuration(seconds(*v.LifetimeLeftSeconds).Truncate(time.Second))
	}
	if v.Sightings == 0 {
		return left + "; no sightings"
	}
	out := fmt.Sprintf("%s; %d SIGHTINGS", left, v.Sightings)
	if l := v.Last; l != nil {
		via := "an answer citing nothing"
		switch {
		case l.OwnDocument:
			via = "the sentinel itself"
		case len(l.Carriers) > 0:
			via = safetext.Terminal(strings.Join(l.Carriers, ", "))
		}
		out += fmt.Sprintf(", last %s on %s via %s", safetext.Terminal(l.Persona), l.Surface, via)
	}
	return out
}

// writeSentinels lists the sentinels being watched; nothing when none is,
// so a fleet without sentinels reads as before.
func writeSentinels(w io.Writer, f *Fleet, all bool) error {
	var watched []RunInFlight
	for _, r := range f.InFlight {
		if r.Sentinel != nil {
			watched = append(watched, r)
		}
	}
	if len(watched) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "SENTINELS")
	t := newTable(w, all, "NAME", "CANARY", "PHASE", "WATCH")
	for _, r := range watched {
		t.row(r.Namespace, r.Name, dash(r.Canary), r.Phase, sentinelText(r.Sentinel))
	}
	return t.flush()
}

// stepsFor are the lifecycle steps the live view marks: a sentinel is
// watched where other canaries are revoked.
func stepsFor(p Progress) []step {
	if p.Sentinel == nil {
		return canarySteps
	}
	return sentinelSteps
}

var sentinelSteps = []step{
	{v1alpha1.PhasePending, "pending"},
	{v1alpha1.PhasePlanting, "plant"},
	{v1alpha1.PhaseSharing, "share"},
	{v1alpha1.PhaseAwaitingVisibility, "visible?"},
	{v1alpha1.PhaseWatching, "watch"},
	{v1alpha1.PhaseCleaningUp, "clean up"},
}

// goodVerdict is a verdict the plugin exits 0 for.
func goodVerdict(v v1alpha1.Verdict) bool {
	return v == v1alpha1.VerdictSLOMet || v == v1alpha1.VerdictIsolated
}
