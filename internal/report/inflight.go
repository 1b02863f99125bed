package report

import (
	"fmt"
	"strconv"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/measure"
)

// InFlightEvidence is what answers already streaming when access was
// revoked delivered after the request (the InFlight surface).
type InFlightEvidence struct {
	// Delivery is null when not established.
	Delivery                *Seconds `json:"postRevocationDeliverySeconds"`
	CanaryBytesAfterRequest int64    `json:"canaryBytesAfterRequest"`
	// SLO is what the run was judged by (0: any canary content after the
	// request breaches); null when the run was not judged.
	SLO       *Seconds `json:"sloSeconds"`
	SLOSource string   `json:"sloSource"`
	// AgainstSLO is WithinSLO, CertainBreach or NotEstablished.
	AgainstSLO string           `json:"againstSLO"`
	Streams    []StreamEvidence `json:"streams"`
}

// StreamEvidence is one stream read across the revocation, with the
// arrival of its chunks around the request.
type StreamEvidence struct {
	Outcome                  string       `json:"outcome"`
	EndReason                string       `json:"endReason"`
	Message                  string       `json:"message"`
	Opened                   *time.Time   `json:"opened"`
	Ended                    *time.Time   `json:"ended"`
	LastCanaryChunk          *time.Time   `json:"lastCanaryChunk"`
	Chunks                   int32        `json:"chunks"`
	CanaryChunks             int32        `json:"canaryChunks"`
	CanaryChunksAfterRequest int32        `json:"canaryChunksAfterRequest"`
	CanaryBytesAfterRequest  int64        `json:"canaryBytesAfterRequest"`
	Delivery                 *Seconds     `json:"postRevocationDeliverySeconds"`
	Timeline                 []ChunkEvent `json:"timeline"`
	TimelineTruncated        bool         `json:"timelineTruncated"`
}

// ChunkEvent is one content chunk's arrival, offset from the revocation
// request (negative: before it).
type ChunkEvent struct {
	Offset Seconds `json:"offsetSeconds"`
	Bytes  int32   `json:"bytes"`
	Canary bool    `json:"canary"`
}

// inFlightEvidence is nil for a run that read no streams.
func inFlightEvidence(m *v1alpha1.InFlightMeasurement) *InFlightEvidence {
	if m == nil {
		return nil
	}
	ev := &InFlightEvidence{Delivery: secondsOf(m.PostRevocationDelivery), CanaryBytesAfterRequest: m.CanaryBytesAfterRequest,
		SLO: secondsOf(m.SLO), SLOSource: m.SLOSource, AgainstSLO: NotEstablished, Streams: []StreamEvidence{}}
	if m.PostRevocationDelivery != nil && m.SLO != nil {
		ev.AgainstSLO = WithinSLO
		if measure.DeliveryBreached(m.PostRevocationDelivery, m.CanaryBytesAfterRequest, m.SLO.Duration) {
			ev.AgainstSLO = CertainBreach
		}
	}
	for _, s := range m.Streams {
		se := StreamEvidence{Outcome: string(s.Outcome), EndReason: s.EndReason, Message: s.Message,
			Opened: microTimeOf(s.OpenedTime), Ended: microTimeOf(s.EndTime), LastCanaryChunk: microTimeOf(s.LastCanaryChunkTime),
			Chunks: s.Chunks, CanaryChunks: s.CanaryChunks, CanaryChunksAfterRequest: s.CanaryChunksAfterRequest,
			CanaryBytesAfterRequest: s.CanaryBytesAfterRequest, Delivery: secondsOf(s.PostRevocationDelivery),
			Timeline: []ChunkEvent{}, TimelineTruncated: s.TimelineTruncated}
		for _, c := range s.Timeline {
			se.Timeline = append(se.Timeline, ChunkEvent{Offset: Seconds(time.Duration(c.OffsetMillis) * time.Millisecond), Bytes: c.Bytes, Canary: c.Canary})
		}
		ev.Streams = append(ev.Streams, se)
	}
	return ev
}

// inFlightSection lays out the streams; ok is false for a run without them.
func inFlightSection(ev *InFlightEvidence) (section, bool) {
	if ev == nil {
		return section{}, false
	}
	s := section{ID: "inflight", Title: "Answers in flight", Blocks: []block{
		para("Streams opened as the persona before the revocation request and read to their end. Post-revocation delivery is the time from the request to the last chunk that carried the canary's payload: content already delivered cannot be recalled. A stream that failed is an error, never a cut."),
		facts(fact{"Post-revocation delivery", humanSeconds(ev.Delivery)},
			fact{"Canary bytes after the request", strconv.FormatInt(ev.CanaryBytesAfterRequest, 10)},
			fact{"SLO", humanSeconds(ev.SLO)}, fact{"SLO from", orNone(ev.SLOSource)},
			fact{"Against the SLO", ev.AgainstSLO}),
		tableBlock(streamsTable(ev.Streams)),
	}}
	for i, st := range ev.Streams {
		s.Blocks = append(s.Blocks, tableBlock(chunksTable(i, st)))
	}
	return s, true
}

func streamsTable(ss []StreamEvidence) table {
	t := table{ID: "inflight-streams", Caption: "Streams by outcome",
		Header: []string{"Stream", "Outcome", "Declared end", "Chunks", "Canary chunks", "After the request", "Bytes after", "Delivery", "Note"}}
	for i, s := range ss {
		t.Rows = append(t.Rows, []string{strconv.Itoa(i + 1), s.Outcome, orNone(s.EndReason), strconv.Itoa(int(s.Chunks)),
			strconv.Itoa(int(s.CanaryChunks)), strconv.Itoa(int(s.CanaryChunksAfterRequest)), strconv.FormatInt(s.CanaryBytesAfterRequest, 10),
			humanSeconds(s.Delivery), orNone(s.Message)})
	}
	return t
}

// chunksTable is one stream's chunk timeline around the request.
func chunksTable(i int, s StreamEvidence) table {
	caption := fmt.Sprintf("Stream %d: chunks around the revocation request", i+1)
	if s.TimelineTruncated {
		caption += " (more chunks arrived than are shown)"
	}
	t := table{ID: fmt.Sprintf("inflight-chunks-%d", i+1), Caption: caption, Header: []string{"Since request", "Bytes", "Canary content"}}
	for _, c := range s.Timeline {
		canary := "no"
		if c.Canary {
			canary = "yes"
		}
		t.Rows = append(t.Rows, []string{signedOffset(c.Offset), strconv.Itoa(int(c.Bytes)), canary})
	}
	return t
}

// signedOffset writes an offset with its sign, to the millisecond.
func signedOffset(s Seconds) string {
	d := time.Duration(s)
	if d < 0 {
		return "−" + (-d).String()
	}
	return "+" + d.String()
}
