package probe

import (
	"context"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/measure"
)

// ProbeContent runs one probe of a content-freshness run after the update
// and reports what it showed of the old payload and of the new one. Each is
// measure.Error when the reply could not tell.
//
// Search hits carry IDs only, and the document ID does not change with its
// content, so the search surface is asked for each payload: a hit on the
// canary document for a payload means the index holds that version. These
// are the only probes that send a payload; hits carry no text, so no
// payload can come back by echo. The answer surface is asked by the handle
// as always and shows a version only by quoting its payload.
func ProbeContent(ctx context.Context, d driver.Driver, surface v1alpha1.Surface, persona driver.Token, t Target) (old, fresh measure.Outcome) {
	switch surface {
	case v1alpha1.SurfaceSearch:
		return searchFor(ctx, d, persona, t.Payload, t), searchFor(ctx, d, persona, t.UpdatedPayload, t)
	case v1alpha1.SurfaceAnswer:
		a, err := d.Answer(ctx, persona, t.Handle)
		if err != nil {
			return measure.Error, measure.Error
		}
		return AnswerContent(a, t)
	default:
		return measure.Error, measure.Error
	}
}

// searchFor asks for one version's payload. A hit shows that version by
// the canary's own document ID or, on a surface whose IDs are its own, by
// quoting that version's payload in its text — the payload asked for, not
// the planted one, or the new version is never seen there.
func searchFor(ctx context.Context, d driver.Driver, persona driver.Token, payload string, t Target) measure.Outcome {
	hits, err := d.Search(ctx, persona, payload, searchK)
	if err != nil {
		return measure.Error
	}
	version := t
	version.Payload = payload
	return outcome(SearchShows(hits, version))
}

// AnswerContent classifies an answer after a content update. Quoting a
// payload, however re-styled (see Normalize), shows that version. An answer
// that cites the canary document but quotes neither payload served some
// version of it without saying which: that is not an absence of either, so
// both are errors.
func AnswerContent(a driver.Answer, t Target) (old, fresh measure.Outcome) {
	q := quoted(a.Text, t.Payload, t.UpdatedPayload)
	hasOld, hasNew := q[0], q[1]
	if !hasOld && !hasNew && AnswerShows(a, Target{DocumentID: t.DocumentID}) {
		return measure.Error, measure.Error
	}
	return outcome(hasOld), outcome(hasNew)
}
