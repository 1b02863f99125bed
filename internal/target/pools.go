package target

import (
	"crypto/sha256"
	"encoding/json"
	"sync"
	"time"

	"github.com/ragcanary/ragcanary/internal/driver/postgres"
)

// pgDrivers keeps one driver per (connection strings, spec, timeout), and
// remembers which one each corpus uses: when a corpus's configuration changes
// (a rotated password, a new reader), the pools of the one it replaces are
// closed after retireAfter, so changes never leak connections while calls
// already under way can finish.
type pgDrivers struct {
	mu       sync.Mutex
	m        map[[32]byte]*postgres.Driver
	byCorpus map[string][32]byte
}

var postgresDrivers = &pgDrivers{m: map[[32]byte]*postgres.Driver{}, byCorpus: map[string][32]byte{}}

// retireAfter is how long a replaced driver stays open: longer than any call
// (the corpus timeout is at most 5 minutes) and than most run stages, since
// a probe loop keeps the driver it started with for its whole stage; a loop
// outliving it gets probe errors (never absences) and ends Inconclusive.
const retireAfter = time.Hour

func (c *pgDrivers) get(corpus string, r Recipe, timeout time.Duration, cfg postgres.Config) (*postgres.Driver, error) {
	spec, err := json.Marshal(r.Driver.Postgres)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	for _, part := range [][]byte{r.Credential, r.ReadCredential, spec, []byte(timeout.String())} {
		h.Write(part)
		h.Write([]byte{0})
	}
	var id [32]byte
	copy(id[:], h.Sum(nil))
	c.mu.Lock()
	defer c.mu.Unlock()
	drv, ok := c.m[id]
	if !ok {
		if drv, err = postgres.New(cfg); err != nil {
			return nil, Stall(ReasonInvalidURL, "spec.driver.postgres: the connection settings are not usable")
		}
		c.m[id] = drv
	}
	old, had := c.byCorpus[corpus]
	c.byCorpus[corpus] = id
	if had && old != id {
		c.retire(old)
	}
	return drv, nil
}

// forget retires the driver of a deleted corpus.
func (c *pgDrivers) forget(corpus string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id, ok := c.byCorpus[corpus]
	if !ok {
		return
	}
	delete(c.byCorpus, corpus)
	c.retire(id)
}

// retire closes a driver no corpus uses any more, after retireAfter. A
// driver another corpus still uses (same configuration) stays.
func (c *pgDrivers) retire(id [32]byte) {
	for _, used := range c.byCorpus {
		if used == id {
			return
		}
	}
	drv := c.m[id]
	delete(c.m, id)
	time.AfterFunc(retireAfter, drv.Close)
}
