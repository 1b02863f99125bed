package target

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"

	authzed "github.com/authzed/authzed-go/v1"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ragcanary/ragcanary/internal/driver/postgres"
	"github.com/ragcanary/ragcanary/internal/spicedb"
)

// conns are the connections a Door owns: Postgres drivers (each with its
// pools) and authorization-engine clients, one per configuration, held by
// the resolved corpora that use them (see shared).
type conns struct {
	postgres *shared[*postgres.Driver]
	spicedb  *shared[*authzed.Client]
	// http keeps connections to each target alive across probes.
	http *http.Client
	// chats keep chat surfaces' conversations across resolutions.
	chats chatClients
	// tokens keep personas' OAuth2 tokens across resolutions, so a token is
	// fetched when it is due, not on every reconcile.
	tokens tokenSources
}

func newConns(policy AddressPolicy) *conns {
	return &conns{
		http:     &http.Client{Transport: newTransport(policy), CheckRedirect: refuseRedirect},
		postgres: newShared(func(d *postgres.Driver) { d.Close() }),
		// Close only releases the connection; an error leaves nothing to do.
		spicedb: newShared(func(c *authzed.Client) { _ = c.Close() }),
	}
}

// connsInit guards the creation of a Door's conns on first use, so a Door
// literal works; a Door copied after that shares its connections.
var connsInit sync.Mutex

func (d *Door) conns() *conns {
	connsInit.Lock()
	defer connsInit.Unlock()
	if d.shared == nil {
		d.shared = newConns(d.Addresses)
	}
	return d.shared
}

// postgresID names a Postgres driver configuration: both connection
// strings, the spec and the timeout.
func postgresID(r Recipe, timeout time.Duration) (configID, error) {
	spec, err := json.Marshal(r.Driver.Postgres)
	if err != nil {
		return configID{}, err
	}
	return idOf(r.Credential, r.ReadCredential, spec, []byte(timeout.String())), nil
}

// holds are what one resolution of a corpus holds; release lets all go.
type holds struct {
	mu       sync.Mutex
	releases []func()
	again    []func() func()
}

// add records a hold and how to take another of the same entry.
func (h *holds) add(release func(), again func() func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.releases = append(h.releases, release)
	h.again = append(h.again, again)
}

func (h *holds) release() {
	h.mu.Lock()
	rs := h.releases
	h.releases = nil
	h.mu.Unlock()
	for _, r := range rs {
		r()
	}
}

// another takes one more hold of every entry, released by the func it
// returns.
func (h *holds) another() func() {
	h.mu.Lock()
	defer h.mu.Unlock()
	rs := make([]func(), len(h.again))
	for i, a := range h.again {
		rs[i] = a()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			for _, r := range rs {
				r()
			}
		})
	}
}

// openPostgres returns the driver for a recipe, held by h. corpus is the
// corpus whose live configuration this is, "" for a run's kept copy.
func (d *Door) openPostgres(corpus string, r Recipe, timeout time.Duration, cfg postgres.Config, h *holds) (*postgres.Driver, error) {
	id, err := postgresID(r, timeout)
	if err != nil {
		return nil, err
	}
	pool := d.conns().postgres
	drv, release, err := pool.acquire(corpus, id, func() (*postgres.Driver, error) {
		for _, c := range []*pgxpool.Config{cfg.Writer, cfg.Reader} {
			if c != nil {
				c.ConnConfig.DialFunc = d.Addresses.DialContext
			}
		}
		drv, err := postgres.New(cfg)
		if err != nil {
			return nil, Stall(v1alpha1.ReasonInvalidURL, "spec.driver.postgres: the connection settings are not usable")
		}
		return drv, nil
	})
	if err != nil {
		return nil, err
	}
	h.add(release, func() func() { return pool.hold(id) })
	return drv, nil
}

// openSpiceDB returns the client for (endpoint, key, plaintext), held by h.
func (d *Door) openSpiceDB(corpus, endpoint string, key []byte, plaintext bool, h *holds) (*authzed.Client, error) {
	pt := []byte{0}
	if plaintext {
		pt[0] = 1
	}
	id := idOf([]byte(endpoint), key, pt)
	pool := d.conns().spicedb
	cl, release, err := pool.acquire(corpus, id, func() (*authzed.Client, error) {
		return spicedb.Dial(endpoint, string(key), plaintext, d.Addresses.DialContext)
	})
	if err != nil {
		return nil, err
	}
	h.add(release, func() func() { return pool.hold(id) })
	return cl, nil
}
