package probe

import (
	"context"
	"errors"
	"testing"

	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/measure"
	"github.com/ragcanary/ragcanary/internal/metrics"
	"github.com/ragcanary/ragcanary/internal/target"
)

// failingSource is a persona credential whose token endpoint refuses.
type failingSource struct{}

func (failingSource) Token(context.Context) (driver.Token, error) {
	return "", errors.New("token endpoint refused")
}

// A round whose persona has no credential probes nothing: each surface is
// an error in status, never an absence, and the probe metrics count the
// same errors status does.
func TestCredentialFailuresAreErrorsInStatusAndMetrics(t *testing.T) {
	f := &fakeTarget{visible: map[driver.Token]bool{}}
	e := NewEngine(clock.RealClock{}, target.NewLimiters(clock.RealClock{}))
	key := types.NamespacedName{Namespace: "ns-credential", Name: "run"}
	defer e.Stop(key)
	p := newPlan(StageExclusion, f)
	p.Controls = nil
	p.PersonaSource = failingSource{}
	p.Metrics = metrics.Run{Namespace: "ns-credential", Canary: "credential", Corpus: "corpus"}
	errorsCounted := func() float64 {
		return promtestutil.ToFloat64(metrics.ProbesTotal.WithLabelValues("ns-credential", "corpus", "Search", metrics.RolePersona, measure.Error.String()))
	}
	before := errorsCounted()
	st := e.Ensure(key, p)
	testutil.EventuallyTrue(t, waitTimeout, "errors", func() bool { return st.Snapshot().Surfaces[0].Probes.Errors >= 3 })
	e.Stop(key)
	m := st.Snapshot().Surfaces[0]
	if m.Probes.Negative != 0 || m.Excluded {
		t.Fatalf("a missing credential read as absence: %+v", m)
	}
	if n := f.searches.Load(); n != 0 {
		t.Fatalf("the target got %d probes without a credential", n)
	}
	// A round cut short by Stop is counted in metrics but not applied to
	// status (the engine's rule for every probe), so metrics may count more.
	if counted := errorsCounted() - before; counted < float64(m.Probes.Errors) {
		t.Fatalf("probe metrics count %v errors, status %d", counted, m.Probes.Errors)
	}
}
