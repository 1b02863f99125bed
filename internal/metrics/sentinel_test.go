package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestInitSentinelAndForget: a sentinel canary gets its four verdicts and a
// sightings series per control persona and surface at zero, never an
// ordinary canary's SLO verdicts; an ordinary canary never gets Isolated;
// Forget removes the sightings with the rest.
func TestInitSentinelAndForget(t *testing.T) {
	s := Run{Namespace: "ns-s", Canary: "sentinel", Corpus: "kb"}
	InitSentinel(s, []string{"mallory", "eve"}, "Search", "Answer")
	if n := testutil.CollectAndCount(SentinelSightingsTotal); n != 4 {
		t.Errorf("sighting series = %d, want 4 (2 personas × 2 surfaces)", n)
	}
	verdicts := func(r Run) map[string]bool {
		got := map[string]bool{}
		for _, v := range append(append([]string{}, verdicts...), sentinelVerdicts...) {
			l := r.labels()
			l[LabelVerdict] = v
			if RunsTotal.Delete(l) {
				got[v] = true
				RunsTotal.With(l).Add(0)
			}
		}
		return got
	}
	got := verdicts(s)
	if len(got) != 4 || !got["Isolated"] || !got["IsolationViolation"] || got["SLOMet"] {
		t.Errorf("sentinel verdict series %v, want Isolated, IsolationViolation, Inconclusive, SetupFailed", got)
	}
	plain := Run{Namespace: "ns-s", Canary: "plain", Corpus: "kb"}
	InitCanary(plain)
	if got := verdicts(plain); len(got) != 6 || got["Isolated"] {
		t.Errorf("ordinary canary verdict series %v, want the six without Isolated", got)
	}

	AddSentinelSighting(s, "mallory", "Answer")
	labels := prometheus.Labels{LabelNamespace: "ns-s", LabelCanary: "sentinel", LabelCorpus: "kb", LabelPersona: "mallory", LabelSurface: "Answer"}
	if v := testutil.ToFloat64(SentinelSightingsTotal.With(labels)); v != 1 {
		t.Errorf("sightings = %v, want 1", v)
	}
	Forget("ns-s", "sentinel")
	Forget("ns-s", "plain")
	if n := testutil.CollectAndCount(SentinelSightingsTotal); n != 0 {
		t.Errorf("%d sighting series left after Forget", n)
	}
}
