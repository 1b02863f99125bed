package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ragcanary/ragcanary/internal/dev/pgtest"
	"github.com/ragcanary/ragcanary/internal/driver"
)

// countingConn counts the bytes the driver reads from the server.
type countingConn struct {
	net.Conn
	read *atomic.Int64
}

func (c countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.read.Add(int64(n))
	return n, err
}

// boundsDriver is a driver on s (as the superuser, one pool) with the
// given statements, counting what it reads into read.
func boundsDriver(t *testing.T, s *pgtest.Server, st Statements, timeout time.Duration, read *atomic.Int64) *Driver {
	t.Helper()
	cfg, err := ParseDSN(s.SuperDSN())
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.AfterNetConnect = func(_ context.Context, _ *pgconn.Config, conn net.Conn) (net.Conn, error) {
		return countingConn{Conn: conn, read: read}, nil
	}
	d, err := New(Config{Writer: cfg, Statements: st, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

// TestSearchReadsAtMostK: a search statement yielding two million rows,
// asked for ten, returns the first ten, and the driver reads a few
// kilobytes from the server, not the rows it did not ask for.
func TestSearchReadsAtMostK(t *testing.T) {
	s := pgtest.Start(t)
	var read atomic.Int64
	d := boundsDriver(t, s, Statements{Search: `select 'c' || g, 'd' || g, 1::float8
		from (select generate_series(1, 2000000) as g) s where $1::text is not null`}, 30*time.Second, &read)
	ctx := context.Background()
	if _, err := d.Search(ctx, "alice", "q", 1); err != nil {
		t.Fatalf("first search (connects and prepares): %v", err)
	}
	read.Store(0)
	hits, err := d.Search(ctx, "alice", "q", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 10 || hits[0].ChunkID != "c1" || hits[9].ChunkID != "c10" {
		t.Fatalf("hits %+v, want c1 to c10", hits)
	}
	if n := read.Load(); n > 64<<10 {
		t.Fatalf("the search read %d bytes from the server for 10 rows", n)
	}
}

// TestSearchRefusesMalformedRows: a row whose chunk or document ID is
// longer than maxIDBytes, or NULL, fails the search as a malformed reply;
// it is neither a hit nor an empty result.
func TestSearchRefusesMalformedRows(t *testing.T) {
	s := pgtest.Start(t)
	var read atomic.Int64
	for _, row := range []string{
		fmt.Sprintf("repeat('c', %d), 'd'", maxIDBytes+1),
		fmt.Sprintf("'c', repeat('d', %d)", maxIDBytes+1),
		"'c', null::text",
	} {
		d := boundsDriver(t, s, Statements{Search: "select " + row + ", 1::float8 where $1::text is not null"}, 10*time.Second, &read)
		hits, err := d.Search(context.Background(), "alice", "q", 10)
		if hits != nil || !driver.IsTransient(err) || !strings.Contains(err.Error(), "malformed row") {
			t.Fatalf("row (%s): hits %d, error %v; want a transient malformed-row error", row, len(hits), err)
		}
	}
	d := boundsDriver(t, s, Statements{Search: fmt.Sprintf("select repeat('c', %d), 'd', 1::float8 where $1::text is not null", maxIDBytes)}, 10*time.Second, &read)
	if hits, err := d.Search(context.Background(), "alice", "q", 10); err != nil || len(hits) != 1 {
		t.Fatalf("an ID of exactly %d bytes: hits %d, error %v; want one hit", maxIDBytes, len(hits), err)
	}
}

// TestServerMessagesAreBounded: a message from the server larger than
// maxServerMessage (here a session statement's row) fails the call, and the
// driver's next call works on a fresh connection.
func TestServerMessagesAreBounded(t *testing.T) {
	s := pgtest.Start(t)
	s.Exec(t, "create table big (on_off boolean)", "insert into big values (true)")
	var read atomic.Int64
	d := boundsDriver(t, s, Statements{
		Session: fmt.Sprintf(`select set_config('ragcanary.principal', $1, true),
			case when (select on_off from big) then repeat('x', %d) end`, 2*maxServerMessage),
		Search: "select 'c', 'd', 1::float8 where $1::text is not null",
	}, 10*time.Second, &read)
	hits, err := d.Search(context.Background(), "alice", "q", 10)
	if hits != nil || !driver.IsTransient(err) || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("a %d-byte row: hits %d, error %v; want a transient error", 2*maxServerMessage, len(hits), err)
	}
	if n := read.Load(); n > 2*maxServerMessage+64<<10 {
		t.Fatalf("the driver read %d bytes", n)
	}
	s.Exec(t, "update big set on_off = false")
	if hits, err := d.Search(context.Background(), "alice", "q", 10); err != nil || len(hits) != 1 {
		t.Fatalf("the next search: hits %d, error %v; want one hit", len(hits), err)
	}
}

// TestSearchPastTheTimeoutIsCancelledByTheServer: a statement that runs
// past the call's time is cancelled by the server (query_canceled, SQLSTATE
// 57014) before the client gives up, and the search is an error, never an
// empty result.
func TestSearchPastTheTimeoutIsCancelledByTheServer(t *testing.T) {
	s := pgtest.Start(t)
	var read atomic.Int64
	d := boundsDriver(t, s, Statements{Search: "select 'c'::text, 'd'::text, 1::float8 from pg_sleep(60) where $1::text is not null"},
		3*time.Second, &read)
	hits, err := d.Search(context.Background(), "alice", "q", 10)
	var pgErr *pgconn.PgError
	if hits != nil || !errors.As(err, &pgErr) || pgErr.Code != "57014" {
		t.Fatalf("hits %d, error %v; want the server's query_canceled (57014)", len(hits), err)
	}
	if !driver.IsTransient(err) {
		t.Fatalf("%v: want a transient error", err)
	}
}
