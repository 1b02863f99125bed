package report

import (
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// TestContentFreshnessRunIsJudgedByItsOwnSLO: a content-freshness run's
// surface carries the new content's bounds and its freshness (the later of
// new visible and old gone), is judged by the content-freshness SLO (here
// the deprecated visibilitySLO name, 1m) rather than the exclusion SLO (30s),
// and gets its own table in the report.
func TestContentFreshnessRunIsJudgedByItsOwnSLO(t *testing.T) {
	in := canaryFixture()
	run := in.Run
	run.Spec.Revocation = v1alpha1.Revocation{Method: v1alpha1.RevokeUpdateContent}
	// The answer surface's old content went by 45.2s; its new content was
	// there by 47.2s: fresh within the 1m SLO, though over the 30s exclusion SLO.
	run.Status.Surfaces[1].NewContent = &v1alpha1.ContentMeasurement{
		LastUnseenStart: atMicro(56 * time.Second), FirstSeenEnd: atMicro(57200 * time.Millisecond), Visible: true,
		Bounds: &v1alpha1.ExclusionBounds{Lower: dur(45650 * time.Millisecond), Upper: dur(47199900 * time.Microsecond)},
		Probes: v1alpha1.ProbeCounts{Positive: 2, Negative: 20},
	}
	ev := BuildCanary(in, reportTime)
	answer := ev.Canary.Surfaces[1]
	if answer.NewContent == nil || answer.NewContent.FreshnessUpper == nil {
		t.Fatalf("answer surface has no freshness: %+v", answer.NewContent)
	}
	if got, want := answer.NewContent.FreshnessLower.Duration(), 45650*time.Millisecond; got != want {
		t.Errorf("freshness lower %s, want the later of the two lowers %s", got, want)
	}
	if got, want := answer.NewContent.FreshnessUpper.Duration(), 47199900*time.Microsecond; got != want {
		t.Errorf("freshness upper %s, want the later of the two uppers %s", got, want)
	}
	if answer.SLO.Duration() != time.Minute || answer.AgainstSLO != WithinSLO {
		t.Errorf("judged %s against %s (%s), want WithinSLO against the 1m content-freshness SLO", answer.AgainstSLO, answer.SLO.Duration(), answer.SLOSource)
	}
	// The search surface never reported on its new content: nothing to
	// judge it by, and no freshness claimed.
	if ev.Canary.Surfaces[0].NewContent != nil {
		t.Errorf("search surface claims a new-content measurement it never had")
	}
	tables := mdTables(t, string(render(t, ev, FormatMarkdown)))
	rows, ok := tables["Content freshness per surface"]
	if !ok || len(rows) != 2 {
		t.Fatalf("content freshness table %v, want a header and the answer row", rows)
	}
	if rows[1][0] != "Answer" || !strings.HasPrefix(rows[1][5], "within SLO") {
		t.Errorf("content freshness row %v", rows[1])
	}
}
