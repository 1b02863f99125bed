package probe

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/safetext"
)

// redactedCarrier replaces a carrier ID that holds a canary secret: the ID
// is target-chosen, and a target may name a derived document after what it
// quotes.
const redactedCarrier = "(an ID holding the canary's secret)"

// maxCarrierChars bounds a kept carrier ID, below the API's 256.
const maxCarrierChars = 200

// keepSighting counts a control sighting of a sentinel and keeps it as
// evidence while fewer than v1alpha1.MaxSentinelSightings are kept. It
// returns the sighting, for metrics. The caller holds s.mu.
func (s *State) keepSighting(r result) v1alpha1.SentinelSighting {
	got := v1alpha1.SentinelSighting{Persona: r.control, Surface: r.surface,
		Time: metav1.MicroTime{Time: r.end}}
	for _, c := range r.carriers {
		if documentOf(c) == s.target.DocumentID {
			got.OwnDocument = true
		}
		if len(got.Carriers) < v1alpha1.MaxSightingCarriers {
			got.Carriers = append(got.Carriers, safeCarrier(c, s.target))
		}
	}
	s.sightingTotal++
	if len(s.sightings) < v1alpha1.MaxSentinelSightings {
		s.sightings = append(s.sightings, got)
	}
	return got
}

// safeCarrier is a carrier ID fit for status: control and format runes
// removed, bounded, and never holding the handle or a payload.
func safeCarrier(id string, t Target) string {
	for _, quotesSecret := range quoted(id, t.Handle, t.Payload, t.UpdatedPayload) {
		if quotesSecret {
			return redactedCarrier
		}
	}
	return safetext.Clean(id, maxCarrierChars)
}
