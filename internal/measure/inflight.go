package measure

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// InFlightDelivery is the measurement of the streams in flight across a
// revocation: the longest post-revocation delivery and the bytes, over the
// streams that were in flight, or nil when no stream was, or when one
// failed without showing a breach (its delivery is unknown, and the
// longest may be it). A stream that failed after delivering canary content
// past the request still bounds the delivery from below, so a breach it
// shows stands.
func InFlightDelivery(streams []v1alpha1.InFlightStream) (delivery *metav1.Duration, bytes int64, failed bool) {
	var longest time.Duration
	inFlight := 0
	for _, s := range streams {
		bytes += s.CanaryBytesAfterRequest
		if s.PostRevocationDelivery != nil {
			longest = max(longest, s.PostRevocationDelivery.Duration)
		}
		switch s.Outcome {
		case v1alpha1.InFlightError:
			failed = true
		case v1alpha1.InFlightEndedBeforeRevocation:
		default:
			inFlight++
		}
	}
	if inFlight == 0 && longest == 0 {
		return nil, bytes, failed
	}
	return &metav1.Duration{Duration: longest}, bytes, failed
}

// InFlightVerdict judges the in-flight measurement against its SLO: a
// delivery past the SLO (with an SLO of 0, any canary content after the
// request) is a breach, whatever else failed; otherwise a failed stream,
// or no stream in flight, leaves it Inconclusive; else SLOMet.
func InFlightVerdict(m *v1alpha1.InFlightMeasurement, slo time.Duration) (v v1alpha1.Verdict, msg string) {
	delivery, bytes, failed := InFlightDelivery(m.Streams)
	if DeliveryBreached(delivery, bytes, slo) {
		return v1alpha1.VerdictSLOBreached, fmt.Sprintf(
			"a stream in flight delivered canary content %s after the revocation request (%d bytes), beyond the post-revocation delivery SLO of %s",
			delivery.Duration.Round(time.Millisecond), bytes, slo)
	}
	if failed {
		return v1alpha1.VerdictInconclusive, "an in-flight stream failed, so what it delivered after the revocation request is unknown"
	}
	if delivery == nil {
		return v1alpha1.VerdictInconclusive, "every in-flight stream ended before the revocation request, so no delivery after it was observed"
	}
	return v1alpha1.VerdictSLOMet, ""
}

// DeliveryBreached: an established delivery past the SLO, or with an SLO
// of 0 any canary content after the request. The verdict, the plugin and
// RagcanaryInFlightDeliveryBreached apply this one rule.
func DeliveryBreached(delivery *metav1.Duration, bytes int64, slo time.Duration) bool {
	return delivery != nil && (delivery.Duration > slo || (slo == 0 && bytes > 0))
}

// HumanDelivery is a delivery for people: "none" when no canary content
// arrived after the request, "?" when not established.
func HumanDelivery(d *metav1.Duration, bytes int64) string {
	switch {
	case d == nil:
		return "?"
	case d.Duration == 0 && bytes == 0:
		return "none"
	}
	return roundUp(d.Duration).String()
}

// roundUp rounds a positive duration up to a tenth of a second (a
// millisecond below one second), never down: a delivery is never shown
// shorter than it was.
func roundUp(d time.Duration) time.Duration {
	unit := 100 * time.Millisecond
	if d < time.Second {
		unit = time.Millisecond
	}
	if r := d % unit; r != 0 {
		d += unit - r
	}
	return d
}
