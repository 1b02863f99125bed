package target

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// MeasurableSurfaces are the surfaces canaries on a corpus can probe: what
// its driver serves (caps, as the target reported them; nil when not yet
// known) and what spec.surfaces declares (CorpusSurfaces.Serves), in the
// Surface enum's order. Search is always measurable: every driver searches.
func MeasurableSurfaces(declared *v1alpha1.CorpusSurfaces, caps *v1alpha1.CorpusCapabilities) []v1alpha1.Surface {
	can := append(driverSurfaces(caps), declared.Serves()...)
	var out []v1alpha1.Surface
	for _, s := range surfaceOrder {
		if slices.Contains(can, s) {
			out = append(out, s)
		}
	}
	return out
}

// surfaceOrder is the Surface enum's order, which status lists keep.
var surfaceOrder = []v1alpha1.Surface{v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer, v1alpha1.SurfaceConversation,
	v1alpha1.SurfaceStream, v1alpha1.SurfaceInFlight}

// driverSurfaces are what the driver serves: Search, and what its
// capabilities report.
func driverSurfaces(caps *v1alpha1.CorpusCapabilities) []v1alpha1.Surface {
	out := []v1alpha1.Surface{v1alpha1.SurfaceSearch}
	if caps != nil && caps.AnswerSurface {
		out = append(out, v1alpha1.SurfaceAnswer)
	}
	if caps != nil && caps.ConversationSurface {
		out = append(out, v1alpha1.SurfaceConversation)
	}
	return out
}

// SurfaceProblem says which of the wanted surfaces a corpus cannot measure
// and what would let it, or "" when it can measure them all.
func SurfaceProblem(corpus string, wanted []v1alpha1.Surface, declared *v1alpha1.CorpusSurfaces, caps *v1alpha1.CorpusCapabilities) string {
	can := MeasurableSurfaces(declared, caps)
	var missing []string
	for _, s := range wanted {
		if !slices.Contains(can, s) {
			missing = append(missing, fmt.Sprintf("%s (%s)", s, surfaceNeeds[s]))
		}
	}
	if len(missing) == 0 {
		return ""
	}
	names := make([]string, len(can))
	for i, s := range can {
		names[i] = string(s)
	}
	return fmt.Sprintf("Corpus %q cannot measure %s; it can measure %s: remove the others from probing.surfaces",
		corpus, strings.Join(missing, ", "), strings.Join(names, ", "))
}

// surfaceNeeds says what a corpus needs to measure each surface.
var surfaceNeeds = map[v1alpha1.Surface]string{
	v1alpha1.SurfaceAnswer:       "needs an answer endpoint or spec.surfaces.chat",
	v1alpha1.SurfaceConversation: "needs driver contract v1.1 conversations or spec.surfaces.chat",
	v1alpha1.SurfaceStream:       "needs spec.surfaces.chat with stream: true",
	v1alpha1.SurfaceInFlight:     "needs spec.surfaces.chat with stream: true",
}
