package ragtarget

import (
	"context"
	"errors"
	"fmt"

	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/openfga"
)

// OpenFGAAuthz makes the service ask OpenFGA at query time which documents a
// principal may read, as SpiceDBAuthz does with SpiceDB: the system under
// test is then the index plus OpenFGA's real semantics, caches included.
type OpenFGAAuthz struct {
	// URL is the root of OpenFGA's HTTP API, http://host:port.
	URL string
	// Store is the ID of the store holding the tuples.
	Store string
	// Token is OpenFGA's preshared key; empty when it runs without
	// authentication.
	Token string
	// Consistency is minimize_latency (default; OpenFGA may answer from
	// its caches) or higher_consistency.
	Consistency openfga.Consistency
	// Filter is prefilter (default): ListObjects, and the readable set
	// filters retrieval; or postfilter: CandidateDepth unfiltered
	// candidates, each of their documents checked.
	Filter FilterMode
}

// withDefaults fills the zero consistency and filter on a copy, so the
// caller's settings are never written to.
func (a *OpenFGAAuthz) withDefaults() *OpenFGAAuthz {
	out := *a
	if out.Consistency == "" {
		out.Consistency = openfga.MinimizeLatency
	}
	if out.Filter == "" {
		out.Filter = FilterPrefilter
	}
	return &out
}

func (a *OpenFGAAuthz) validate() error {
	var errs []error
	if a.URL == "" || a.Store == "" {
		errs = append(errs, errors.New("OpenFGA authorization needs an API URL and a store ID"))
	}
	switch a.Consistency {
	case openfga.MinimizeLatency, openfga.HigherConsistency:
	default:
		errs = append(errs, fmt.Errorf("authz consistency %q is not one OpenFGA knows: minimize_latency, higher_consistency", a.Consistency))
	}
	switch a.Filter {
	case FilterPrefilter, FilterPostfilter:
	default:
		errs = append(errs, fmt.Errorf("authz filter %q is not one of prefilter, postfilter", a.Filter))
	}
	return errors.Join(errs...)
}

// newOpenFGAAuthorizer connects, writes the reference model into a store
// that has none (a store with a model must fit it), and returns the
// query-time authorizer. A wrong URL, store or token fails here, before
// the service takes a query.
func newOpenFGAAuthorizer(a *OpenFGAAuthz) (*openfga.Authorizer, error) {
	client, err := openfga.Dial(openfga.Config{APIURL: a.URL, StoreID: a.Store, Token: a.Token, Timeout: authzTimeout})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*authzTimeout)
	defer cancel()
	if err := client.EnsureModel(ctx); err != nil {
		if kind, _ := driver.KindOf(err); kind == driver.Unauthorized {
			return nil, fmt.Errorf("OpenFGA refused the token ($RAGTARGET_OPENFGA_TOKEN): %w", err)
		}
		return nil, fmt.Errorf("OpenFGA model: %w", err)
	}
	return openfga.NewAuthorizer(client, openfga.DefaultMapping, a.Consistency), nil
}
