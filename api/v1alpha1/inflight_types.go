package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SurfaceInFlight is answers already streaming when access is revoked: the
// run opens streams as the persona shortly before the revocation request
// and reads them to their end. What a stream delivers after the request
// cannot be recalled; it is measured as post-revocation delivery, not as
// exclusion.
const SurfaceInFlight Surface = "InFlight"

// InFlightOutcome is how one in-flight stream ended, as the client saw it.
// +kubebuilder:validation:Enum=Cut;DeliveredThenCut;Reauthorized;Completed;EndedBeforeRevocation;Error
type InFlightOutcome string

const (
	// InFlightCut: the stream ended early with a declared access end (an
	// error event of type or code access_revoked or
	// authorization_unavailable), after the revocation request, without
	// delivering canary content after it.
	InFlightCut InFlightOutcome = "Cut"
	// InFlightDeliveredThenCut: the stream delivered canary content after
	// the revocation request, then ended with a declared access end. The
	// cut came, but late: what it delivered counts against the
	// post-revocation delivery SLO like a completed stream's.
	InFlightDeliveredThenCut InFlightOutcome = "DeliveredThenCut"
	// InFlightReauthorized: the stream ran to its end and went on delivering
	// content after the revocation request, none of it the canary's: the
	// canary's content stopped while the answer went on.
	InFlightReauthorized InFlightOutcome = "Reauthorized"
	// InFlightCompleted: the stream ran to its end delivering canary
	// content after the revocation request.
	InFlightCompleted InFlightOutcome = "Completed"
	// InFlightEndedBeforeRevocation: the stream delivered all its content
	// (or was cut) before the revocation request: nothing was in flight,
	// nothing is measured by it.
	InFlightEndedBeforeRevocation InFlightOutcome = "EndedBeforeRevocation"
	// InFlightError: the stream failed (a transport error, a status, an
	// undeclared error event, a malformed chunk, its timeout, an operator
	// restart): what it would have delivered is unknown. Never a cut.
	InFlightError InFlightOutcome = "Error"
)

// InFlightMeasurement is what the run's in-flight streams delivered after
// the revocation request.
type InFlightMeasurement struct {
	// streams, one entry each, in the order they were opened.
	// +optional
	// +kubebuilder:validation:MaxItems=4
	Streams []InFlightStream `json:"streams,omitempty"`

	// postRevocationDelivery is the longest, over the streams in flight, of
	// the time from the persisted revocation request to the last
	// canary-bearing chunk delivered; 0s when none arrived after the
	// request. Unset when not established (no stream was in flight, or one
	// failed without showing a breach).
	// +optional
	PostRevocationDelivery *metav1.Duration `json:"postRevocationDelivery,omitempty"`

	// canaryBytesAfterRequest is the content the streams delivered after the
	// revocation request up to their last canary-bearing chunk, summed.
	// +optional
	CanaryBytesAfterRequest int64 `json:"canaryBytesAfterRequest,omitempty"`

	// slo is the post-revocation delivery the run was judged by (0s: any
	// canary content after the request breaches); set with the verdict.
	// +optional
	SLO *metav1.Duration `json:"slo,omitempty"`
	// sloSource says where slo came from.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	SLOSource string `json:"sloSource,omitempty"`

	// delivery is postRevocationDelivery for people: "none", "1.2s", or
	// "?" when not established; a printer column.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Delivery string `json:"delivery,omitempty"`
}

// InFlightStream is one stream read across the revocation.
type InFlightStream struct {
	// outcome of the stream.
	// +required
	Outcome InFlightOutcome `json:"outcome"`

	// endReason is the declared end of a cut stream (access_revoked,
	// authorization_unavailable).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	EndReason string `json:"endReason,omitempty"`

	// message says what failed, for an Error; never target text.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Message string `json:"message,omitempty"`

	// openedTime is when the stream's request was sent.
	// +optional
	OpenedTime *metav1.MicroTime `json:"openedTime,omitempty"`
	// endTime is when the stream ended (its last event, or its failure).
	// +optional
	EndTime *metav1.MicroTime `json:"endTime,omitempty"`
	// lastCanaryChunkTime is when its last canary-bearing chunk arrived.
	// +optional
	LastCanaryChunkTime *metav1.MicroTime `json:"lastCanaryChunkTime,omitempty"`

	// chunks counts the content chunks delivered.
	// +optional
	Chunks int32 `json:"chunks,omitempty"`
	// canaryChunks counts the chunks that carried canary content (completed
	// an occurrence of its payload).
	// +optional
	CanaryChunks int32 `json:"canaryChunks,omitempty"`
	// canaryChunksAfterRequest counts the canary chunks that arrived after
	// the revocation request.
	// +optional
	CanaryChunksAfterRequest int32 `json:"canaryChunksAfterRequest,omitempty"`

	// canaryBytesAfterRequest is the content delivered after the request up
	// to the last canary-bearing chunk.
	// +optional
	CanaryBytesAfterRequest int64 `json:"canaryBytesAfterRequest,omitempty"`

	// postRevocationDelivery is the time from the revocation request to the
	// last canary-bearing chunk; 0s when none arrived after it. Unset for an
	// Error or a stream that ended before the request.
	// +optional
	PostRevocationDelivery *metav1.Duration `json:"postRevocationDelivery,omitempty"`

	// timeline is the content chunks around the revocation request as they
	// arrived: up to 16 before it and 48 after (the evidence report draws it).
	// +optional
	// +kubebuilder:validation:MaxItems=64
	Timeline []InFlightChunk `json:"timeline,omitempty"`
	// timelineTruncated says more chunks arrived than timeline shows.
	// +optional
	TimelineTruncated bool `json:"timelineTruncated,omitempty"`
}

// InFlightChunk is one content chunk's arrival.
type InFlightChunk struct {
	// offsetMillis is its arrival in milliseconds after the revocation
	// request (negative: before it), rounded up.
	// +required
	OffsetMillis int64 `json:"offsetMillis"`
	// bytes of content it carried.
	// +optional
	Bytes int32 `json:"bytes,omitempty"`
	// canary is true when it completed an occurrence of the canary's payload.
	// +optional
	Canary bool `json:"canary,omitempty"`
}

// InFlightSummary is a finished run's in-flight result, on the canary.
type InFlightSummary struct {
	// postRevocationDelivery as measured (see InFlightMeasurement).
	// +optional
	PostRevocationDelivery *metav1.Duration `json:"postRevocationDelivery,omitempty"`
	// canaryBytesAfterRequest as measured.
	// +optional
	CanaryBytesAfterRequest int64 `json:"canaryBytesAfterRequest,omitempty"`
	// delivery for people.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Delivery string `json:"delivery,omitempty"`
	// outcomes counts the streams by outcome, e.g. "Cut=1 Completed=0".
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Outcomes string `json:"outcomes,omitempty"`
	// slo judged by.
	// +optional
	SLO *metav1.Duration `json:"slo,omitempty"`
}
