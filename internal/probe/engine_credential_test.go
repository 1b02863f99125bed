package probe

import (
	"context"
	"errors"
	"testing"

	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/ragcanary/ragcanary/internal/credential"
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

// refusedSource is a persona whose token endpoint refuses its client.
type refusedSource struct{}

func (refusedSource) Token(context.Context) (driver.Token, error) {
	return "", &credential.Error{Kind: credential.Refused, Status: 400, Code: "unauthorized_client"}
}

// refusingTarget answers the persona's probes 401 (or, when down, 503).
type refusingTarget struct {
	fakeTarget
	down bool
}

func (r *refusingTarget) Search(_ context.Context, tok driver.Token, _ string, _ int) ([]driver.Hit, error) {
	r.searches.Add(1)
	if r.down {
		return nil, driver.NewError(driver.Transient, "Search", 503, "server error", nil)
	}
	if tok == persona {
		return nil, driver.NewError(driver.Unauthorized, "Search", 401, "unauthenticated", nil)
	}
	return []driver.Hit{{ChunkID: "other#0", DocumentID: "other"}}, nil
}

// TestRefusalExcludesOnlyARevokedCredential: with RefusalExcludes (the
// exclusion stage of a credential revocation) the persona's credential
// refused by its token endpoint or by the surface confirms exclusion;
// without it the same refusals are errors, and an outage is an error
// either way.
func TestRefusalExcludesOnlyARevokedCredential(t *testing.T) {
	for _, tc := range []struct {
		name     string
		source   bool // the token endpoint refuses; else the surface does
		down     bool
		excludes bool
		want     bool // exclusion confirmed
	}{
		{"token endpoint refuses, revoked", true, false, true, true},
		{"token endpoint refuses, not revoked", true, false, false, false},
		{"surface refuses, revoked", false, false, true, true},
		{"surface refuses, not revoked", false, false, false, false},
		{"surface down, revoked", false, true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &refusingTarget{fakeTarget: fakeTarget{visible: map[driver.Token]bool{}}, down: tc.down}
			e := NewEngine(clock.RealClock{}, target.NewLimiters(clock.RealClock{}))
			key := types.NamespacedName{Namespace: "ns-refusal", Name: tc.name}
			defer e.Stop(key)
			p := newPlan(StageExclusion, f)
			p.Controls = nil
			p.RefusalExcludes = tc.excludes
			if tc.source {
				p.PersonaSource = refusedSource{}
			}
			st := e.Ensure(key, p)
			testutil.EventuallyTrue(t, waitTimeout, "three rounds", func() bool {
				pr := st.Snapshot().Surfaces[0].Probes
				return pr.Errors+pr.Negative >= 3
			})
			e.Stop(key)
			m := st.Snapshot().Surfaces[0]
			if m.Excluded != tc.want {
				t.Fatalf("excluded %v, want %v (%+v)", m.Excluded, tc.want, m.Probes)
			}
			if !tc.want && m.Probes.Negative != 0 {
				t.Fatalf("%d absences counted: a refusal or an outage read as absence", m.Probes.Negative)
			}
		})
	}
}
