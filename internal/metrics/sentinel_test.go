package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestInitSentinelAndForget: a sentinel canary gets a sightings series per
// control persona and surface at zero and no verdict series before its
// first run; Forget removes the sightings with the rest.
func TestInitSentinelAndForget(t *testing.T) {
	resetAll(t)
	s := Run{Namespace: "ns-s", Canary: "sentinel", Corpus: "kb"}
	InitSentinel(s, []string{"mallory", "eve"}, "Search", "Answer")
	if n := testutil.CollectAndCount(SentinelSightingsTotal); n != 4 {
		t.Errorf("sighting series = %d, want 4 (2 personas × 2 surfaces)", n)
	}
	if n := testutil.CollectAndCount(RunsTotal); n != 0 {
		t.Errorf("%d verdict series before the sentinel's first run, want none", n)
	}
	RecordCompletion(s, Completion{Verdict: "Isolated"})
	if got := testutil.ToFloat64(RunsTotal.WithLabelValues("ns-s", "sentinel", "kb", "Isolated")); got != 1 {
		t.Errorf("Isolated runs = %v, want 1", got)
	}

	AddSentinelSighting(s, "mallory", "Answer")
	labels := prometheus.Labels{LabelNamespace: "ns-s", LabelCanary: "sentinel", LabelCorpus: "kb", LabelPersona: "mallory", LabelSurface: "Answer"}
	if v := testutil.ToFloat64(SentinelSightingsTotal.With(labels)); v != 1 {
		t.Errorf("sightings = %v, want 1", v)
	}
	Forget("ns-s", "sentinel")
	if n := testutil.CollectAndCount(SentinelSightingsTotal); n != 0 {
		t.Errorf("%d sighting series left after Forget", n)
	}
	if n := testutil.CollectAndCount(RunsTotal); n != 0 {
		t.Errorf("%d verdict series left after Forget", n)
	}
}
