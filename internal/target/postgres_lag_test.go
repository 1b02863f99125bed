package target

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"

	"github.com/ragcanary/ragcanary/internal/dev/pgtest"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/driver"
)

// lagServer is a primary with a writer role that may create schemas and a
// login-only reader role.
func lagServer(t *testing.T) *pgtest.Server {
	t.Helper()
	s := pgtest.Start(t)
	s.Exec(t, "create role writer login password 'writer-pw'", "grant create on database postgres to writer",
		"create role reader login password 'reader-pw'")
	return s
}

// lagCorpus resolves a corpus with manageSchema on writer and reader
// through the door.
func lagCorpus(t *testing.T, writer, reader *pgtest.Server) *Corpus {
	t.Helper()
	allow := []string{"postgres://127.0.0.1:" + strconv.Itoa(writer.Port), "postgres://127.0.0.1:" + strconv.Itoa(reader.Port)}
	d := pgDoor(t, allow, writer.DSN("writer", "writer-pw"), reader.DSN("reader", "reader-pw"))
	obj := pgCorpus(true)
	obj.Spec.Driver.Postgres.ManageSchema = true
	c, err := d.Corpus(context.Background(), obj)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Release)
	return c
}

// TestPostgresCheckWaitsForALaggingReader: with manageSchema, a standby
// reader that has not yet replayed the schema the check just created is
// Waiting (ReaderNotCaughtUp), never the user's StatementInvalid, and the
// check passes once the standby has replayed it. A search meanwhile is a
// transient error (a probe error), not a permanent refusal.
func TestPostgresCheckWaitsForALaggingReader(t *testing.T) {
	primary := lagServer(t)
	// The roles reach the standby with its base backup; the schema, made
	// by the first check, only after the apply delay.
	standby := primary.Standby(t, 5*time.Second)
	c := lagCorpus(t, primary, standby)
	check := c.CheckDriver
	ctx := context.Background()
	first := check(ctx)
	if p := AsProblem(first); p == nil || p.Intent != Waiting || p.Reason != v1alpha1.ReasonReaderNotCaughtUp {
		t.Fatalf("the first check: %v, want Waiting %s", first, v1alpha1.ReasonReaderNotCaughtUp)
	}
	if hits, err := c.Driver.Search(ctx, "alice", "q", 10); hits != nil || !driver.IsTransient(err) {
		t.Fatalf("a search before the standby replays: %d hits, %v; want a transient error", len(hits), err)
	}
	testutil.Eventually(t, 60*time.Second, "the check passes once the standby replays the schema", func() error {
		err := check(ctx)
		if p := AsProblem(err); p != nil && (p.Intent != Waiting || p.Reason != v1alpha1.ReasonReaderNotCaughtUp) {
			t.Fatalf("while the standby replays: %v (%s %s), want Waiting %s", err, p.Intent, p.Reason, v1alpha1.ReasonReaderNotCaughtUp)
		}
		return err
	})
}

// TestPostgresCheckRefusesAReaderWithoutTheSchema: a reader that is not a
// standby (here another primary) and lacks the schema will never catch up:
// its statements are the user's to fix.
func TestPostgresCheckRefusesAReaderWithoutTheSchema(t *testing.T) {
	err := lagCorpus(t, lagServer(t), lagServer(t)).CheckDriver(context.Background())
	if p := AsProblem(err); p == nil || p.Intent != Stalled || p.Reason != v1alpha1.ReasonStatementInvalid {
		t.Fatalf("got %v, want Stalled %s", err, v1alpha1.ReasonStatementInvalid)
	}
}
