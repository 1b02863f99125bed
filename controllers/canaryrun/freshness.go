package canaryrun

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/format"
	"github.com/ragcanary/ragcanary/internal/measure"
	"github.com/ragcanary/ragcanary/internal/target"
)

// Content-freshness canaries (revocation method UpdateContent): instead of
// taking access away, the revocation step replaces the canary document's
// body with a second payload, drawn at planting and kept in the run's
// Secret like the first. The persona keeps its grant; exclusion probes then
// measure when the old payload is gone and when the new one is visible
// (measure.RecordContent).

// isContentRun reports whether the run is a content-freshness canary.
func isContentRun(run *v1alpha1.CanaryRun) bool {
	return revocationMethod(run) == v1alpha1.RevokeUpdateContent
}

// revokeBy sends the run's revocation by its strategy. UpdateContent's
// is the replaced document, which needs the run's second payload, read
// only when that strategy asks for it.
func (r *CanaryRunReconciler) revokeBy(ctx context.Context, d driver.Driver, run *v1alpha1.CanaryRun, persona target.Persona) error {
	s, err := strategyOf(run)
	if err != nil {
		return driver.NewError(driver.Permanent, "Revoke", 0, "unknown revocation method", err)
	}
	subject := persona.Object.Spec.Subject
	c := canaryOf(run, subject, revokerOf(persona.Revoker))
	c.Updated = func() (driver.Document, error) {
		token, problem, err := r.readToken(ctx, run)
		if err != nil {
			return driver.Document{}, err
		}
		if problem != "" {
			// The Secret was written with the updated payload at planting;
			// without it the update cannot be sent. Retried until the deadline.
			return driver.Document{}, fmt.Errorf("cannot replace the canary's content: %s", problem)
		}
		return updatedDocument(run, token, subject), nil
	}
	return s.Revoke(ctx, d, c)
}

// updatedDocument is the canary document with its payload replaced. The
// handle stays, so probes keep finding the document; the principals are
// the persona's grant, so replacing the document (CreateDocument replaces
// it with the access list sent) leaves access exactly as shared.
func updatedDocument(run *v1alpha1.CanaryRun, t CanaryToken, subject string) driver.Document {
	return driver.Document{
		ID:         run.Status.DocumentID,
		Title:      "ragcanary revocation canary",
		Body:       canaryBody(t.Handle, t.Updated),
		Principals: []string{subject},
	}
}

// runSLO is the objective each of the run's surfaces is judged by: the
// content-freshness SLO for a content-freshness run, else the exclusion SLO.
func runSLO(run *v1alpha1.CanaryRun, corpus *v1alpha1.Corpus) func(v1alpha1.Surface) time.Duration {
	return func(s v1alpha1.Surface) time.Duration {
		slo, _ := measure.JudgedSLO(&run.Spec.CanarySpec, corpus, s)
		return slo
	}
}

// finalizeSurfaces is the measurements as the verdict judges them: bounds
// of the old content (or the revoked token) and of the new content, and the
// SLO each surface is judged by (corpus may be nil: the defaults), kept so
// no reader recomputes it from a Corpus changed since.
func finalizeSurfaces(run *v1alpha1.CanaryRun, surfaces []v1alpha1.SurfaceMeasurement, rev measure.Revocation, corpus *v1alpha1.Corpus) []v1alpha1.SurfaceMeasurement {
	final := make([]v1alpha1.SurfaceMeasurement, 0, len(surfaces))
	for i := range surfaces {
		m := *surfaces[i].DeepCopy()
		measure.Finalize(&m, rev, exclusionTimeout(run))
		measure.FinalizeContent(&m, rev)
		slo, source := measure.JudgedSLO(&run.Spec.CanarySpec, corpus, m.Surface)
		m.SLO, m.SLOSource = &metav1.Duration{Duration: slo}, source
		final = append(final, m)
	}
	return final
}

// contentFreshnessText is the run's time until every surface served only
// the new content, rounded outwards ("?" when a surface established
// nothing); "" for a run without a content measurement.
func contentFreshnessText(st *v1alpha1.CanaryRunStatus) string {
	content := false
	var all []*v1alpha1.ExclusionBounds
	for i := range st.Surfaces {
		content = content || st.Surfaces[i].NewContent != nil
		all = append(all, measure.Freshness(&st.Surfaces[i]))
	}
	if !content {
		return ""
	}
	return format.Interval(measure.Later(all...))
}

// newContentSeen reports whether a content-freshness surface has shown the
// new content: its first sighting cannot be observed again, so status
// must hold it at once (persistNow).
func newContentSeen(m *v1alpha1.SurfaceMeasurement) bool {
	return m.NewContent != nil && m.NewContent.Visible
}
