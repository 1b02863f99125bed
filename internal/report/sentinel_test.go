package report

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// sentinelFixture is canaryFixture made a sentinel run with two sightings
// kept of three.
func sentinelFixture() CanaryInput {
	in := canaryFixture()
	run := in.Run
	run.Spec.Sentinel = &v1alpha1.Sentinel{Lifetime: metav1.Duration{Duration: time.Hour}}
	run.Status.Verdict = v1alpha1.VerdictIsolationViolation
	run.Status.Sentinel = &v1alpha1.SentinelStatus{
		WatchStartTime: atMicro(10 * time.Second), WatchUntil: atMicro(time.Hour + 10*time.Second), TotalSightings: 3,
		Sightings: []v1alpha1.SentinelSighting{
			{Persona: "mallory", Surface: v1alpha1.SurfaceAnswer, Carriers: []string{"digest-hr#0", "faq#2"}, Time: *atMicro(40 * time.Second)},
			{Persona: "eve", Surface: v1alpha1.SurfaceSearch, Carriers: []string{"rc-1#0"}, OwnDocument: true, Time: *atMicro(70 * time.Second)},
		},
	}
	return in
}

func TestSentinelSightingsTable(t *testing.T) {
	ev := BuildCanary(sentinelFixture(), reportTime)
	md := string(render(t, ev, FormatMarkdown))
	rows := mdTables(t, md)["Sentinel sightings (the first kept in status)"]
	want := [][]string{
		{"When (UTC)", "Since watching", "Persona", "Surface", "Carriers", "Sentinel's own document"},
		{"2026-03-01 10:00:40.000 UTC", "+30s", "mallory", "Answer", "digest-hr#0, faq#2", "no"},
		{"2026-03-01 10:01:10.000 UTC", "+1m", "eve", "Search", "rc-1#0", "yes"},
	}
	if len(rows) != len(want) {
		t.Fatalf("sightings table %q, want %d rows", rows, len(want))
	}
	for i := range want {
		if strings.Join(rows[i], "¦") != strings.Join(want[i], "¦") {
			t.Errorf("row %d = %q, want %q", i, rows[i], want[i])
		}
	}
	if strings.Contains(md, "Time to exclusion per surface") {
		t.Error("a sentinel's report shows an exclusion it never measured")
	}
	if !strings.Contains(md, "1 later sightings are counted but not listed") {
		t.Error("the sightings status did not keep are not mentioned")
	}
	js := decodeJSON(t, ev)
	if got := path(t, js, "canaryRun", "sentinel", "sightings", 0, "carriers", 0); got != "digest-hr#0" {
		t.Errorf("JSON carrier %v", got)
	}
	if got := path(t, js, "canaryRun", "sentinel", "totalSightings"); got != float64(3) {
		t.Errorf("JSON totalSightings %v", got)
	}
	// An ordinary run has no sentinel section.
	if md := string(render(t, BuildCanary(canaryFixture(), reportTime), FormatMarkdown)); strings.Contains(md, "Sentinel") {
		t.Error("an ordinary run's report mentions a sentinel")
	}
}
