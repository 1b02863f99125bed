package canaryrun

import (
	"fmt"
	"strings"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/format"
)

// sentinelVerdict decides a sentinel's lifetime. Any sighting by a persona
// outside its access list is an IsolationViolation, whatever else happened.
// Without one, a control persona and surface that never got a valid reply
// tested nothing there, so the lifetime is Inconclusive; only a lifetime in
// which every control persona got valid replies on every surface is
// Isolated, with those counts as its evidence.
func sentinelVerdict(st *v1alpha1.SentinelStatus, violations int32, controls []v1alpha1.ControlProbeCounts, lifetime time.Duration) (v1alpha1.Verdict, string) {
	var total int32
	if st != nil {
		total = st.TotalSightings
	}
	if total > 0 || violations > 0 {
		n := max(total, violations)
		msg := fmt.Sprintf("%d probe(s) by personas outside the sentinel's access list saw its payload", n)
		if st != nil && len(st.Sightings) > 0 {
			msg += "; first: " + describeSighting(st.Sightings[0])
		}
		return v1alpha1.VerdictIsolationViolation, msg
	}
	if names := unansweredControls(controls); len(names) > 0 {
		return v1alpha1.VerdictInconclusive, fmt.Sprintf(
			"control persona(s) %s never got a valid reply while the sentinel was watched, so isolation was not tested there",
			strings.Join(names, ", "))
	}
	counts := make([]string, 0, len(controls))
	for _, c := range controls {
		counts = append(counts, fmt.Sprintf("%s on %s: %d valid replies, %d errors", c.Persona, c.Surface, c.Answered, c.Errors))
	}
	return v1alpha1.VerdictIsolated, fmt.Sprintf("no persona outside the sentinel's access list saw its payload in %s (%s)",
		format.HumanDuration(lifetime), strings.Join(counts, "; "))
}

// unansweredControls names each control persona and surface without a
// single valid reply.
func unansweredControls(cs []v1alpha1.ControlProbeCounts) []string {
	var out []string
	for _, c := range cs {
		if c.Answered == 0 {
			out = append(out, fmt.Sprintf("%s (%s)", c.Persona, c.Surface))
		}
	}
	return out
}
