package target

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/internal/dev/pgtest"
	"github.com/ragcanary/ragcanary/internal/driver"
)

// TestPostgresDriversAreHeldByTheirHolders, against a real server: a run's
// driver outlives any number of replacements of the corpus's configuration
// while the run holds it, and closes when the run lets go; alternating the
// live configuration and a run's kept copy builds the live driver once.
func TestPostgresDriversAreHeldByTheirHolders(t *testing.T) {
	srv := pgtest.Start(t)
	first := srv.SuperDSN()
	reader := secretsReader(t, pgSecret("writer", first), pgSecret("reader", first))
	d := &Door{Reader: reader, Allow: AllowAny()}
	corpus := pgCorpus(false)
	corpus.Spec.Driver.Postgres.ManageSchema = true

	run, err := d.Corpus(t.Context(), corpus)
	if err != nil {
		t.Fatal(err)
	}
	search := func(c *Corpus) error {
		_, err := c.Driver.Search(t.Context(), driver.Token("alice"), "handle", 10)
		return err
	}
	if err := search(run); err != nil {
		t.Fatalf("the first driver does not search: %v", err)
	}
	kept := run.Recipe()
	hold := run.Hold()
	run.Release()

	// The password is rotated (here: the same user under another DSN).
	rotated := pgSecret("writer", first+"&connect_timeout=7")
	if err := reader.(client.Client).Update(t.Context(), rotated); err != nil {
		t.Fatal(err)
	}
	for range 25 {
		live, err := d.Corpus(t.Context(), corpus)
		if err != nil {
			t.Fatal(err)
		}
		live.Release()
		fromKept, err := d.FromRecipe("ns", "pg", kept)
		if err != nil {
			t.Fatal(err)
		}
		fromKept.Release()
	}
	if _, ever := d.conns().postgres.counts(); ever != 2 {
		t.Errorf("25 alternations of the live configuration and the kept copy opened %d drivers, want 2", ever)
	}
	if err := search(run); err != nil {
		t.Fatalf("the held driver stopped working after the configuration was replaced: %v", err)
	}
	hold()
	if err := search(run); err == nil {
		t.Error("the replaced driver still searches after its last holder let go: it was not closed")
	}
	if open, _ := d.conns().postgres.counts(); open != 1 {
		t.Errorf("%d drivers open, want 1 (the current configuration's)", open)
	}
}
