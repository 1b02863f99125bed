package pgtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ragcanary/ragcanary/internal/dev/testutil"
)

// TestStandbyAppliesWithDelay: a row committed on the primary reaches the
// delayed standby no sooner than the apply delay.
func TestStandbyAppliesWithDelay(t *testing.T) {
	p := Start(t)
	const delay = 2 * time.Second
	sb := p.Standby(t, delay)
	p.Exec(t, "create table t (x int)")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, sb.SuperDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	waitRows := func(want int) time.Duration {
		start := time.Now()
		testutil.Eventually(t, 20*time.Second, "standby rows", func() error {
			var n int
			if err := conn.QueryRow(ctx, "select count(*) from t").Scan(&n); err != nil {
				return err
			}
			if n != want {
				return fmt.Errorf("%d rows, want %d", n, want)
			}
			return nil
		})
		return time.Since(start)
	}
	waitRows(0)
	p.Exec(t, "insert into t values (1)")
	if got := waitRows(1); got < delay-100*time.Millisecond {
		t.Fatalf("the standby showed the row after %s, before its %s apply delay", got, delay)
	}
}
