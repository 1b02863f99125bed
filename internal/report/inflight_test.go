package report

import (
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// TestInFlightStreamsAreReported: a run that read a stream across its
// revocation gets a section with the delivery against its SLO, the stream's
// outcome and its chunk timeline around the request, signed offsets
// included; -o json keeps the exact figures, and a run without streams has
// neither the section nor the field.
func TestInFlightStreamsAreReported(t *testing.T) {
	in := canaryFixture()
	in.Run.Status.InFlight = &v1alpha1.InFlightMeasurement{
		PostRevocationDelivery: dur(2610 * time.Millisecond), CanaryBytesAfterRequest: 700,
		SLO: dur(0), SLOSource: "corpus freshness.postRevocationDeliverySLO", Delivery: "2.7s",
		Streams: []v1alpha1.InFlightStream{{
			Outcome: v1alpha1.InFlightCompleted, Chunks: 12, CanaryChunks: 3, CanaryChunksAfterRequest: 2,
			CanaryBytesAfterRequest: 700, PostRevocationDelivery: dur(2610 * time.Millisecond),
			OpenedTime: atMicro(9 * time.Second), EndTime: atMicro(13 * time.Second), LastCanaryChunkTime: atMicro(12610 * time.Millisecond),
			Timeline: []v1alpha1.InFlightChunk{{OffsetMillis: -150, Bytes: 30, Canary: true}, {OffsetMillis: 2610, Bytes: 40, Canary: true}},
		}},
	}
	ev := BuildCanary(in, reportTime)
	f := ev.Canary.InFlight
	if f == nil || f.AgainstSLO != CertainBreach || len(f.Streams) != 1 || f.Streams[0].Outcome != "Completed" {
		t.Fatalf("in-flight evidence %+v, want one Completed stream, a certain breach of the 0s SLO", f)
	}
	j := decodeJSON(t, ev)
	if got := path(t, j, "canaryRun", "inFlight", "postRevocationDeliverySeconds"); got != 2.61 {
		t.Errorf("json delivery %v, want 2.61", got)
	}
	if got := path(t, j, "canaryRun", "inFlight", "streams", 0, "timeline", 0, "offsetSeconds"); got != -0.15 {
		t.Errorf("json first chunk offset %v, want -0.15", got)
	}
	tables := mdTables(t, string(render(t, ev, FormatMarkdown)))
	rows, ok := tables["Stream 1: chunks around the revocation request"]
	if !ok || len(rows) != 3 {
		t.Fatalf("chunk table %v, want a header and two chunks", rows)
	}
	if rows[1][0] != "−150ms" || rows[2][0] != "+2.61s" || rows[2][2] != "yes" {
		t.Errorf("chunk rows %v", rows[1:])
	}
	if streams := tables["Streams by outcome"]; len(streams) != 2 || streams[1][1] != "Completed" || streams[1][6] != "700" {
		t.Errorf("streams table %v", streams)
	}

	in = canaryFixture()
	ev = BuildCanary(in, reportTime)
	if ev.Canary.InFlight != nil || strings.Contains(string(render(t, ev, FormatMarkdown)), "Answers in flight") {
		t.Error("a run without streams reports an in-flight section")
	}
}
